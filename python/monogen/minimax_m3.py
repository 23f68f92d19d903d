"""One rank of the MiniMax-M3 FFN launch (FfnRunner) or of the whole decoder layer in one
launch (LayerRunner: attention, o_proj, all-reduce, MoE; the caches in vLLM's layout, updated in
place), as a vLLM / SGLang model file calls it. Both take the same steps at model load.

At model load, in every rank's process (one process a GPU, torch.distributed style)::

    runner = FfnRunner(config, tp, rank, rows=[1, 2, 4, 8])
    runner.allocate()
    handles = [None] * tp
    dist.all_gather_object(handles, runner.export_handle())   # monogen opens no sockets
    runner.open_peers(handles)
    dist.barrier(); runner.peers_opened()
    runner.warm_up()                                          # every S: compiled or from the cache

In forward: ``runner.launch(x, res_in, out, res_out, weights)`` with the framework's tensors
(weights by the Plan's argument names: ``runner.weight_names(S)``, shapes and dtypes in
``runner.arguments(S)``; specs/minimax_m3/kernel/WeightContract.h). ``x`` is the launch's input, as the
runner was built with ``input=``: "attn" (the default) the attention rows, bf16 [S, heads x
head_dim / TP], o_proj's per-token FP8 quant and GEMM running inside the launch (its rowwise-FP8
weight ``wo`` and ``wo_scale`` are ordinary weights); "part" the unreduced o_proj partial the
framework computed, bf16 [S, hidden]. S is ``x.shape[0]``; out and res_out are [S, hidden] either
way.

Devices: CPU tensors run on the Sim device (``device="sim"``, the default without a ROCm GPU): the
Sim has its own memory, so every launch copies the inputs and weights in and the outputs back,
and runs to its end; a stream argument is accepted and ignored. GPU tensors of a ROCm torch run
on the HIP device (``device="hip"``, the default when torch.version.hip is set and a GPU is
there): bound in place, enqueued on ``stream`` or torch's current stream. The HIP path is wired
but has not been run: there is no GPU or ROCm torch here.

Runners are registered by ``handle`` (an int) and, if given, ``name``: the torch ops
(monogen.ops) take the handle, a plain int a schema can carry; ``runner(key)`` finds one.
"""
import itertools

from . import _monogen

_by_handle = {}
_by_name = {}
_handles = itertools.count(1)

# The launch's inputs (FfnRunner(input=...), the Plan argument launch()'s x is bound to), the
# default first.
INPUTS = ("attn", "part")
# The launch's activations: named arguments of launch() (a Plan has one of the INPUTS); every
# other tensor argument of the Plan is in `weights`.
ACTIVATIONS = INPUTS + ("res_in", "out", "res_out", "slots")


def runner(key):
    """The live FfnRunner of a handle (int) or name (str); monogen.InputError if there is none."""
    table = _by_handle if isinstance(key, int) else _by_name
    if key not in table:
        raise _monogen.InputError(f"input error at monogen.minimax_m3.runner: no runner {key!r}: "
                                  f"live handles {sorted(_by_handle)}, names {sorted(_by_name)}")
    return table[key]


def _default_device():
    try:
        import torch
        if getattr(torch.version, "hip", None) and torch.cuda.is_available():
            return "hip"
    except ImportError:
        pass
    return "sim"


