"""The layer launch from Python on CPU tensors (the Sim device), reduced config, caches in vLLM's
layout: TP 1 in this process and TP 2 over two processes (this one rank 0, a child rank 1,
exchanging their handle bytes through a pipe as a framework does with all_gather_object), sparse
and full layers, two consecutive decode steps (the second reads the caches the first appended to,
in the caller's own cache tensors). On every rank and step out, res_out and the caches equal the
C++ reference (layerReference) bit for bit, through LayerRunner.launch and the torch ops."""
import os
import sys

import pytest

import layer_rank
from pipe_group import run_ranks

STEPS = 2


class Solo:
    """TP 1: a group of one."""
    rank, world = 0, 1

    def all_gather_object(self, output, obj):
        output[0] = obj

    def barrier(self):
        pass


def run(how, tp, layer, seed):
    if tp == 1:
        return [layer_rank.run_rank(Solo(), how, 1, layer, STEPS, seed)]
    argv = [sys.executable, os.path.join(os.path.dirname(__file__), "layer_rank.py"), how, str(tp), layer,
            str(STEPS), str(seed)]
    return run_ranks(tp, argv, lambda group: layer_rank.run_rank(group, how, tp, layer, STEPS, seed))


@pytest.mark.parametrize("how,tp,layer,seed", [("launch", 1, "sparse", 11), ("functional", 1, "full", 12),
                                               ("launch", 2, "sparse", 13), ("op", 2, "full", 14)])
def test_layer_bit_exact_two_steps(how, tp, layer, seed):
    for r in run(how, tp, layer, seed):
        print(f"{how} TP {tp} {layer} rank {r['rank']}: {r['total_seconds']:.1f} s, steps "
              + ", ".join(f"{v['seconds']:.2f} s" for v in r["verdicts"]) + "; " + "; ".join(r["progress"]))
        assert r["layer"] == layer and len(r["verdicts"]) == STEPS
        assert r["progress"] and all("ready" in line for line in r["progress"])
        assert {"w_qkv", "g_in", "cos_sin", "wo", "w13", "s2"} <= set(r["weight_names"]), r["weight_names"]
        for v in r["verdicts"]:
            at = f"{how} TP {tp} {layer}: rank {r['rank']} step {v['step']}"
            assert v["out_nonzero"], f"{at}: out is all zeros"
            assert v["kv_cache_changed"], f"{at}: the launch appended nothing to kv_cache"
            for what in ("out", "res_out", "kv_cache", "index_cache"):
                assert v[what], f"{at}: {what} differs from the reference"


def test_one_runner_serves_two_row_counts():
    """rows=[1, 2]: the S values share the runtime's heads_count (one buffer of the most rows, zero
    between launches); S = 2, then S = 1, then S = 2 again, each bit-exact on its own caches."""
    import torch
    import monogen.minimax_m3 as mm
    r = mm.LayerRunner(layer_rank.CONFIG, 1, 0, rows=[1, 2])
    assert len(layer_rank.set_up(r, Solo())) == 2
    for s, seed in ((2, 31), (1, 32), (2, 33)):
        step = mm.make_layer_steps(layer_rank.CONFIG, s, 1, seed, context=layer_rank.CONTEXT)[0]
        m, ref = mm.rank_inputs(step["inputs"], 0), mm.rank_inputs(step["reference"], 0)
        out, res_out = r.forward(m["x"], m["res"], {n: m[n] for n in r.weight_names(s)},
                                 *layer_rank.step_args(m, {"kv_cache": m["kv_cache"], "index_cache": m["index_cache"]},
                                                       True))
        assert torch.equal(layer_rank.bits(out), layer_rank.bits(ref["out"])), f"S = {s}: out differs"
        assert torch.equal(layer_rank.bits(res_out), layer_rank.bits(ref["res_out"])), f"S = {s}: res_out differs"
        assert torch.equal(m["kv_cache"], ref["kv_cache"]), f"S = {s}: kv_cache differs"
    r.close()
