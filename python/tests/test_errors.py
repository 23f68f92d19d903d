"""Every bad argument gets its message: a monogen.InputError (a ValueError) carrying the C++
message, naming the argument, what was expected and what was given. One process, a TP = 2
rank 0 runner: the tensor checks run before anything is bound, so allocate() is enough."""
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
    out = kw.pop("out", torch.zeros_like(t["part"]))
    runner.launch(t["part"], t["res_in"], out, torch.zeros_like(t["res_in"]),
                  {n: t[n] for n in names if n in t}, slots=t.get("slots"), **kw)


def refused(runner, t, pattern, **kw):
    with pytest.raises(monogen.InputError, match=pattern) as e:
        launch(runner, t, **kw)
    assert str(e.value).startswith("input error at "), str(e.value)
    return str(e.value)


def test_wrong_dtype(runner, good):
    msg = refused(runner, {**good, "part": good["part"].float()},
                  r"argument 'part': dtype torch\.float32: expected torch\.bfloat16 \[2, 1536\] on cpu, contiguous; "
                  r"given torch\.float32 \[2, 1536\] on cpu")
    assert "rank 0 of TP 2, S = 2" in msg


def test_wrong_dtype_of_a_weight(runner, good):
    refused(runner, {**good, "router_w": good["router_w"].double()},
            r"argument 'router_w': dtype torch\.float64: expected torch\.float32 \[16, 1536\]")


def test_non_contiguous(runner, good):
    part = good["part"].t().contiguous().t()  # the same values, column-major
    assert not part.is_contiguous()
    refused(runner, {**good, "part": part},
            r"argument 'part': strides \[1, 2\]: expected torch\.bfloat16 \[2, 1536\] on cpu, contiguous; given "
            r"torch\.bfloat16 \[2, 1536\] on cpu, strides \[1, 2\] \(not contiguous\)")


def test_wrong_s(runner, good):
    three = {k: torch.cat([v, v[:1]]) if k in ("part", "res_in", "slots") else v for k, v in good.items()}
    refused(runner, three, r"argument 'part'.*gives S = 3: this runner serves S in \{2\}")


def test_wrong_shape(runner, good):
    refused(runner, {**good, "res_in": good["res_in"][:, :768].contiguous()},
            r"argument 'res_in': shape \[2, 768\]: expected torch\.bfloat16 \[2, 1536\]")
    refused(runner, {**good, "w13": good["w13"][:, :16].contiguous()}, r"argument 'w13': shape \[17, 16, 768\]")


def test_wrong_device(runner, good):
    refused(runner, {**good, "res_in": torch.empty_like(good["res_in"], device="meta")},
            r"argument 'res_in': on device 'meta': expected torch\.bfloat16 \[2, 1536\] on cpu, contiguous; "
            r"given torch\.bfloat16 \[2, 1536\] on meta")


def test_missing_unknown_and_not_a_tensor(runner, good):
    refused(runner, {k: v for k, v in good.items() if k != "s2"}, r"argument 's2': missing: expected torch\.uint8 \[17, 1536, 12\]")
    with pytest.raises(monogen.InputError, match=r"unknown tensor argument 'gate_bias'"):
        runner.launch(good["part"], good["res_in"], torch.zeros_like(good["part"]), torch.zeros_like(good["res_in"]),
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
        torch.ops.monogen.ffn(999999, good["part"], good["res_in"], [], good["slots"])
    with pytest.raises(monogen.InputError, match=rf"2 weight tensors; expected {len(runner.weight_names(S))}, in the order"):
        torch.ops.monogen.ffn(runner.handle, good["part"], good["res_in"], [good["w13"], good["s13"]], good["slots"])


def test_devices():
    with pytest.raises(monogen.InputError, match=r"device 'cuda': expected \"sim\" \(CPU tensors\) or \"hip\""):
        mm.FfnRunner("reduced", 2, 0, rows=[S], device="cuda")
    # the HIP path is wired, but this machine has no GPU: the device refuses at construction
    with pytest.raises(monogen.RuntimeError, match=r"HIP rank device|libamdhip64"):
        mm.FfnRunner("reduced", 2, 0, rows=[S], device="hip")
