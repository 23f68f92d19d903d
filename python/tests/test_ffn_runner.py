"""A TP = 2 launch from Python on CPU tensors (the Sim device), reduced config: two Python
processes, one a rank (this one rank 0, a child rank 1), exchanging their handle bytes through a
pipe as a framework does with all_gather_object. On every rank out and res_out equal the C++
reference (launchReferenceOutputs for that rank) bit for bit, launch after launch, through each
way in: FfnRunner.launch, the torch op, the op under torch.jit.trace (torch 1.13 has no
torch.compile), and the functional op traced. And a rank whose peer never launches gets a
monogen.RuntimeError naming the peer, launch after launch (the error word is cleared)."""
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
        if how == "absent":
            mine = ffn_rank.run_absent_peer(group, TP, seed)
        else:
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


def test_a_peer_that_never_launches_fails_the_launch_naming_it():
    rank0, _ = run("absent", 80)
    for k in range(2):
        msg = rank0[f"error{k}"]
        print(msg)
        assert msg is not None, f"launch {k} on rank 0 returned without its peer"
        assert msg.startswith("runtime error at FfnRunner.launch, rank 0 of TP 2, S = 2: the launch failed: rank 0: error word")
        assert "this launch's pairs never came from rank 1" in msg


def test_tp1_in_one_process_with_a_progress_callback():
    import torch
    import monogen.minimax_m3 as mm
    lines = []
    r = mm.FfnRunner("reduced", 1, 0, rows=[1], progress=lines.append)
    r.allocate()
    r.open_peers([r.export_handle()])
    r.peers_opened()
    assert r.warm_up() == lines and len(lines) == 1 and "S1-TP1 ready" in lines[0], lines
    for seed in (90, 91):
        inputs = mm.make_launch_inputs("reduced", 1, 1, seed)
        m = mm.rank_inputs(inputs, 0)
        out, res_out = torch.zeros_like(m["part"]), torch.zeros_like(m["res_in"])
        r.launch(m["part"], m["res_in"], out, res_out, {n: m[n] for n in r.weight_names(1)})  # slots: every row valid
        ref = mm.rank_reference("reduced", 1, 1, 0, inputs)
        assert torch.equal(ffn_rank.bits(out), ffn_rank.bits(ref["out"])) and bool(ffn_rank.bits(out).any())
        assert torch.equal(ffn_rank.bits(res_out), ffn_rank.bits(ref["res_out"]))
    r.close()
