"""One rank of a TP launch from Python, as a framework's model code runs it: build the runner,
allocate, all_gather_object the handle bytes, open the peers, barrier, warm up, then launch after
launch with new inputs (make_launch_inputs, seed + k, the same on every rank), comparing out and
res_out with the C++ reference for this rank bit for bit. `how` picks the call: "launch"
(FfnRunner.launch), "op" (torch.ops.monogen.ffn_launch), "traced" (that op inside a function
traced by torch.jit.trace once and then called), "functional" (torch.ops.monogen.ffn, traced).
`input` is the launch's input, "attn" (the attention rows, o_proj in the launch) or "part" (the
o_proj partial), or None: nothing declared, the defaults of FfnRunner, make_launch_inputs and
rank_reference (attn); x is the runner's input's tensor of the rank's inputs.

Run as a script it is a child rank: python3 ffn_rank.py <how> <tp> <launches> <seed> <input|default> <rank>."""
import sys
import time

import torch

import monogen.minimax_m3 as mm
from pipe_group import set_up

CONFIG = "reduced"
ROWS = 2


def bits(t):
    """A tensor's bits, for a bit-for-bit comparison (bf16 as int16)."""
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


def ready_runner(group, tp, **options):
    """What a framework does at model load: build, allocate, exchange, open, barrier, warm up."""
    runner = mm.FfnRunner(CONFIG, tp, group.rank, rows=[ROWS], **options)
    return runner, set_up(runner, group)


def run_rank(group, how, tp, launches, seed, input=None):
    rank = group.rank
    t0 = time.time()
    declared = {} if input is None else {"input": input}
    runner, progress = ready_runner(group, tp, **declared)
    inputs = [mm.make_launch_inputs(CONFIG, ROWS, tp, seed + k, **declared) for k in range(launches)]
    mine = [mm.rank_inputs(i, rank) for i in inputs]
    names = runner.weight_names(ROWS)
    if how in ("op", "traced", "functional"):
        import monogen.ops  # noqa: F401 (registers torch.ops.monogen)
    traced = None
    got, seconds = [], []
    for k, m in enumerate(mine):
        x = m[runner.input]  # the attention rows, or the o_proj partial
        out, res_out = torch.zeros_like(m["res_in"]), torch.zeros_like(m["res_in"])
        weights = [m[n] for n in names]
        group.barrier()  # the ranks' launches start together (a framework's forward would)
        t1 = time.time()
        if how == "launch":
            runner.launch(x, m["res_in"], out, res_out, {n: m[n] for n in names}, slots=m["slots"])
        elif how == "op":
            torch.ops.monogen.ffn_launch(runner.handle, x, m["res_in"], out, res_out, weights, m["slots"])
        elif how == "traced":
            def step(x, res_in, out, res_out, slots, *w):
                torch.ops.monogen.ffn_launch(runner.handle, x, res_in, out, res_out, list(w), slots)
                return out, res_out
            args = (x, m["res_in"], out, res_out, m["slots"], *weights)
            if traced is None:  # tracing runs the op once: that is a launch on every rank too
                traced = torch.jit.trace(step, args, check_trace=False)
                assert "monogen::ffn_launch" in str(traced.graph), traced.graph
            else:
                traced(*args)
        elif how == "functional":
            def step(x, res_in, slots, *w):
                return torch.ops.monogen.ffn(runner.handle, x, res_in, list(w), slots)
            args = (x, m["res_in"], m["slots"], *weights)
            if traced is None:
                traced = torch.jit.trace(step, args, check_trace=False)
                assert "monogen::ffn" in str(traced.graph), traced.graph
                out, res_out = step(*args)  # the traced call above ran it already: run it eagerly once
            else:
                out, res_out = traced(*args)
        seconds.append(time.time() - t1)
        got.append((out.clone(), res_out.clone()))
    verdicts = []
    for k in range(launches):
        ref = mm.rank_reference(CONFIG, ROWS, tp, rank, inputs[k], **declared)
        out, res_out = got[k]
        verdicts.append({"launch": k,
                         "out": torch.equal(bits(out), bits(ref["out"])),
                         "res_out": torch.equal(bits(res_out), bits(ref["res_out"])),
                         "out_nonzero": bool(bits(out).any()),
                         "seconds": seconds[k]})
    return {"rank": rank, "input": runner.input, "weight_names": names, "progress": progress, "verdicts": verdicts,
            "total_seconds": time.time() - t0}


def run_absent_peer(group, tp, seed):
    """Rank 0 launches, rank 1 sets up and never does: rank 0's launch must fail, within its wait
    bound (0.5 s of idling), with the error word's meaning and the rank whose pairs never came."""
    import monogen
    rank = group.rank
    runner, _ = ready_runner(group, tp, wait_ticks=50_000_000)
    result = {"rank": rank}
    if rank == 0:
        m = mm.rank_inputs(mm.make_launch_inputs(CONFIG, ROWS, tp, seed), rank)
        weights = {n: m[n] for n in runner.weight_names(ROWS)}
        for k in range(2):  # the error word is cleared after the first: the second fails on its own
            try:
                runner.launch(m["attn"], m["res_in"], torch.zeros_like(m["res_in"]), torch.zeros_like(m["res_in"]),
                              weights, slots=m["slots"])
                result[f"error{k}"] = None
            except monogen.RuntimeError as e:
                result[f"error{k}"] = str(e)
    group.barrier()  # rank 1 stays until rank 0 is done
    return result


if __name__ == "__main__":
    from pipe_group import ChildGroup
    how, (tp, launches, seed), input, rank = sys.argv[1], map(int, sys.argv[2:5]), sys.argv[5], int(sys.argv[6])
    g = ChildGroup(rank, tp)
    try:
        g.result(run_absent_peer(g, tp, seed) if how == "absent"
                 else run_rank(g, how, tp, launches, seed, None if input == "default" else input))
    except Exception as e:  # noqa: BLE001 (the parent reports it)
        g.result({"rank": rank, "error": f"{type(e).__name__}: {e}"})
        sys.exit(2)
