"""Every bad argument gets its message: a monogen.InputError (a ValueError) carrying the C++
message, naming the argument, what was expected and what was given. One process, a TP = 2
rank 0 runner: the tensor checks run before anything is bound, so allocate() is enough. Its
input is the default, the attention rows (reduced config: [S, 16 x 64 / 2] = [2, 512]); a second
runner takes the o_proj partial (input="part", [2, 1536])."""
import pytest
import torch

import monogen
import monogen.minimax_m3 as mm
import monogen.ops  # noqa: F401

S = 2


@pytest.fixture(scope="module")
def runner():
    r = mm.FfnRunner("reduced", 2, 0, rows=[S])
    r.allocate()
    yield r
    r.close()


@pytest.fixture(scope="module")
def good():
    return mm.rank_inputs(mm.make_launch_inputs("reduced", S, 2, 7), 0)


def launch(runner, t, **kw):
    names = runner.weight_names(S)
    out = kw.pop("out", torch.zeros_like(t["res_in"]))
    runner.launch(t[runner.input], t["res_in"], out, torch.zeros_like(t["res_in"]),
                  {n: t[n] for n in names if n in t}, slots=t.get("slots"), **kw)


def refused(runner, t, pattern, **kw):
    with pytest.raises(monogen.InputError, match=pattern) as e:
        launch(runner, t, **kw)
    assert str(e.value).startswith("input error at "), str(e.value)
    return str(e.value)


def test_wrong_dtype(runner, good):
    msg = refused(runner, {**good, "attn": good["attn"].float()},
                  r"argument 'attn': dtype torch\.float32: expected torch\.bfloat16 \[2, 512\] on cpu, contiguous; "
                  r"given torch\.float32 \[2, 512\] on cpu")
    assert "rank 0 of TP 2, S = 2" in msg


def test_wrong_dtype_of_a_weight(runner, good):
    refused(runner, {**good, "router_w": good["router_w"].double()},
            r"argument 'router_w': dtype torch\.float64: expected torch\.float32 \[16, 1536\]")


def test_non_contiguous(runner, good):
    attn = good["attn"].t().contiguous().t()  # the same values, column-major
    assert not attn.is_contiguous()
    refused(runner, {**good, "attn": attn},
            r"argument 'attn': strides \[1, 2\]: expected torch\.bfloat16 \[2, 512\] on cpu, contiguous; given "
            r"torch\.bfloat16 \[2, 512\] on cpu, strides \[1, 2\] \(not contiguous\)")


def test_wrong_s(runner, good):
    three = {k: torch.cat([v, v[:1]]) if k in ("attn", "res_in", "slots") else v for k, v in good.items()}
    refused(runner, three, r"argument 'attn'.*gives S = 3: this runner serves S in \{2\}")


def test_wrong_shape(runner, good):
    refused(runner, {**good, "res_in": good["res_in"][:, :768].contiguous()},
            r"argument 'res_in': shape \[2, 768\]: expected torch\.bfloat16 \[2, 1536\]")
    refused(runner, {**good, "w13": good["w13"][:, :16].contiguous()}, r"argument 'w13': shape \[17, 16, 768\]")


def test_wrong_device(runner, good):
    refused(runner, {**good, "res_in": torch.empty_like(good["res_in"], device="meta")},
            r"argument 'res_in': on device 'meta': expected torch\.bfloat16 \[2, 1536\] on cpu, contiguous; "
            r"given torch\.bfloat16 \[2, 1536\] on meta")


def test_missing_unknown_and_not_a_tensor(runner, good):
    refused(runner, {k: v for k, v in good.items() if k != "s2"}, r"argument 's2': missing: expected torch\.uint8 \[17, 1536, 16\]")
    with pytest.raises(monogen.InputError, match=r"unknown tensor argument 'gate_bias'"):
        runner.launch(good["attn"], good["res_in"], torch.zeros_like(good["res_in"]), torch.zeros_like(good["res_in"]),
                      {**{n: good[n] for n in runner.weight_names(S)}, "gate_bias": good["bias"]})
    refused(runner, {**good, "bias": good["bias"].tolist()}, r"argument 'bias': a list was given: expected a torch\.Tensor")


