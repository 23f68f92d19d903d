"""One rank of the layer launch from Python, as a framework's model code runs it: build the
LayerRunner, allocate, all_gather_object the handle bytes, open the peers, barrier, warm up, then
`steps` consecutive decode steps (make_layer_steps: step k + 1 reads the caches step k wrote,
held here in the rank's own cache tensors, updated in place), comparing out, res_out and the
caches with the C++ reference (layerReference) bit for bit. `how` picks the call: "launch"
(LayerRunner.launch), "op" (torch.ops.monogen.layer_launch), "functional" (torch.ops.monogen.layer).

Run as a script it is a child rank: python3 layer_rank.py <how> <tp> <layer> <steps> <seed> <rank>."""
import sys
import time

import torch

import monogen.minimax_m3 as mm
from pipe_group import set_up

CONFIG = "reduced"
ROWS = 2
CONTEXT = 128  # position 128, then 129: both in the sequences' second block


def bits(t):
    """A tensor's bits, for a bit-for-bit comparison (bf16 as int16)."""
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


def ready_runner(group, tp, layer, **options):
    """What a framework does at model load: build, allocate, exchange, open, barrier, warm up."""
    runner = mm.LayerRunner(CONFIG, tp, group.rank, rows=[ROWS], layer=layer, **options)
    return runner, set_up(runner, group)


def step_args(m, caches, sparse):
    """launch()'s caches and metadata, in its positional order after `weights`."""
    return (caches["kv_cache"], m["k_scale"], m["v_scale"], caches.get("index_cache"), m["positions"], m["slots"],
            m["seq_lens"], m["block_tables"], m["index_slots"] if sparse else None,
            m["index_block_tables"] if sparse else None)


def run_rank(group, how, tp, layer, steps, seed):
    rank = group.rank
    t0 = time.time()
    sparse = layer == "sparse"
    runner, progress = ready_runner(group, tp, layer)
    made = mm.make_layer_steps(CONFIG, ROWS, tp, seed, layer=layer, context=CONTEXT, steps=steps)
    first = mm.rank_inputs(made[0]["inputs"], rank)
    caches = {"kv_cache": first["kv_cache"].clone()}  # the rank's caches: the launches append to them
    if sparse:
        caches["index_cache"] = first["index_cache"].clone()
    names = runner.weight_names(ROWS)
    if how != "launch":
        import monogen.ops  # noqa: F401 (registers torch.ops.monogen)
    verdicts = []
    for k, step in enumerate(made):
        m = mm.rank_inputs(step["inputs"], rank)
        state = step_args(m, caches, sparse)
        group.barrier()  # the ranks' launches start together (a framework's forward would)
        t1 = time.time()
        if how == "launch":
            out, res_out = torch.zeros_like(m["x"]), torch.zeros_like(m["x"])
            runner.launch(m["x"], m["res"], out, res_out, {n: m[n] for n in names}, *state)
        elif how == "op":
            out, res_out = torch.zeros_like(m["x"]), torch.zeros_like(m["x"])
            torch.ops.monogen.layer_launch(runner.handle, m["x"], m["res"], out, res_out, [m[n] for n in names],
                                           *state)
        else:
            out, res_out = torch.ops.monogen.layer(runner.handle, m["x"], m["res"], [m[n] for n in names], *state)
        seconds = time.time() - t1
        ref = mm.rank_inputs(step["reference"], rank)
        verdicts.append({"step": k, "seconds": seconds,
                         "out": torch.equal(bits(out), bits(ref["out"])),
                         "res_out": torch.equal(bits(res_out), bits(ref["res_out"])),
                         "out_nonzero": bool(bits(out).any()),
                         "kv_cache": torch.equal(caches["kv_cache"], ref["kv_cache"]),
                         "kv_cache_changed": k > 0 or not torch.equal(caches["kv_cache"], first["kv_cache"]),
                         "index_cache": not sparse or torch.equal(caches["index_cache"], ref["index_cache"])})
    return {"rank": rank, "layer": runner.layer, "weight_names": names, "progress": progress, "verdicts": verdicts,
            "total_seconds": time.time() - t0}


if __name__ == "__main__":
    from pipe_group import ChildGroup
    how, tp, layer, steps, seed, rank = (sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]),
                                         int(sys.argv[5]), int(sys.argv[6]))
    g = ChildGroup(rank, tp)
    try:
        g.result(run_rank(g, how, tp, layer, steps, seed))
    except Exception as e:  # noqa: BLE001 (the parent reports it)
        g.result({"rank": rank, "error": f"{type(e).__name__}: {e}"})
        sys.exit(2)
