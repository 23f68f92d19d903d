"""The torch ops' registration: their schemas, the Meta kernels (shapes from the Plan, nothing
launched: the runner below never opened its peers, so a real launch would be refused), and that
torch.jit.trace records them (the bits of traced launches: test_ffn_runner.py)."""
import torch

import monogen.minimax_m3 as mm
import monogen.ops


def test_schemas():
    assert "Tensor(a!) out, Tensor(b!) res_out" in str(torch.ops.monogen.ffn_launch.default._schema)
    assert str(torch.ops.monogen.ffn.default._schema).endswith("-> (Tensor, Tensor)")


def test_meta_shapes_without_a_launch():
    r = mm.FfnRunner("reduced", 2, 1, rows=[1, 4], name="meta-test")
    r.allocate()
    try:
        for s in (1, 4):
            args = {a["name"]: a for a in r.arguments(s)}
            meta = {n: torch.empty(a["shape"], dtype=getattr(torch, a["dtype"][6:]), device="meta")
                    for n, a in args.items() if a["role"] != "scalar"}
            w = monogen.ops.weight_list("meta-test", meta, s)
            out, res_out = torch.ops.monogen.ffn(mm.runner("meta-test").handle, meta["part"], meta["res_in"], w, None)
            assert out.device.type == "meta" and res_out.device.type == "meta"
            assert tuple(out.shape) == (s, 1536) and out.dtype == torch.bfloat16
            assert tuple(res_out.shape) == tuple(args["res_out"]["shape"]) and res_out.dtype == torch.bfloat16
            torch.ops.monogen.ffn_launch(r.handle, meta["part"], meta["res_in"], meta["out"], meta["res_out"], w)
    finally:
        r.close()


def test_trace_records_the_op():
    r = mm.FfnRunner("reduced", 2, 0, rows=[1])
    r.allocate()
    try:
        args = {a["name"]: a for a in r.arguments(1)}
        meta = [torch.empty(args[n]["shape"], dtype=getattr(torch, args[n]["dtype"][6:]), device="meta")
                for n in r.weight_names(1)]
        part = torch.empty(1, 1536, dtype=torch.bfloat16, device="meta")
        g = torch.jit.trace(lambda p, q: torch.ops.monogen.ffn(r.handle, p, q, meta, None), (part, part),
                            check_trace=False).graph
        assert "monogen::ffn" in str(g)
    finally:
        r.close()
