"""The FFN launch and the layer launch as torch custom ops, what a model's forward calls under torch.compile or a
HIP/CUDA graph (vLLM registers its ROCm ops the same way):

    torch.ops.monogen.ffn_launch(runner, x, res_in, out, res_out, weights, slots, stream) -> ()
        writes out and res_out in place (the out-variant frameworks use with preallocated buffers)
    torch.ops.monogen.ffn(runner, x, res_in, weights, slots, stream) -> (out, res_out)
        the functional form: allocates out and res_out

    torch.ops.monogen.layer_launch(runner, x, res, out, res_out, weights, kv_cache, k_scale, v_scale,
                                   index_cache, positions, slots, seq_lens, block_tables,
                                   index_slots, index_block_tables, stream) -> ()
        the decoder layer (LayerRunner.launch): writes out and res_out, appends to the caches
    torch.ops.monogen.layer(runner, x, res, weights, kv_cache, ..., stream) -> (out, res_out)
        its functional form (the caches still written in place: (c!) / (d!) in the schema)

`runner` is a runner's handle (FfnRunner.handle, an int: a schema carries tensors and plain
values, not Python objects); `x` is the launch's input as the runner was built (FfnRunner.launch's
x: the attention rows [S, heads x head_dim / TP] for input "attn", the o_proj partial [S, hidden]
for "part"; S = x.shape[0]); `weights` is the list of the Plan's weight tensors in
runner.weight_names(S) order (``weight_list`` makes it from a dict); `slots` may be None (every
row valid); `stream` 0 means torch's current stream (HIP; the Sim ignores it).

torch 1.13 (Debian's python3-torch) has no torch.library.custom_op / register_fake and no
torch.compile: the ops are defined with torch.library.Library("monogen", "DEF"), with kernels
for CPU (the Sim device) and CUDA (a ROCm torch's GPU tensors: the HIP device; not run here) and
a Meta kernel (shapes only: out and res_out as S's Plan declares them, [S, hidden], not x's
shape; nothing read or written; every tensor's dtype and shape checked as the real op checks them,
and a real tensor among meta ones refused), also registered for AutogradMeta (1.13 has no autograd
fallthrough for Meta; the ops have no gradient). They trace under torch.jit.trace (tests/test_torch_op.py); a traced graph holds the
runner's handle as a constant, so it is valid in the process that built it.
"""
import torch

from . import minimax_m3

_lib = torch.library.Library("monogen", "DEF")
_lib.define("ffn_launch(int runner, Tensor x, Tensor res_in, Tensor(a!) out, Tensor(b!) res_out, "
            "Tensor[] weights, Tensor? slots=None, int stream=0) -> ()")
_lib.define("ffn(int runner, Tensor x, Tensor res_in, Tensor[] weights, Tensor? slots=None, "
            "int stream=0) -> (Tensor, Tensor)")


def weight_list(runner, weights, rows):
    """The ops' `weights` list from a {name: tensor} dict, in runner.weight_names(rows) order."""
    r = _runner(runner)
    names = r.weight_names(rows)
    missing = [n for n in names if n not in weights]
    if missing:
        raise minimax_m3._monogen.InputError(f"input error at monogen.ops.weight_list, S = {rows}: missing "
                                             f"{missing}; expected every one of {names}")
    return [weights[n] for n in names]


def _runner(key):
    return key if isinstance(key, minimax_m3._Runner) else minimax_m3.runner(key)


def _weights_by_name(r, x, weights):
    names = r.weight_names(r.check_rows(x, "launch (torch.ops.monogen)"))
    if len(weights) != len(names):
        raise minimax_m3._monogen.InputError(
            f"input error at torch.ops.monogen, runner {r.handle}, S = {x.shape[0]}: {len(weights)} weight tensors; "
            f"expected {len(names)}, in the order {names}")
    return dict(zip(names, weights))


def _launch(runner, x, res_in, out, res_out, weights, slots=None, stream=0):
    r = minimax_m3.runner(runner)
    r.launch(x, res_in, out, res_out, _weights_by_name(r, x, weights), slots=slots,
             stream=None if stream == 0 else stream)


def _outputs(r, x, device, names=("out", "res_out")):
    """Empty out and res_out as S's Plan declares them ([S, hidden]; S = x.shape[0], the rest of
    x's shape is the input's, heads x head_dim / TP wide for "attn"), on `device`."""
    args = {a["name"]: a for a in r.arguments(x.shape[0])}
    return tuple(torch.empty(args[n]["shape"], dtype=getattr(torch, args[n]["dtype"].split(".", 1)[1]), device=device)
                 for n in names)


def _ffn(runner, x, res_in, weights, slots=None, stream=0):
    r = minimax_m3.runner(runner)
    r.check_rows(x, "launch (torch.ops.monogen)")
    out, res_out = _outputs(r, x, x.device)
    _launch(runner, x, res_in, out, res_out, weights, slots, stream)
    return out, res_out


def _check_meta(r, x, res_in, weights, slots, outputs=()):
    """The Meta kernels check what the real op checks, shapes and dtypes by S's Plan, and that
    every tensor is on meta: one real tensor among meta ones would launch nothing."""
    S = r.check_rows(x, "launch (torch.ops.monogen, meta)")
    named = {r.input: x, "res_in": res_in, **_weights_by_name(r, x, weights), **dict(outputs)}
    if slots is not None:
        named["slots"] = slots
    _check_meta_named(r, S, named)


