"""A TP = 2 launch from Python on CPU tensors (the Sim device), reduced config: two Python
processes, one a rank (this one rank 0, a child rank 1), exchanging their handle bytes through a
pipe as a framework does with all_gather_object. On every rank out and res_out equal the C++
reference (launchReferenceOutputs for that rank) bit for bit, launch after launch, through each
way in: FfnRunner.launch, the torch op, the op under torch.jit.trace (torch 1.13 has no
torch.compile), and the functional op traced."""
import os
import sys

import pytest

import ffn_rank
from pipe_group import ParentGroup

TP = 2
LAUNCHES = 3


def run(how, seed):
    argv = [sys.executable, os.path.join(os.path.dirname(__file__), "ffn_rank.py"), how, str(TP), str(LAUNCHES), str(seed)]
    group = ParentGroup(TP, argv)
    try:
        mine = ffn_rank.run_rank(group, how, TP, LAUNCHES, seed)
        (theirs, code), = group.results()
    finally:
        group.kill()
    assert "error" not in theirs, theirs["error"]
    assert code == 0
    return [mine, theirs]


@pytest.mark.parametrize("how,seed", [("launch", 40), ("op", 50), ("traced", 60), ("functional", 70)])
def test_tp2_bit_exact_launch_after_launch(how, seed):
    ranks = run(how, seed)
    for r in ranks:
        print(f"{how} rank {r['rank']}: {r['total_seconds']:.1f} s, launches "
              + ", ".join(f"{v['seconds']:.2f} s" for v in r["verdicts"]) + "; " + "; ".join(r["progress"]))
        assert len(r["verdicts"]) == LAUNCHES
        assert r["progress"] and all("ready" in line for line in r["progress"])
        for v in r["verdicts"]:
            assert v["out_nonzero"], f"rank {r['rank']} launch {v['launch']}: out is all zeros"
            assert v["out"], f"{how}: rank {r['rank']} launch {v['launch']}: out differs from the reference"
            assert v["res_out"], f"{how}: rank {r['rank']} launch {v['launch']}: res_out differs from the reference"
