"""monogen: the MiniMax-M3 decode FFN monokernel for serving frameworks (vLLM, SGLang).

    import monogen.minimax_m3 as mm
    runner = mm.FfnRunner("config.json", tp, rank, rows=[1, 2, 4, 8])   # at model load
    ...                                                                   # allocate, exchange, warm up
    runner.launch(x, res_in, out, res_out, weights)                       # in forward (x: attention rows)

Submodules: minimax_m3 (the runner, test inputs and the C++ reference), ops (the torch custom
ops torch.ops.monogen.ffn_launch / ffn; imported on demand, it needs torch), cache (the
code-object cache; imported with the package). Errors are the C++ ones, message unchanged: InputError (also a ValueError),
RuntimeError (also a builtin RuntimeError), IrError, CodegenError, SimError, all monogen.Error.
"""
from ._monogen import (CodegenError, Error, InputError, IrError, RuntimeError,  # noqa: F401,A004
                       SimError, config_canonical)
from . import cache  # noqa: F401,E402 (needs only _monogen)

__all__ = ["Error", "InputError", "RuntimeError", "IrError", "CodegenError", "SimError", "config_canonical"]
