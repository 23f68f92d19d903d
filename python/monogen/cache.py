"""The code-object cache (runtime/Cache.h) from Python: what `monogen cache ls / verify / clear`
do (tools/CmdCache.cpp), through the same C++ calls, and fill (compile a deployment's variants
into the cache ahead of serving). `dir` defaults to $MONOGEN_CACHE_DIR, else ~/.cache/monogen."""
import dataclasses
import os

from . import _monogen


@dataclasses.dataclass
class CacheFile:
    """One "<digest>.co" entry; problem is "" when it checks out as a load would check it."""
    path: str
    digest: str
    key_text: str
    bytes: int
    hits: int
    age_seconds: float
    idle_seconds: float
    problem: str

    @property
    def variant(self):
        """The key text's first line: "minimax_m3.ffn v1 S=2 TP=2 ..."."""
        return self.key_text.split("\n", 1)[0]


def default_dir():
    return _monogen.cache_default_dir()


def list(dir=None):  # noqa: A001 (the CLI's verb)
    """Every entry, oldest first (temp files killed writers left are removed first, as `ls` does)."""
    d = dir or default_dir()
    if not os.path.isdir(d):
        return []
    _monogen.cache_remove_stale_temps(d)
    return [CacheFile(**f) for f in _monogen.cache_scan(d)]


def verify(dir=None):
    """The entries that fail the check (an empty list: every entry is good)."""
    return [f for f in list(dir) if f.problem]


def clear(dir=None):
    """Removes every entry (and the cache's lock, hit and temp files); how many entries went."""
    d = dir or default_dir()
    return _monogen.cache_clear(d) if os.path.isdir(d) else 0


def fill(config, tp, rows, dir=None, scales="e8m0_shuffle", input="attn"):
    """Compiles (or finds) the code objects of S in `rows` at TP `tp`, the variants
    FfnRunner(config, tp, ..., scales=scales, input=input) launches: [(variant, source)], source
    "compiled", "disk" or "memory"."""
    return _monogen.cache_fill(config, tp, [int(r) for r in rows], dir or "", scales, input)