class _Runner:
    """What FfnRunner and LayerRunner share: the registration by handle and name, the per-rank
    steps, the Plan's arguments, the properties."""

    def _register(self, cls, name, *args):
        if name is not None and name in _by_name:
            raise _monogen.InputError(f"input error at {type(self).__name__}(name={name!r}): the name is taken "
                                      f"by runner {_by_name[name].handle}; expected a new name")
        self._c = cls(*args)
        self.handle = next(_handles)
        self.name = name
        self._arguments = {}
        _by_handle[self.handle] = self
        if name is not None:
            _by_name[name] = self

    # --- the per-rank steps, in order
    def allocate(self):
        self._c.allocate()

    def export_handle(self) -> bytes:
        return self._c.export_handle()

    def open_peers(self, handles):
        self._c.open_peers(list(handles))

    def peers_opened(self):
        self._c.peers_opened()

    def warm_up(self):
        """Loads every S (compiled, or from the cache); returns the progress lines."""
        return self._c.warm_up()

    # --- what the Plan asks for
    def arguments(self, rows):
        """The caller's arguments of S = rows: [{name, role, dtype, shape, doc}] in Plan order."""
        if rows not in self._arguments:
            self._arguments[rows] = self._c.arguments(rows)
        return self._arguments[rows]

    def check_rows(self, x, step="launch", arg="x", hint=""):
        """S = x.shape[0] if x is a tensor whose S the runner warmed up; else monogen.InputError
        naming the argument, the S and the warmed ones."""
        at = f"input error at {type(self).__name__}.{step}, rank {self.rank} of TP {self.tp}, argument '{arg}'"
        if not all(hasattr(x, a) for a in ("shape", "dtype", "device", "data_ptr")):
            raise _monogen.InputError(f"{at}: a {type(x).__name__} was given: expected a torch.Tensor")
        S = int(x.shape[0]) if len(x.shape) else 0
        if S not in self.rows:
            raise _monogen.InputError(
                f"{at}: {x.dtype} {list(x.shape)} gives S = {S}: this runner serves S in "
                f"{{{', '.join(map(str, self.rows))}}} (warmed up); pad the batch to one of them{hint} "
                f"or build the runner with rows=[...] for more")
        return S

    @property
    def rows(self):
        return self._c.rows

    @property
    def tp(self):
        return self._c.tp

    @property
    def rank(self):
        return self._c.rank

    @property
    def device(self):
        """"sim rank 0 of 2", "hip rank 1 of 4 (device 1, ...)"."""
        return self._c.device_name

    @property
    def tensor_device(self):
        """The torch device type its tensors must be on: "cpu" (Sim) or "cuda" (HIP)."""
        return self._c.tensor_device

    def close(self):
        """Unregisters the runner (the torch ops no longer find its handle)."""
        _by_handle.pop(self.handle, None)
        if self.name is not None:
            _by_name.pop(self.name, None)

    def _stream(self, x, stream):
        if self.tensor_device == "cpu":
            return 0  # the Sim has no streams
        import torch
        if stream is None:
            stream = torch.cuda.current_stream(x.device)
        return stream if isinstance(stream, int) else stream.cuda_stream


class FfnRunner(_Runner):
    """One rank's runner (python/bindings/FfnRunner.h has the details).

    config: "full", "reduced", a Hugging Face config.json path, or its dict. rows: the S values
    served, each warmed up. wait_ticks: a wait's bound (100 MHz ticks; on the Sim, real seconds x
    1e8 of a rank idling). progress: a callable taking each warm-up line. scales: the layout
    the framework holds s13 / s2 in: "e8m0_shuffle" (what vLLM and SGLang hold after
    process_weights_after_loading; the default) or "rowmajor". The shapes cannot tell the two
    apart, so this is the caller's declaration: it picks the variant that reads that layout.
    input: what launch()'s x is (one of INPUTS): "attn" (the attention rows, o_proj in the launch,
    with weights wo / wo_scale; the default) or "part" (the o_proj partial); it picks the variant
    (the C++ input knob; warm-up lines name "input=part", attn being the default key).
    """

    def __init__(self, config, tp, rank, rows=(1,), device=None, device_ordinal=-1,
                 wait_ticks=2_000_000_000, progress=None, name=None, scales="e8m0_shuffle", input="attn"):
        self._register(_monogen.FfnRunner, name, config, tp, rank, list(rows), device or _default_device(),
                       device_ordinal, wait_ticks, progress, scales, input)
        self.scales = scales
        self.input = self._c.input  # "attn" or "part", checked by the C++ runner
        self._slots = {}

    def launch(self, x, res_in, out, res_out, weights, slots=None, stream=None, **scalars):
        """One launch: reads x, res_in, slots and weights; writes out and res_out.

        Launches on one runner are serialized: a second thread's launch waits until the first has
        ended (on the Sim: run and copied back; on HIP: enqueued). out and res_out must be tensors
        of their own: one sharing memory with any other argument is refused (no in-place launch).
        S must be one the runner warmed up (``rows``); ``pad`` pads a smaller batch to the next.

        x: the launch's input, bound to the Plan argument self.input: the attention rows (bf16
        [S, heads x head_dim / TP]) for "attn", the o_proj partial (bf16 [S, hidden]) for "part".
        S = x.shape[0]. weights: {argument name: tensor} (every tensor argument of the Plan but the
        activations: wo and wo_scale among them for "attn").
        slots: i64 [S], -1 for a padded row; None: every row valid. stream: a torch stream or its
        int handle; None: torch's current stream (HIP), ignored on the Sim. scalars: the Plan's
        caller scalars (wait_ticks, handshake), defaults as built.
        """
        self.check_rows(x, "launch")  # before anything of S's size is made
        tensors = dict(weights)
        tensors.update({self.input: x, "res_in": res_in, "out": out, "res_out": res_out})
        if "slots" in self._names(x):
            tensors["slots"] = self._all_valid(x) if slots is None else slots
        self._c.launch(tensors, scalars, self._stream(x, stream))

    def check_rows(self, x, step="launch"):
        """_Runner.check_rows for the launch's input (self.input)."""
        return super().check_rows(x, step, self.input, " (FfnRunner.pad)")

    def padded_rows(self, n):
        """The smallest warmed-up S >= n, or monogen.InputError naming n and the warmed ones."""
        fits = [s for s in self.rows if s >= n]
        if n < 1 or not fits:
            raise _monogen.InputError(f"input error at FfnRunner.padded_rows, rank {self.rank} of TP {self.tp}: "
                                      f"{n} rows: this runner serves S in {{{', '.join(map(str, self.rows))}}}; "
                                      f"expected 1 .. {max(self.rows)} rows")
        return min(fits)

    def pad(self, x, res_in, slots=None):
        """A batch of n rows padded to the next warmed-up S (padded_rows(n)): (x, res_in, slots)
        with S rows, rows n.. zero and their slot -1 (a padded row: the kernel skips it; slots
        None: rows 0..n-1 valid). Launch them with out / res_out of S rows and read rows [:n]."""
        import torch
        if not hasattr(x, "shape") or not len(x.shape):
            raise _monogen.InputError(f"input error at FfnRunner.pad, argument '{self.input}': a "
                                      f"{type(x).__name__} was given: expected a torch.Tensor of [n, ...] rows")
        n = int(x.shape[0])
        S = self.padded_rows(n)
        def grow(t):
            if t.shape[0] != n:
                raise _monogen.InputError(f"input error at FfnRunner.pad: a tensor of {t.shape[0]} rows beside "
                                          f"{self.input}'s {n}; expected {n}")
            return torch.cat([t, t.new_zeros((S - n,) + tuple(t.shape[1:]))]) if S > n else t
        if slots is None:
            slots = torch.arange(n, dtype=torch.int64, device=x.device)
        padded = grow(slots)
        if S > n:
            padded[n:] = -1
        return grow(x), grow(res_in), padded

    def weight_names(self, rows):
        """The tensor arguments launch() takes in `weights`, in Plan order (the ops' list order)."""
        return [a["name"] for a in self.arguments(rows) if a["role"] != "scalar" and a["name"] not in ACTIVATIONS]

    # --- helpers
    def _names(self, x):
        s = x.shape[0] if len(x.shape) else 0
        return {a["name"] for a in self.arguments(s)} if s in self.rows else set(ACTIVATIONS)

    def _all_valid(self, x):
        import torch
        key = (x.shape[0], str(x.device))
        if key not in self._slots:  # made once: a captured graph replays the same address
            self._slots[key] = torch.arange(x.shape[0], dtype=torch.int64, device=x.device)
        return self._slots[key]


