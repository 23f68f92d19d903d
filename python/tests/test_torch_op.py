"""The torch ops' registration: their schemas, the Meta kernels (shapes from the Plan, nothing
launched: the runner below never opened its peers, so a real launch would be refused; for input
"attn" x is [S, 512] and out [S, 1536], so out's shape is the Plan's, not x's), and that
torch.jit.trace records them (the bits of traced launches: test_ffn_runner.py)."""
import pytest
import torch

import monogen.minimax_m3 as mm
import monogen.ops


def test_schemas():
    assert "int runner, Tensor x, Tensor res_in, Tensor(a!) out, Tensor(b!) res_out" in str(
        torch.ops.monogen.ffn_launch.default._schema)
    assert "int runner, Tensor x, Tensor res_in, Tensor[] weights" in str(torch.ops.monogen.ffn.default._schema)
    assert str(torch.ops.monogen.ffn.default._schema).endswith("-> (Tensor, Tensor)")


@pytest.mark.parametrize("input,width", [("attn", 512), ("part", 1536)])
def test_meta_shapes_without_a_launch(input, width):
    r = mm.FfnRunner("reduced", 2, 1, rows=[1, 4], name="meta-test", input=input)
    r.allocate()
    try:
        for s in (1, 4):
            args = {a["name"]: a for a in r.arguments(s)}
            meta = {n: torch.empty(a["shape"], dtype=getattr(torch, a["dtype"][6:]), device="meta")
                    for n, a in args.items() if a["role"] != "scalar"}
            w = monogen.ops.weight_list("meta-test", meta, s)
            x = meta[input]
            assert tuple(x.shape) == (s, width)  # attn: heads x head_dim / TP = 16 x 64 / 2
            out, res_out = torch.ops.monogen.ffn(mm.runner("meta-test").handle, x, meta["res_in"], w, None)
            assert out.device.type == "meta" and res_out.device.type == "meta"
            assert tuple(out.shape) == (s, 1536) and out.dtype == torch.bfloat16
            assert tuple(res_out.shape) == (s, 1536) == tuple(args["res_out"]["shape"]) and res_out.dtype == torch.bfloat16
            torch.ops.monogen.ffn_launch(r.handle, x, meta["res_in"], meta["out"], meta["res_out"], w)
    finally:
        r.close()


def test_trace_records_the_op():
    r = mm.FfnRunner("reduced", 2, 0, rows=[1])
    r.allocate()
    try:
        args = {a["name"]: a for a in r.arguments(1)}
        meta = [torch.empty(args[n]["shape"], dtype=getattr(torch, args[n]["dtype"][6:]), device="meta")
                for n in r.weight_names(1)]
        x = torch.empty(1, 512, dtype=torch.bfloat16, device="meta")  # the attention rows (the default input)
        res_in = torch.empty(1, 1536, dtype=torch.bfloat16, device="meta")
        g = torch.jit.trace(lambda p, q: torch.ops.monogen.ffn(r.handle, p, q, meta, None), (x, res_in),
                            check_trace=False).graph
        assert "monogen::ffn" in str(g)
    finally:
        r.close()


def test_layer_schemas_mark_the_caches_written():
    s = str(torch.ops.monogen.layer_launch.default._schema)
    assert "int runner, Tensor x, Tensor res, Tensor(a!) out, Tensor(b!) res_out, Tensor[] weights, " \
           "Tensor(c!) kv_cache" in s and "Tensor(d!)? index_cache" in s, s
    assert str(torch.ops.monogen.layer.default._schema).endswith("-> (Tensor, Tensor)")


def layer_meta(r, s):
    """Meta tensors of the layer's arguments (a cache of 3 blocks, tables 2 wide, 300 positions)."""
    out = {}
    for a in r.arguments(s):
        if a["role"] == "scalar":
            continue
        any_ = 300 if a["name"] == "cos_sin" else 2 if a["name"].endswith("block_tables") else 3
        shape = [d if d >= 0 else any_ for d in a["shape"]]
        out[a["name"]] = torch.empty(shape, dtype=getattr(torch, a["dtype"][6:]), device="meta")
    return out


def test_layer_meta_shapes_and_checks_without_a_launch():
    r = mm.LayerRunner("reduced", 2, 1, rows=[1, 4], name="layer-meta")
    r.allocate()
    try:
        for s in (1, 4):
            meta = layer_meta(r, s)
            w = monogen.ops.weight_list("layer-meta", meta, s)
            state = [meta[n] for n in mm.LAYER_CACHES + mm.LAYER_METADATA]
            out, res_out = torch.ops.monogen.layer(r.handle, meta["x"], meta["res"], w, *state)
            assert out.device.type == "meta" and tuple(out.shape) == (s, 1536) == tuple(res_out.shape)
            torch.ops.monogen.layer_launch(r.handle, meta["x"], meta["res"], meta["out"], meta["res_out"], w, *state)
            bad = list(state)
            bad[0] = torch.empty(2, 3, 256, 64, dtype=torch.uint8, device="meta")  # vLLM's unpacked [2, blocks, ...]
            with pytest.raises(monogen.InputError, match=r"argument 'kv_cache': expected torch.uint8 \[-1, 2, 256, 64\]"):
                torch.ops.monogen.layer(r.handle, meta["x"], meta["res"], w, *bad)
            bad = list(state)
            bad[4] = torch.empty(s, dtype=torch.int32, device="meta")  # positions as int32
            with pytest.raises(monogen.InputError, match=r"argument 'positions': expected torch.int64"):
                torch.ops.monogen.layer(r.handle, meta["x"], meta["res"], w, *bad)
        # the caches and metadata traced as inputs (a one-element constant, k_scale, would be printed by value)
        g = torch.jit.trace(lambda p, q, *st: torch.ops.monogen.layer(r.handle, p, q, w, *st),
                            (meta["x"], meta["res"], *state), check_trace=False).graph
        assert "monogen::layer" in str(g)
    finally:
        r.close()