def test_bad_scalars(runner, good):
    refused(runner, good, r"scalar 'wait_ticks': a str was given: expected an int", wait_ticks="1s")
    refused(runner, good, r"unknown scalar 'timeout': the caller's scalars are wait_ticks, handshake", timeout=1)


def test_launch_before_open_peers(runner, good):
    refused(runner, good, r"bind\(\) before openPeers\(\)")


def test_wrong_rank_count(runner):
    h = runner.export_handle()
    with pytest.raises(monogen.InputError, match=r"1 handles; expected one per rank, TP = 2"):
        runner.open_peers([h])
    with pytest.raises(monogen.InputError, match=r"3 handles; expected one per rank, TP = 2"):
        runner.open_peers([h, h, h])
    with pytest.raises(monogen.InputError, match=r"rank 2 of TP 2"):
        mm.FfnRunner("reduced", 2, 2, rows=[S])


def test_bad_handle_bytes(runner):
    with pytest.raises(monogen.InputError, match=r"peer 1|rank 1"):
        runner.open_peers([runner.export_handle(), b"not a handle"])


def test_bad_config():
    with pytest.raises(monogen.InputError, match=r"config dict.*hidden_size"):
        mm.FfnRunner({"num_local_experts": 16}, 2, 0, rows=[S])
    with pytest.raises(monogen.InputError, match=r"a list was given: expected \"full\", \"reduced\""):
        mm.FfnRunner([1536], 2, 0, rows=[S])
    with pytest.raises(monogen.InputError, match=r"cannot open the config file"):
        mm.FfnRunner("/nonexistent/config.json", 2, 0, rows=[S])


def test_op_refusals(runner, good):
    with pytest.raises(monogen.InputError, match=r"no runner 999999"):
        torch.ops.monogen.ffn(999999, good["attn"], good["res_in"], [], good["slots"])
    with pytest.raises(monogen.InputError, match=rf"2 weight tensors; expected {len(runner.weight_names(S))}, in the order"):
        torch.ops.monogen.ffn(runner.handle, good["attn"], good["res_in"], [good["w13"], good["s13"]], good["slots"])


def test_devices():
    with pytest.raises(monogen.InputError, match=r"device 'cuda': expected \"sim\" \(CPU tensors\) or \"hip\""):
        mm.FfnRunner("reduced", 2, 0, rows=[S], device="cuda")
    # the HIP path is wired, but this machine has no GPU: the device refuses at construction
    with pytest.raises(monogen.RuntimeError, match=r"HIP rank device|libamdhip64"):
        mm.FfnRunner("reduced", 2, 0, rows=[S], device="hip")


def test_bad_input_names_what_was_given_and_what_is_allowed():
    allowed = r"expected \"attn\" \(the attention rows, o_proj in the launch; the default\) or \"part\" \(the o_proj partial\)"
    with pytest.raises(monogen.InputError, match=r"^input error at FfnRunner\.__init__, rank 0 of TP 2, input: "
                                                 r"'o_proj' was given: " + allowed):
        mm.FfnRunner("reduced", 2, 0, rows=[S], input="o_proj")
    with pytest.raises(monogen.InputError, match=r"input: a NoneType was given: " + allowed):
        mm.FfnRunner("reduced", 2, 0, rows=[S], input=None)
    with pytest.raises(monogen.InputError, match=r"^input error at make_launch_inputs, input: 'Attn' was given: " + allowed):
        mm.make_launch_inputs("reduced", S, 2, 7, input="Attn")
    with pytest.raises(monogen.InputError, match=r"^input error at rank_reference, input: a int was given: " + allowed):
        mm.rank_reference("reduced", S, 2, 0, {}, input=1)


@pytest.fixture(scope="module")
def part_runner():
    r = mm.FfnRunner("reduced", 2, 0, rows=[S], input="part")
    r.allocate()
    yield r
    r.close()


