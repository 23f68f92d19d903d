"""The FFN launch as torch custom ops, what a model's forward calls under torch.compile or a
HIP/CUDA graph (vLLM registers its ROCm ops the same way):

    torch.ops.monogen.ffn_launch(runner, x, res_in, out, res_out, weights, slots, stream) -> ()
        writes out and res_out in place (the out-variant frameworks use with preallocated buffers)
    torch.ops.monogen.ffn(runner, x, res_in, weights, slots, stream) -> (out, res_out)
        the functional form: allocates out and res_out

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
shape; nothing read or written), also registered for AutogradMeta (1.13 has no autograd
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
    return key if isinstance(key, minimax_m3.FfnRunner) else minimax_m3.runner(key)


def _weights_by_name(r, x, weights):
    names = r.weight_names(x.shape[0]) if x.shape[0] in r.rows else []
    if len(weights) != len(names):
        raise minimax_m3._monogen.InputError(
            f"input error at torch.ops.monogen, runner {r.handle}, S = {x.shape[0]}: {len(weights)} weight tensors; "
            f"expected {len(names)}, in the order {names}")
    return dict(zip(names, weights))


def _launch(runner, x, res_in, out, res_out, weights, slots=None, stream=0):
    r = minimax_m3.runner(runner)
    r.launch(x, res_in, out, res_out, _weights_by_name(r, x, weights), slots=slots,
             stream=None if stream == 0 else stream)


def _outputs(r, x, device):
    """Empty out and res_out as S's Plan declares them ([S, hidden]; S = x.shape[0], the rest of
    x's shape is the input's, heads x head_dim / TP wide for "attn"), on `device`."""
    args = {a["name"]: a for a in r.arguments(x.shape[0])}
    return tuple(torch.empty(args[n]["shape"], dtype=getattr(torch, args[n]["dtype"].split(".", 1)[1]), device=device)
                 for n in ("out", "res_out"))


def _ffn(runner, x, res_in, weights, slots=None, stream=0):
    r = minimax_m3.runner(runner)
    out, res_out = _outputs(r, x, x.device)
    _launch(runner, x, res_in, out, res_out, weights, slots, stream)
    return out, res_out


def _launch_meta(runner, x, res_in, out, res_out, weights, slots=None, stream=0):
    minimax_m3.runner(runner)  # the handle must name a runner even when tracing shapes


def _ffn_meta(runner, x, res_in, weights, slots=None, stream=0):
    return _outputs(minimax_m3.runner(runner), x, "meta")


for _key in ("CPU", "CUDA"):
    _lib.impl("ffn_launch", _launch, _key)
    _lib.impl("ffn", _ffn, _key)
for _key in ("Meta", "AutogradMeta"):
    _lib.impl("ffn_launch", _launch_meta, _key)
    _lib.impl("ffn", _ffn_meta, _key)
