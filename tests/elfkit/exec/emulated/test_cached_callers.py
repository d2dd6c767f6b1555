"""The emulated backend's generated callers and callbacks are compiled through
elfkit._support.codecache.compile_cached: a second process compiles none of them, and
an entry that is damaged, or planted where others could write it, is ignored
(the call still gives the right answer, from code compiled again)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from elfkit._support import codecache

pytest.importorskip("unicorn")

#: loads the imports plugin emulated, calls through a caller and a callback;
#: prints the results and the (source, filename) of each generated function compiled
_PROGRAM = r"""
import builtins, json, sys
import elfkit
compiled = []
real_compile = builtins.compile
def counting(source, filename, *args, **kwargs):
    if str(filename).startswith("<elfkit call"):
        compiled.append([source, filename])
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting
imports = {"host_add": (lambda a, b: 10 * a + b, "i32(i32,i32)"),
           "host_log": (lambda c: None, "void(i32)"),
           "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}
with elfkit.load(sys.argv[1], imports=imports, backend="emulated") as m:
    results = [m.call("call_host_add", 2, 3),
               m.function("call_host_scale", "f64(f64,f32)")(1.5, 4.0)]
print(json.dumps({"results": results, "compiled": compiled}))
"""
RIGHT = [23, 6.0]
REPO = Path(__file__).resolve().parents[4]


@pytest.fixture
def where(tmp_path):
    return tmp_path / "elfkit-cache"


def _run(plugins, where, **env) -> tuple[list, list[tuple[str, str]]]:
    full = {k: v for k, v in os.environ.items() if k != "ELFKIT_NO_CACHE"}
    full.update(PYTHONPATH=str(REPO), ELFKIT_CACHE_DIR=str(where), **env)
    out = subprocess.run([sys.executable, "-c", _PROGRAM, str(plugins.path("imports", "aarch64"))],
                         capture_output=True, text=True, env=full, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    return got["results"], [tuple(c) for c in got["compiled"]]


def _entries(where) -> list:
    return sorted(where.glob("code-*.bin")) if where.exists() else []


def test_the_second_process_compiles_no_caller(plugins, where):
    results, compiled = _run(plugins, where)
    assert results == RIGHT
    names = {filename for _source, filename in compiled}
    assert any(n.startswith("<elfkit call ") for n in names)          # callers
    assert any(n.startswith("<elfkit callback ") for n in names)      # Python imports
    assert len(_entries(where)) == len(set(compiled))
    assert _run(plugins, where) == (RIGHT, [])
    assert _run(plugins, where, ELFKIT_NO_CACHE="1") == (RIGHT, compiled)


@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage", "empty", "swapped"])
def test_damaged_entries_are_compiled_again(plugins, where, how):
    _results, compiled = _run(plugins, where)
    entries = _entries(where)
    blobs = [p.read_bytes() for p in entries]
    for i, path in enumerate(entries):
        blob = blobs[i]
        path.write_bytes({"truncated": blob[:len(blob) // 2], "empty": b"",
                          "flipped": blob[:-50] + bytes([blob[-50] ^ 2]) + blob[-49:],
                          "garbage": os.urandom(len(blob)),
                          "swapped": blobs[(i + 1) % len(blobs)]}[how])
    results, again = _run(plugins, where)
    assert results == RIGHT and sorted(again) == sorted(compiled)
    assert [p.read_bytes() for p in entries] == blobs                  # rewritten whole


#: a caller that returns 999 whatever it is asked (what a planted entry would run)
_WRONG = "def __call(*args, timeout=None, budget=None):\n    return 999\n"


def _plant_wrong_caller(where, compiled) -> str:
    [(source, filename)] = [c for c in compiled if c[1] == "<elfkit call call_host_scale>"]
    name, key = codecache.code_entry(source, filename)
    codecache.store(str(where), name, key, compile(_WRONG, filename, "exec"))
    return name


def test_a_planted_private_entry_is_the_one_callers_read(plugins, where):
    # the planted entry sits exactly where the caller's code is looked up (so the
    # permission tests below can fail): a private one is trusted as __pycache__ is
    _results, compiled = _run(plugins, where)
    _plant_wrong_caller(where, compiled)
    assert _run(plugins, where)[0] == [23, 999]


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_planted_entry_others_can_write_is_not_read(plugins, where, what):
    _results, compiled = _run(plugins, where)
    name = _plant_wrong_caller(where, compiled)
    os.chmod(where / name if what == "file" else where, 0o666 if what == "file" else 0o777)
    assert _run(plugins, where)[0] == RIGHT
