"""A TP = 2 launch from Python on CPU tensors (the Sim device), reduced config: two Python
processes, one a rank (this one rank 0, a child rank 1), exchanging their handle bytes through a
pipe as a framework does with all_gather_object. On every rank out and res_out equal the C++
reference (launchReferenceOutputs for that rank) bit for bit, launch after launch, through each
way in: FfnRunner.launch, the torch op, the op under torch.jit.trace (torch 1.13 has no
torch.compile), and the functional op traced; the launch's input is the default, the attention rows
(o_proj in the launch). And a rank whose peer never launches gets a monogen.RuntimeError naming
the peer, launch after launch (the error word is cleared). TP = 1 in this process runs both scale
layouts and both inputs (the o_proj partial, input="part", too)."""
import os
import sys

import pytest

import ffn_rank
from pipe_group import run_ranks

TP = 2
LAUNCHES = 3


def run(how, seed, input=None):
    argv = [sys.executable, os.path.join(os.path.dirname(__file__), "ffn_rank.py"), how, str(TP), str(LAUNCHES), str(seed),
            input or "default"]
    if how == "absent":
        return run_ranks(TP, argv, lambda group: ffn_rank.run_absent_peer(group, TP, seed))
    return run_ranks(TP, argv, lambda group: ffn_rank.run_rank(group, how, TP, LAUNCHES, seed, input))


@pytest.mark.parametrize("how,seed", [("launch", 40), ("op", 50), ("traced", 60), ("functional", 70)])
def test_tp2_bit_exact_launch_after_launch(how, seed):
    ranks = run(how, seed)
    for r in ranks:
        print(f"{how} rank {r['rank']}: {r['total_seconds']:.1f} s, launches "
              + ", ".join(f"{v['seconds']:.2f} s" for v in r["verdicts"]) + "; " + "; ".join(r["progress"]))
        assert len(r["verdicts"]) == LAUNCHES
        assert r["progress"] and all("ready" in line for line in r["progress"])
        # nothing declared: the attention rows in (the C++ default), o_proj's weights among the weights, a default key
        assert r["input"] == "attn" and {"wo", "wo_scale"} <= set(r["weight_names"]), r["weight_names"]
        assert not any("input=" in line for line in r["progress"]), r["progress"]
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



@pytest.mark.parametrize("scales,input", [("e8m0_shuffle", "attn"), ("rowmajor", "attn"), ("e8m0_shuffle", "part")])
def test_tp1_in_one_process_with_a_progress_callback(scales, input):
    """TP=1, the scales held in either layout, the launch's input either one (the attention rows,
    o_proj in the launch; or the o_proj partial): the runner's declarations pick the variant that
    reads them, bit-exact launch after launch; fed the other layout's bytes (a wrong declaration),
    out is no longer the reference's."""
    import torch
    import monogen.minimax_m3 as mm
    lines = []
    r = mm.FfnRunner("reduced", 1, 0, rows=[1], progress=lines.append, scales=scales, input=input)
    r.allocate()
    r.open_peers([r.export_handle()])
    r.peers_opened()
    assert r.warm_up() == lines and len(lines) == 1 and "S1-TP1" in lines[0] and "ready" in lines[0], lines
    assert ("scales=rowmajor" in lines[0]) == (scales == "rowmajor"), lines
    assert ("input=part" in lines[0]) == (input == "part"), lines
    assert r.input == input and ({"wo", "wo_scale"} <= set(r.weight_names(1))) == (input == "attn"), r.weight_names(1)
    other = "rowmajor" if scales == "e8m0_shuffle" else "e8m0_shuffle"
    for seed in (90, 91):
        inputs = mm.make_launch_inputs("reduced", 1, 1, seed, scales=scales, input=input)
        m = mm.rank_inputs(inputs, 0)
        out, res_out = torch.zeros_like(m["res_in"]), torch.zeros_like(m["res_in"])
        r.launch(m[input], m["res_in"], out, res_out, {n: m[n] for n in r.weight_names(1)})  # slots: every row valid
        ref = mm.rank_reference("reduced", 1, 1, 0, inputs, scales=scales, input=input)
        assert torch.equal(ffn_rank.bits(out), ffn_rank.bits(ref["out"])) and bool(ffn_rank.bits(out).any())
        assert torch.equal(ffn_rank.bits(res_out), ffn_rank.bits(ref["res_out"]))
    wrong = mm.rank_inputs(mm.make_launch_inputs("reduced", 1, 1, 92, scales=other, input=input), 0)
    out = torch.zeros_like(wrong["res_in"])
    r.launch(wrong[input], wrong["res_in"], out, torch.zeros_like(wrong["res_in"]), {n: wrong[n] for n in r.weight_names(1)})
    ref = mm.rank_reference("reduced", 1, 1, 0, mm.make_launch_inputs("reduced", 1, 1, 92, scales=scales, input=input),
                            scales=scales, input=input)
    assert not torch.equal(ffn_rank.bits(out), ffn_rank.bits(ref["out"])), "the two layouts' bytes gave the same out"
    r.close()