def test_each_input_takes_its_own_tensors(runner, part_runner, good):
    """The input declared picks the Plan: attn's x is [S, 512] and wo / wo_scale are weights;
    part's x is [S, hidden] and there is no wo. Each is refused the other's x and weights."""
    assert runner.input == "attn" and part_runner.input == "part"
    assert {"wo", "wo_scale"} <= set(runner.weight_names(S))
    assert not {"wo", "wo_scale", "attn", "part"} & set(part_runner.weight_names(S))
    # the attn runner given the o_proj partial as x (bound to 'attn': S = 2 fits, the width does not)
    refused(runner, {**good, "attn": good["part"]},
            r"argument 'attn': shape \[2, 1536\]: expected torch\.bfloat16 \[2, 512\] on cpu")
    refused(runner, {k: v for k, v in good.items() if k != "wo"},
            r"argument 'wo': missing: expected torch\.uint8 \[1536, 512\]")
    # the part runner given the attention rows as x, or o_proj's weight
    refused(part_runner, {**good, "part": good["attn"]},
            r"argument 'part': shape \[2, 512\]: expected torch\.bfloat16 \[2, 1536\] on cpu")
    with pytest.raises(monogen.InputError, match=r"unknown tensor argument 'wo': the Plan's tensors are part, "):
        part_runner.launch(good["part"], good["res_in"], torch.zeros_like(good["res_in"]), torch.zeros_like(good["res_in"]),
                           {**{n: good[n] for n in part_runner.weight_names(S)}, "wo": good["wo"]})


def test_inputs_and_reference_follow_the_declared_input(good):
    part = mm.rank_inputs(mm.make_launch_inputs("reduced", S, 2, 7, input="part"), 0)
    assert {"attn", "wo", "wo_scale"} <= set(good) and not {"attn", "wo", "wo_scale"} & set(part)
    assert tuple(good["attn"].shape) == (S, 512) and tuple(good["wo"].shape) == (1536, 512)
    assert tuple(good["wo_scale"].shape) == (1536,) and good["wo_scale"].dtype == torch.float32
    assert tuple(part["part"].shape) == (S, 1536)
    attn_inputs = mm.make_launch_inputs("reduced", S, 2, 7)
    with pytest.raises(monogen.InputError, match=r"^input error at rank_reference, input: \"part\" was declared, but "
                                                 r"'attn\.r0' is among the inputs: expected the inputs of "
                                                 r"make_launch_inputs\(\.\.\., input=\"part\"\)"):
        mm.rank_reference("reduced", S, 2, 0, attn_inputs, input="part")
    with pytest.raises(monogen.InputError, match=r"\"attn\" was declared, but 'attn\.r0' is not among the inputs"):
        mm.rank_reference("reduced", S, 2, 0, mm.make_launch_inputs("reduced", S, 2, 7, input="part"))


def test_x_none_and_other_non_tensors_are_input_errors(runner, good):
    for x in (None, 3, [1.0]):
        with pytest.raises(monogen.InputError, match=rf"argument 'attn': a {type(x).__name__} was given: expected a torch\.Tensor"):
            runner.launch(x, good["res_in"], torch.zeros_like(good["res_in"]), torch.zeros_like(good["res_in"]),
                          {n: good[n] for n in runner.weight_names(S)})


def test_s_is_checked_before_anything_of_its_size_is_made(runner, good):
    """A huge first dimension (a stride-0 view: no memory) is refused naming S and the warmed S,
    before the all-valid slots (torch.arange(S)) are made: no 8 TB allocation."""
    huge = good["attn"][:1].expand(10**12, 512)
    msg = refused(runner, {**{k: v for k, v in good.items() if k != "slots"}, "attn": huge},
                  r"argument 'attn': torch\.bfloat16 \[1000000000000, 512\] gives S = 1000000000000: this runner "
                  r"serves S in \{2\} \(warmed up\); pad the batch")
    assert "FfnRunner.pad" in msg


def test_an_s_not_warmed_names_it_and_the_warmed_ones_through_the_op(runner, good):
    three = torch.cat([good["attn"], good["attn"][:1]])
    with pytest.raises(monogen.InputError, match=r"gives S = 3: this runner serves S in \{2\}"):
        torch.ops.monogen.ffn(runner.handle, three, good["res_in"], [good["w13"]] * 9, None)
    with pytest.raises(monogen.InputError, match=r"gives S = 3: this runner serves S in \{2\}"):
        torch.ops.monogen.ffn_launch(runner.handle, three, good["res_in"], good["res_in"], good["res_in"], [], None)