def _fits(shape, want):
    """A tensor's shape against an argument's (-1: any length >= 1; a scalar scale may be 0-d)."""
    if len(shape) != len(want):
        return len(shape) == 0 and tuple(want) == (1,)
    return all(w == g if w >= 0 else g >= 1 for g, w in zip(shape, want))


def _check_meta_named(r, S, named):
    at = f"input error at torch.ops.monogen (meta), runner {r.handle}, S = {S}"
    real = [f"'{n}' on {t.device}" for n, t in named.items() if t.device.type != "meta"]
    if real:
        raise minimax_m3._monogen.InputError(
            f"{at}: {', '.join(real)} among meta tensors: expected every tensor on meta (tracing shapes) "
            f"or every one on the runner's device ({r.tensor_device}) to launch")
    for a in r.arguments(S):
        if a["role"] == "scalar" or a["name"] not in named:
            continue
        t = named[a["name"]]
        if str(t.dtype) not in a["dtypes"] or not _fits(tuple(t.shape), tuple(a["shape"])):
            raise minimax_m3._monogen.InputError(
                f"{at}, argument '{a['name']}': expected {a['dtype']} {list(a['shape'])}; given {t.dtype} "
                f"{list(t.shape)}")


def _launch_meta(runner, x, res_in, out, res_out, weights, slots=None, stream=0):
    r = minimax_m3.runner(runner)  # the handle must name a runner even when tracing shapes
    _check_meta(r, x, res_in, weights, slots, outputs=(("out", out), ("res_out", res_out)))


def _ffn_meta(runner, x, res_in, weights, slots=None, stream=0):
    r = minimax_m3.runner(runner)
    _check_meta(r, x, res_in, weights, slots)
    return _outputs(r, x, "meta")


# --- the layer (LayerRunner): the caches are written in place, marked (c!) / (d!) in the schemas
_LAYER_STATE = ("Tensor(c!) kv_cache, Tensor k_scale, Tensor v_scale, Tensor(d!)? index_cache, Tensor positions, "
                "Tensor slots, Tensor seq_lens, Tensor block_tables, Tensor? index_slots=None, "
                "Tensor? index_block_tables=None, int stream=0")
_lib.define("layer_launch(int runner, Tensor x, Tensor res, Tensor(a!) out, Tensor(b!) res_out, Tensor[] weights, "
            + _LAYER_STATE + ") -> ()")
_lib.define("layer(int runner, Tensor x, Tensor res, Tensor[] weights, " + _LAYER_STATE + ") -> (Tensor, Tensor)")


def _layer_named(r, x, res, weights, state, outputs=()):
    """The layer op's tensors by the runner's names (None left out), the weights checked for count."""
    names = r.weight_names(r.check_rows(x, "launch (torch.ops.monogen)"))
    if len(weights) != len(names):
        raise minimax_m3._monogen.InputError(
            f"input error at torch.ops.monogen, runner {r.handle}, S = {x.shape[0]}: {len(weights)} weight tensors; "
            f"expected {len(names)}, in the order {names}")
    named = {"x": x, "res": res, **dict(zip(names, weights)), **dict(outputs)}
    named.update({k: t for k, t in zip(minimax_m3.LAYER_CACHES + minimax_m3.LAYER_METADATA, state) if t is not None})
    return named


_NSTATE = len(minimax_m3.LAYER_CACHES + minimax_m3.LAYER_METADATA)


def _split(rest):
    """The schema's caches and metadata, then the stream (positional, as the dispatcher passes them)."""
    return rest[:_NSTATE], (rest[_NSTATE] if len(rest) > _NSTATE else 0)


def _layer_launch(runner, x, res, out, res_out, weights, *rest):
    state, stream = _split(rest)
    r = minimax_m3.runner(runner)
    named = _layer_named(r, x, res, weights, state)
    w = {n: named[n] for n in r.weight_names(x.shape[0])}
    r.launch(x, res, out, res_out, w, *state, stream=None if stream == 0 else stream)


def _layer(runner, x, res, weights, *rest):
    r = minimax_m3.runner(runner)
    r.check_rows(x, "launch (torch.ops.monogen)")
    out, res_out = _outputs(r, x, x.device, ("out", "res_out"))
    _layer_launch(runner, x, res, out, res_out, weights, *rest)
    return out, res_out


def _layer_launch_meta(runner, x, res, out, res_out, weights, *rest):
    state, _ = _split(rest)
    r = minimax_m3.runner(runner)
    _check_meta_named(r, r.check_rows(x, "launch (torch.ops.monogen, meta)"),
                      _layer_named(r, x, res, weights, state, (("out", out), ("res_out", res_out))))


def _layer_meta(runner, x, res, weights, *rest):
    state, _ = _split(rest)
    r = minimax_m3.runner(runner)
    _check_meta_named(r, r.check_rows(x, "launch (torch.ops.monogen, meta)"), _layer_named(r, x, res, weights, state))
    return _outputs(r, x, "meta", ("out", "res_out"))


for _key in ("CPU", "CUDA"):
    _lib.impl("ffn_launch", _launch, _key)
    _lib.impl("ffn", _ffn, _key)
    _lib.impl("layer_launch", _layer_launch, _key)
    _lib.impl("layer", _layer, _key)
for _key in ("Meta", "AutogradMeta"):
    _lib.impl("ffn_launch", _launch_meta, _key)
    _lib.impl("ffn", _ffn_meta, _key)
    _lib.impl("layer_launch", _layer_launch_meta, _key)
    _lib.impl("layer", _layer_meta, _key)