# The layer's per-step tensors (LayerRunner.launch's named arguments; every other tensor argument
# is a weight): the rows, the caches (vLLM's layout, written in place) and the rows' metadata.
LAYER_CACHES = ("kv_cache", "k_scale", "v_scale", "index_cache")
LAYER_METADATA = ("positions", "slots", "seq_lens", "block_tables", "index_slots", "index_block_tables")
LAYER_ACTIVATIONS = ("x", "res", "out", "res_out") + LAYER_CACHES + LAYER_METADATA


class LayerRunner(_Runner):
    """One rank's runner of the one-launch decoder layer (python/bindings/LayerRunner.h): the
    attention (norm, QKV GEMV, head norms and RoPE, the cache appends, the indexer's selection on
    sparse layers, split attention), o_proj, the all-reduce, norm, router, MoE and the final
    all-reduce, in one launch a rank.

    config, tp, rank, rows, device, device_ordinal, wait_ticks, progress, name: as FfnRunner's.
    cache: the caches' layout, "vllm" (ABI 1: one packed K/V tensor [blocks, 2, KV heads x 128,
    head_dim] E4M3, scalar K / V scales, an index-key cache [index blocks, 128, index_dim] with its
    own slots and tables). layer: "sparse" (the indexer's top-k blocks) or "full" (every key; no
    index cache, slots or tables: pass None).
    """

    def __init__(self, config, tp, rank, rows=(1,), device=None, device_ordinal=-1,
                 wait_ticks=2_000_000_000, progress=None, name=None, cache="vllm", layer="sparse"):
        self._register(_monogen.LayerRunner, name, config, tp, rank, list(rows), device or _default_device(),
                       device_ordinal, wait_ticks, progress, cache, layer)
        self.cache = cache
        self.layer = self._c.layer

    def launch(self, x, res, out, res_out, weights, kv_cache, k_scale, v_scale, index_cache, positions, slots,
               seq_lens, block_tables, index_slots=None, index_block_tables=None, stream=None, **scalars):
        """One launch of the layer: reads x and res (bf16 [S, hidden]: the previous layer's
        all-reduced output and its residual), the weights and the rows' metadata; appends each
        live row's K, V (and index key) to the caches in place; writes out (the layer's output,
        bf16 [S, hidden]) and res_out (the new residual).

        weights: {argument name: tensor} (weight_names(S): the attention's g_in, w_qkv, s_qkv,
        g_q, g_k, g_iq, g_ik, cos_sin and the FFN's wo, wo_scale, w13, s13, w2, s2, ...).
        positions i64 [S]; slots i64 [S] (-1: a padded row); seq_lens i32 [S]; block_tables i32
        [S, width]; index_slots i64 [S] and index_block_tables i32 [S, width] (sparse layers).
        Every tensor is checked (dtype, shape, device, contiguity) before anything is written;
        out, res_out and the caches must not share memory with any other argument. Serialized
        and on streams as FfnRunner.launch.
        """
        self.check_rows(x, "launch")
        tensors = dict(weights)
        tensors.update({"x": x, "res": res, "out": out, "res_out": res_out, "kv_cache": kv_cache,
                        "k_scale": k_scale, "v_scale": v_scale, "positions": positions, "slots": slots,
                        "seq_lens": seq_lens, "block_tables": block_tables})
        for k, t in (("index_cache", index_cache), ("index_slots", index_slots),
                     ("index_block_tables", index_block_tables)):
            if t is not None:
                tensors[k] = t
        self._c.launch(tensors, scalars, self._stream(x, stream))

    def forward(self, x, res, weights, *args, **kwargs):
        """launch() with out and res_out made here: returns (out, res_out)."""
        import torch
        self.check_rows(x, "forward")
        out, res_out = torch.empty_like(x), torch.empty_like(x)
        self.launch(x, res, out, res_out, weights, *args, **kwargs)
        return out, res_out

    def weight_names(self, rows):
        """The tensor arguments launch() takes in `weights`, in Plan order (the ops' list order)."""
        return [a["name"] for a in self.arguments(rows) if a["role"] == "weight"]


