"""LayerRunner refuses a bad tensor before anything is written: each refusal is a
monogen.InputError naming the argument, what was expected and what was given, and after it the
caller's caches, out and res_out hold the bytes they held before (nothing half-written). TP 1,
sparse, reduced config, S = 2, on the Sim device."""
import pytest
import torch

import monogen
import monogen.minimax_m3 as mm
import layer_rank

S = 2


@pytest.fixture(scope="module")
def ready():
    r = mm.LayerRunner("reduced", 1, 0, rows=[S])
    r.allocate()
    r.open_peers([r.export_handle()])
    r.peers_opened()
    r.warm_up()
    m = mm.rank_inputs(mm.make_layer_steps("reduced", S, 1, 21, context=layer_rank.CONTEXT)[0]["inputs"], 0)
    yield r, m
    r.close()


def call(r, m, **change):
    """A launch with m's tensors, `change` replacing some (by launch()'s argument names)."""
    a = {"x": m["x"], "res": m["res"], "out": m["out"], "res_out": m["res_out"],
         "weights": {n: m[n] for n in r.weight_names(S)}}
    for n in mm.LAYER_CACHES + mm.LAYER_METADATA:
        a[n] = m[n]
    a.update(change)
    r.launch(**a)


def state(m):
    return [m[n].clone() for n in ("kv_cache", "index_cache", "out", "res_out")]


def refused(r, m, pattern, **change):
    before = state(m)
    with pytest.raises(monogen.InputError, match=pattern) as e:
        call(r, m, **change)
    for b, a in zip(before, state(m)):
        assert torch.equal(b, a), "a refused launch wrote something"
    return str(e.value)


def fresh(m):
    m = dict(m)
    m["kv_cache"], m["index_cache"] = m["kv_cache"].clone(), m["index_cache"].clone()
    m["out"], m["res_out"] = torch.full_like(m["x"], 7.0), torch.full_like(m["x"], 7.0)
    return m


def test_arguments_name_the_caches_in_vllm_layout(ready):
    r, _ = ready
    args = {a["name"]: a for a in r.arguments(S)}
    assert tuple(args["kv_cache"]["shape"]) == (-1, 2, 4 * 128, 64) and args["kv_cache"]["in_place"]
    assert tuple(args["index_cache"]["shape"]) == (-1, 128, 64) and args["index_cache"]["in_place"]
    assert tuple(args["block_tables"]["shape"]) == (S, -1)
    assert not {"attn", "res_in", "q", "iq", "table_stride", "k_cache"} & set(args), sorted(args)


def test_a_swapped_cache_layout_is_refused(ready):
    r, m = ready
    m = fresh(m)
    kv = m["kv_cache"]
    # vLLM's unpacked layout, K and V outermost: the shape says it is not the packed one
    msg = refused(r, m, r"argument 'kv_cache': shape \[2, ", kv_cache=kv.view(kv.shape[0], 2, -1).transpose(0, 1)
                  .contiguous().view(2, kv.shape[0], kv.shape[2], kv.shape[3]))
    print(msg)
    assert "vLLM's packed cache" in msg and "given torch.uint8 [2, " in msg
    # the packed shape over tokens and head_dim swapped in place: not contiguous
    msg = refused(r, m, r"argument 'kv_cache': strides", kv_cache=kv.transpose(2, 3).contiguous().transpose(2, 3))
    print(msg)
    # the index cache with its tokens and channels swapped
    ic = m["index_cache"]
    refused(r, m, r"argument 'index_cache': shape \[\d+, 64, 128\]",
            index_cache=ic.view(ic.shape[0], 64, 128))


def test_a_wrong_dtype_device_or_width_is_refused(ready):
    r, m = ready
    m = fresh(m)
    msg = refused(r, m, r"argument 'positions': dtype torch.int32: expected torch.int64 \[2\] on cpu, contiguous; "
                        r"given torch.int32 \[2\] on cpu", positions=m["positions"].to(torch.int32))
    print(msg)
    refused(r, m, r"argument 'kv_cache': dtype torch.float32", kv_cache=m["kv_cache"].float())
    refused(r, m, r"argument 'k_scale': shape \[2\]", k_scale=torch.ones(2))
    refused(r, m, r"argument 'x': on device 'meta'", x=torch.empty_like(m["x"], device="meta"))
    msg = refused(r, m, r"argument 'index_block_tables': .* is 3 wide: expected block_tables' width, 2",
                  index_block_tables=torch.zeros(S, 3, dtype=torch.int32))
    print(msg)
    refused(r, m, r"argument 'index_cache': missing: expected torch.uint8 \[index blocks, 128, 64\]", index_cache=None)
    refused(r, m, r"argument 'res_out': shares memory with argument 'out'", out=m["res_out"])
    refused(r, m, r"argument 'kv_cache': shares memory with argument 'index_cache'", index_cache=m["kv_cache"].view(-1)[:128 * 64].view(1, 128, 64))
    refused(r, m, r"serves S in \{2\}", x=m["x"][:1])
    refused(r, m, r"a NoneType was given: expected a torch.Tensor", x=None)


def test_the_options_are_checked():
    with pytest.raises(monogen.InputError, match=r"cache.*\"atom\": expected \"vllm\""):
        mm.LayerRunner("reduced", 1, 0, rows=[S], cache="atom")
    with pytest.raises(monogen.InputError, match=r"layer.*\"dense\": expected \"sparse\" or \"full\""):
        mm.LayerRunner("reduced", 1, 0, rows=[S], layer="dense")