def test_two_threads_on_one_runner_are_serialized():
    """Two threads launching on one runner, each its own inputs: the launches are serialized
    (FfnRunner.launch), so each thread's out is its own inputs' reference, bit for bit."""
    import threading
    import torch
    import monogen.minimax_m3 as mm
    r = mm.FfnRunner("reduced", 1, 0, rows=[1])
    r.allocate()
    r.open_peers([r.export_handle()])
    r.peers_opened()
    r.warm_up()
    results, errors = {}, []

    def worker(seed):
        try:
            inputs = mm.make_launch_inputs("reduced", 1, 1, seed)
            m = mm.rank_inputs(inputs, 0)
            ref = mm.rank_reference("reduced", 1, 1, 0, inputs)
            same = []
            for _ in range(2):
                out, res_out = torch.zeros_like(m["res_in"]), torch.zeros_like(m["res_in"])
                r.launch(m["attn"], m["res_in"], out, res_out, {n: m[n] for n in r.weight_names(1)})
                same.append(torch.equal(ffn_rank.bits(out), ffn_rank.bits(ref["out"])) and bool(ffn_rank.bits(out).any()))
            results[seed] = same
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in (101, 102)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r.close()
    assert not errors, errors
    assert results == {101: [True, True], 102: [True, True]}, results


def test_a_padded_batch_gives_its_rows_unpadded_results():
    """One row padded to the warmed S = 2 (FfnRunner.pad: a zero row, slot -1): the valid row's
    out and res_out equal the S = 1 reference of that row bit for bit (the padded row is
    computed and ignored by the MoE; its outputs are not the caller's to read)."""
    import torch
    import monogen.minimax_m3 as mm
    r = mm.FfnRunner("reduced", 1, 0, rows=[2])
    r.allocate()
    r.open_peers([r.export_handle()])
    r.peers_opened()
    r.warm_up()
    inputs = mm.make_launch_inputs("reduced", 1, 1, 110)
    m = mm.rank_inputs(inputs, 0)
    ref = mm.rank_reference("reduced", 1, 1, 0, inputs)
    x, res_in, slots = r.pad(m["attn"], m["res_in"])
    assert slots.tolist() == [0, -1]
    fill = torch.full((2, m["res_in"].shape[1]), 7.0, dtype=torch.bfloat16)
    out, res_out = fill.clone(), fill.clone()
    r.launch(x, res_in, out, res_out, {n: m[n] for n in r.weight_names(2)}, slots=slots)
    r.close()
    assert torch.equal(ffn_rank.bits(out[:1]), ffn_rank.bits(ref["out"])) and bool(ffn_rank.bits(out[:1]).any())
    assert torch.equal(ffn_rank.bits(res_out[:1]), ffn_rank.bits(ref["res_out"]))