def test_outputs_sharing_memory_are_refused(runner, good):
    names = runner.weight_names(S)
    w = {n: good[n] for n in names}
    out = torch.zeros_like(good["res_in"])
    with pytest.raises(monogen.InputError, match=r"argument '(res_)?out': shares memory with argument '(res_)?out'.*no in-place"):
        runner.launch(good["attn"], good["res_in"], out, out, w, slots=good["slots"])
    with pytest.raises(monogen.InputError, match=r"argument 'out': shares memory with argument 'res_in'"):
        runner.launch(good["attn"], good["res_in"], good["res_in"], torch.zeros_like(out), w, slots=good["slots"])
    both = torch.zeros((2,) + tuple(out.shape), dtype=out.dtype)  # two views of one buffer, apart: allowed
    refused(runner, {**good, "out": both[0]}, r"bind\(\) before openPeers\(\)")


def test_meta_kernels_check_devices_dtypes_and_shapes(runner, good):
    names = runner.weight_names(S)
    meta = {k: torch.empty_like(v, device="meta") for k, v in good.items()}
    # one real tensor among meta ones: refused, not a silent no-op
    with pytest.raises(monogen.InputError, match=r"'res_in' on cpu among meta tensors"):
        torch.ops.monogen.ffn(runner.handle, meta["attn"], good["res_in"], [meta[n] for n in names], meta["slots"])
    with pytest.raises(monogen.InputError, match=r"'out' on cpu among meta tensors"):
        torch.ops.monogen.ffn_launch(runner.handle, meta["attn"], meta["res_in"], torch.zeros_like(good["res_in"]),
                                     meta["res_in"].clone(), [meta[n] for n in names], meta["slots"])
    # all on meta, as the real op checks them
    with pytest.raises(monogen.InputError, match=r"argument 'res_in': expected torch\.bfloat16 \[2, 1536\]; given torch\.float32"):
        torch.ops.monogen.ffn(runner.handle, meta["attn"], meta["res_in"].float(), [meta[n] for n in names], meta["slots"])
    with pytest.raises(monogen.InputError, match=r"argument 'w13': expected torch\.uint8 \[17, \d+, 768\]; given torch\.uint8 \[17, 16, 768\]"):
        torch.ops.monogen.ffn(runner.handle, meta["attn"], meta["res_in"],
                              [meta[n][:, :16] if n == "w13" else meta[n] for n in names], meta["slots"])
    out, res_out = torch.ops.monogen.ffn(runner.handle, meta["attn"], meta["res_in"], [meta[n] for n in names], meta["slots"])
    assert out.device.type == "meta" and tuple(out.shape) == (2, 1536) and out.dtype == torch.bfloat16


def test_fp8_weights_as_torch_holds_them(runner, good):
    """wo (FP8 e4m3) as SGLang holds it: torch.float8_e4m3fn where this torch has it (1.13 has
    not), and the uint8 / int8 byte views everywhere."""
    for view in [torch.int8, torch.uint8] + [getattr(torch, n) for n in ("float8_e4m3fn",) if hasattr(torch, n)]:
        refused(runner, {**good, "wo": good["wo"].view(view)}, r"bind\(\) before openPeers\(\)")
    refused(runner, {**good, "wo": good["wo"].view(torch.int8).to(torch.int16)}, r"argument 'wo': dtype torch\.int16")


def test_pad_to_the_next_warmed_s(runner, good):
    x, res_in, slots = runner.pad(good["attn"][:1], good["res_in"][:1])
    assert tuple(x.shape) == (2, 512) and tuple(res_in.shape) == (2, 1536)
    assert slots.tolist() == [0, -1] and slots.dtype == torch.int64
    assert torch.equal(x[0], good["attn"][0]) and not x[1].any() and not res_in[1].any()
    assert runner.padded_rows(2) == 2
    with pytest.raises(monogen.InputError, match=r"3 rows: this runner serves S in \{2\}; expected 1 \.\. 2 rows"):
        runner.pad(torch.cat([good["attn"], good["attn"][:1]]), torch.cat([good["res_in"], good["res_in"][:1]]))
