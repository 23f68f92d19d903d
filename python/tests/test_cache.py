"""monogen.cache: fill (compile a variant into a cache directory), list, verify, clear, through
the C++ cache API, on a private temporary directory (never the user's cache)."""
import os

import pytest

import monogen.cache as cache


def test_fill_list_verify_clear(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    assert cache.list(str(d)) == [] and cache.verify(str(d)) == []
    made = cache.fill("reduced", 2, [1], str(d))
    assert made == [("minimax_m3.ffn-S1-TP2", "compiled")]
    assert cache.fill("reduced", 2, [1], str(d))[0][1] == "disk"  # a new process would find it there
    files = cache.list(str(d))
    assert len(files) == 1
    f = files[0]
    assert f.problem == "" and f.bytes > 0 and "S=1" in f.variant and "TP=2" in f.variant
    assert f.hits == 1 and os.path.basename(f.path) == f.digest + ".co"
    assert cache.verify(str(d)) == []

    # a flipped payload byte: verify names the file and the reason; a load would not use it
    raw = bytearray(open(f.path, "rb").read())
    raw[-1] ^= 0xFF
    open(f.path, "wb").write(bytes(raw))
    bad = cache.verify(str(d))
    assert len(bad) == 1 and bad[0].path == f.path and "checksum" in bad[0].problem, bad

    assert cache.clear(str(d)) == 1
    assert cache.list(str(d)) == [] and os.listdir(d) == []


def test_missing_directory(tmp_path):
    assert cache.list(str(tmp_path / "none")) == [] and cache.clear(str(tmp_path / "none")) == 0


def test_the_package_imports_cache_and_fill_takes_the_runner_declarations(tmp_path):
    """`import monogen` is enough for monogen.cache; fill compiles the variant a runner built with
    scales= / input= launches (its name says so), not only the default one."""
    import subprocess
    import sys
    code = "import monogen; print(monogen.cache.fill.__name__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert r.returncode == 0 and r.stdout.strip() == "fill", r.stderr
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    made = cache.fill("reduced", 1, [1], str(d), scales="rowmajor", input="part")
    assert len(made) == 1 and "scales=rowmajor" in made[0][0] and "input=part" in made[0][0], made
    import monogen
    with pytest.raises(monogen.InputError, match=r"monogen.cache.fill, input"):
        cache.fill("reduced", 1, [1], str(d), input="o_proj")
