"""On the fake HIP library (tests/fake_hip, libmonogen_fake_hip.so: host memory, launches
nothing): an eager caller passing fresh out / res_out tensors every step keeps the runner's bound
launches bounded (FfnRunner.kMaxBound, 64), over 10,000 launches. torch 1.13 on CPU has no GPU
tensors, so the tensors are stand-ins with device "cuda:0" over host memory."""
import os
import types

import pytest
import torch

import monogen
import monogen.minimax_m3 as mm

FAKE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(monogen.__file__))), "tests",
                    "libmonogen_fake_hip.so")


class Cuda:
    """A torch tensor seen as a GPU tensor on cuda:0 (what the runner reads of a tensor)."""

    def __init__(self, t):
        self.t, self.dtype, self.shape = t, t.dtype, t.shape
        self.device = types.SimpleNamespace(type="cuda", index=0)

    def stride(self):
        return self.t.stride()

    def element_size(self):
        return self.t.element_size()

    def data_ptr(self):
        return self.t.data_ptr()


@pytest.mark.skipif(not os.path.exists(FAKE), reason=f"no fake HIP library at {FAKE} (build monogen_fake_hip)")
def test_fresh_outputs_every_launch_keep_the_bound_launches_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("MONOGEN_HIP_LIBRARY", FAKE)
    monkeypatch.setenv("MONOGEN_CACHE_DIR", str(tmp_path / "cache"))
    r = mm.FfnRunner("reduced", 1, 0, rows=[1], device="hip")
    r.allocate()
    r.open_peers([r.export_handle()])
    r.peers_opened()
    r.warm_up()
    m = mm.rank_inputs(mm.make_launch_inputs("reduced", 1, 1, 5), 0)
    fixed = {n: Cuda(m[n]) for n in r.weight_names(1)}
    x, res_in, slots = Cuda(m["attn"]), Cuda(m["res_in"]), Cuda(m["slots"])
    pool = torch.zeros((200, 2) + tuple(m["res_in"].shape), dtype=m["res_in"].dtype)  # 200 distinct output pairs
    for k in range(10_000):
        out, res_out = pool[k % 200]
        r.launch(x, res_in, Cuda(out), Cuda(res_out), fixed, slots=slots, stream=0)
        assert r._c.bound_count <= 64
    assert r._c.bound_count == 64
    # a tensor on another GPU than the runner's is refused, naming both
    other = Cuda(pool[0][0])
    other.device = types.SimpleNamespace(type="cuda", index=1)
    with pytest.raises(monogen.InputError, match=r"argument 'out': on .*cuda:1: this runner launches on cuda:0"):
        r.launch(x, res_in, other, Cuda(pool[0][1]), fixed, slots=slots, stream=0)
    r.close()


@pytest.mark.skipif(not os.path.exists(FAKE), reason=f"no fake HIP library at {FAKE} (build monogen_fake_hip)")
def test_the_layer_launches_on_hip_with_its_caches_bound_in_place(tmp_path, monkeypatch):
    """LayerRunner on HIP: the layer's code object compiled at warm-up, then launch after launch
    enqueued on the given stream (the fake library's stream log records each), one bound launch
    for one set of tensors; a cache on another GPU is refused, naming both."""
    log = tmp_path / "streams.log"
    monkeypatch.setenv("MONOGEN_HIP_LIBRARY", FAKE)
    monkeypatch.setenv("MONOGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MONOGEN_FAKE_HIP_STREAM_LOG", str(log))
    r = mm.LayerRunner("reduced", 1, 0, rows=[2], device="hip")
    r.allocate()
    r.open_peers([r.export_handle()])
    r.peers_opened()
    lines = r.warm_up()
    print(lines)
    assert len(lines) == 1 and "ready" in lines[0] and "bytes" in lines[0], lines
    m = mm.rank_inputs(mm.make_layer_steps("reduced", 2, 1, 31)[0]["inputs"], 0)
    g = {n: Cuda(t) for n, t in m.items()}
    out, res_out = Cuda(torch.zeros_like(m["x"])), Cuda(torch.zeros_like(m["x"]))
    weights = {n: g[n] for n in r.weight_names(2)}
    state = [g[n] for n in mm.LAYER_CACHES + mm.LAYER_METADATA]
    for _ in range(3):
        r.launch(g["x"], g["res"], out, res_out, weights, *state, stream=0)
    assert r._c.bound_count == 1
    launches = [line for line in log.read_text().splitlines() if line.split()[1] == "launch"]
    assert len(launches) == 3, log.read_text()
    other = Cuda(m["kv_cache"])
    other.device = types.SimpleNamespace(type="cuda", index=1)
    with pytest.raises(monogen.InputError, match=r"argument 'kv_cache': on .*cuda:1: this runner launches on cuda:0"):
        r.launch(g["x"], g["res"], out, res_out, weights, other, *state[1:], stream=0)
    r.close()