# --- test inputs and the C++ reference (python/bindings/Reference.cpp)
def _torch(triple):
    import torch
    dtype, shape, data = triple
    t = getattr(torch, dtype.split(".", 1)[1])
    if not data:
        return torch.empty(shape, dtype=t)
    return torch.frombuffer(bytearray(data), dtype=t).reshape(shape)


def make_launch_inputs(config, rows, tp, seed, scales="e8m0_shuffle", input="attn"):
    """Every rank's inputs of one launch (C++ makeLaunchInputs), seeded: {name: CPU tensor},
    per-rank ones named "<name>.r<rank>" (part, w13, s13, w2, s2; attn and wo for input "attn"),
    shared ones as they are (wo_scale for "attn"); the scales held in layout `scales`. For "attn"
    part is the o_proj partial of attn, wo and wo_scale (the C++ o_proj reference), what the
    launch computes inside; for "part" it is drawn directly and there is no attn / wo / wo_scale."""
    return {k: _torch(v) for k, v in _monogen.make_launch_inputs(config, rows, tp, seed, scales, input).items()}


def rank_inputs(inputs, rank):
    """Rank `rank`'s share of make_launch_inputs: "<name>.r<rank>" as "<name>", the shared ones."""
    own = f".r{rank}"
    out = {}
    for k, v in inputs.items():
        base, dot, r = k.rpartition(".r")
        if dot and r.isdigit():
            if k.endswith(own):
                out[base] = v
        else:
            out[k] = v
    return out


def rank_reference(config, rows, tp, rank, inputs, scales="e8m0_shuffle", input="attn"):
    """The C++ reference (launchReferenceOutputs, cut to one rank) of make_launch_inputs's
    `inputs`, made with the same `input` (monogen.InputError otherwise): {name: tensor} with
    rank's own "<name>.r<rank>" as "<name>" (out, res_out, ...)."""
    ref = _monogen.rank_reference(config, rows, tp, rank, inputs, scales, input)
    own = f".r{rank}"
    def name(k):  # down.r<src> keeps its source rank
        return k[:-len(own)] if k.endswith(own) and not k.startswith("down.") else k
    return {name(k): _torch(v) for k, v in ref.items()}


def make_layer_steps(config, rows, tp, seed, layer="sparse", context=128, steps=1, padded_rows=0):
    """`steps` consecutive decode steps of the layer (C++ makeLayerInputs, layerReference), seeded,
    in LayerRunner's names and vLLM's cache layout: [{"inputs": {name: CPU tensor}, "reference":
    {name: CPU tensor}}], per-rank tensors "<name>.r<rank>" (rank_inputs cuts one rank's share).
    The first step's inputs hold the caches (kv_cache, index_cache); each reference holds out,
    res_out and the caches after its step; step k + 1 reads the caches step k wrote (every live row
    one position on)."""
    made = _monogen.make_layer_steps(config, rows, tp, seed, layer, context, steps, padded_rows)
    return [{part: {k: _torch(v) for k, v in step[part].items()} for part in ("inputs", "reference")}
            for step in made]
