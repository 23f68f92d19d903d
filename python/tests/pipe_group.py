"""A two-or-more-process group over pipes standing in for torch.distributed's CPU process group:
all_gather_object and barrier, the two calls a framework makes around monogen's handle exchange
(monogen opens no sockets); run_ranks runs a test's ranks, set_up a runner's load-time steps. The parent is rank 0 and the hub; each child talks to it over its
stdin/stdout (pickled frames; a child prints to stderr only)."""
import os
import pickle
import struct
import subprocess
import sys


def _send(f, obj):
    data = pickle.dumps(obj)
    f.write(struct.pack("<I", len(data)) + data)
    f.flush()


def _recv(f):
    head = f.read(4)
    if len(head) < 4:
        raise RuntimeError("pipe group: the other process is gone (its pipe closed)")
    (n,) = struct.unpack("<I", head)
    return pickle.loads(f.read(n))


class ParentGroup:
    """Rank 0, in this process; ranks 1 .. world-1 are child processes running `argv` + [rank]."""

    def __init__(self, world, argv, env=None):
        self.rank, self.world = 0, world
        self.kids = [subprocess.Popen(argv + [str(r)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=env or os.environ.copy()) for r in range(1, world)]

    def all_gather_object(self, output, obj):
        output[0] = obj
        for r, k in enumerate(self.kids, 1):
            output[r] = _recv(k.stdout)
        for k in self.kids:
            _send(k.stdin, list(output))

    def barrier(self):
        self.all_gather_object([None] * self.world, None)

    def results(self, timeout=600):
        """Each child's last object (its result) and exit code."""
        out = []
        for k in self.kids:
            res = _recv(k.stdout)
            out.append((res, k.wait(timeout)))
        return out

    def kill(self):
        for k in self.kids:
            if k.poll() is None:
                k.kill()
                k.wait()


class ChildGroup:
    """A child's end: rank `rank` of `world`, over this process's stdin/stdout."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self._in, self._out = sys.stdin.buffer, sys.stdout.buffer
        sys.stdout = sys.stderr  # prints must not land in the frames

    def all_gather_object(self, output, obj):
        _send(self._out, obj)
        output[:] = _recv(self._in)

    def barrier(self):
        self.all_gather_object([None] * self.world, None)

    def result(self, obj):
        _send(self._out, obj)


def run_ranks(world, argv, mine):
    """Rank 0's body `mine(group)` here, ranks 1 .. world-1 as children running `argv` + [rank]:
    [rank 0's result, the children's ...]; a child's error or non-zero exit fails the caller."""
    group = ParentGroup(world, argv)
    try:
        results = [mine(group)]
        theirs = group.results()
    finally:
        group.kill()
    for res, code in theirs:
        assert "error" not in res, res["error"]
        assert code == 0
        results.append(res)
    return results


def set_up(runner, group):
    """What a framework does at model load after building a runner: allocate, all_gather_object
    the handle bytes, open the peers, barrier, peers_opened, warm up; returns the progress lines."""
    runner.allocate()
    handles = [None] * group.world
    group.all_gather_object(handles, runner.export_handle())
    runner.open_peers(handles)
    group.barrier()
    runner.peers_opened()
    return runner.warm_up()
