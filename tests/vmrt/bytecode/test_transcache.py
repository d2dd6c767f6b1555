"""The translation cache (vmrt/bytecode/transcache.py): a second load of a
module reads its translation instead of translating again; entries that are
corrupt, renamed, or writable by others are ignored (the module is translated
again, with the same results); ``VMRT_NO_CACHE`` turns it off."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import vmrt
from tests.vmrt.iree_tools import REPO
from tests.vmrt.vmrt_testutil import needs_iree
from vmrt.bytecode import transcache

pytestmark = needs_iree


def _collatz_steps(x: int) -> int:
    steps = 0
    while x > 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def _run(vmfb, x: int) -> int:
    inst = vmrt.Instance()
    with vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, vmfb)]) as ctx:
        return int(ctx.invoke("module.collatz", [x])[0])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    where = tmp_path / "vmrt-cache"
    monkeypatch.setenv("VMRT_CACHE_DIR", str(where))
    monkeypatch.delenv("VMRT_NO_CACHE", raising=False)
    return where


def _entries(where) -> list:
    return sorted(where.glob("*.vmtc")) if where.exists() else []


def _key_and_count(vmfb) -> tuple[bytes, int]:
    mod = vmrt.BytecodeModule.load(vmrt.Instance(), vmfb)
    return transcache.cache_key(vmfb.read_bytes(), "plain"), len(mod.definition.functions)


def test_second_load_uses_the_cache_and_skips_the_translator(compile_mlir, cache):
    vmfb = compile_mlir("control.mlir")
    assert _run(vmfb, 27) == _collatz_steps(27)
    [entry] = _entries(cache)
    assert entry.stat().st_mode & 0o077 == 0 and cache.stat().st_mode & 0o077 == 0
    prog = ("import sys, vmrt\n"
            "inst = vmrt.Instance()\n"
            "m = vmrt.BytecodeModule.load(inst, sys.argv[1])\n"
            "with vmrt.Context(inst, [m]) as c:\n"
            "    print(int(c.invoke('module.collatz', [97])[0]))\n"
            "print('vmrt.bytecode.translate.codegen' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", prog, str(vmfb)], capture_output=True,
                         text=True, env=env, timeout=120, check=True).stdout.split()
    assert out == [str(_collatz_steps(97)), "False"]
    assert _entries(cache) == [entry]


def _corrupt(path, how: str, other: bytes) -> None:
    blob = path.read_bytes()
    if how == "truncated":
        path.write_bytes(blob[:len(blob) // 2])
    elif how == "flipped":
        path.write_bytes(blob[:-10] + bytes([blob[-10] ^ 0x40]) + blob[-9:])
    elif how == "garbage":
        path.write_bytes(os.urandom(len(blob)))
    elif how == "empty":
        path.write_bytes(b"")
    else:                       # another module's entry under this key
        path.write_bytes(other)


@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage", "empty", "renamed"])
def test_a_corrupt_entry_is_ignored_and_replaced(compile_mlir, cache, how):
    vmfb = compile_mlir("control.mlir")
    other = compile_mlir("func.func @f(%x: i32) -> i32 {\n  return %x : i32\n}\n",
                         name="ident")
    inst = vmrt.Instance()
    vmrt.BytecodeModule.load(inst, other)
    [other_entry] = _entries(cache)
    other_blob = other_entry.read_bytes()
    other_entry.unlink()
    assert _run(vmfb, 27) == _collatz_steps(27)
    [entry] = _entries(cache)
    key, n = _key_and_count(vmfb)
    _corrupt(entry, how, other_blob)
    assert transcache.load(key, n) is None
    assert _run(vmfb, 31) == _collatz_steps(31)
    assert transcache.load(key, n) is not None        # translated again and rewritten


def _plant_wrong_entry(vmfb) -> tuple[bytes, int]:
    """A well-formed entry under the module's key whose functions all return 999."""
    key, n = _key_and_count(vmfb)
    code = compile("\n".join(f"def f{i}(s, *a):\n    return (999,)" for i in range(n)),
                   "<planted>", "exec")
    transcache.store(key, code, [], [""] * n)
    return key, n


@pytest.mark.parametrize("what", ["file", "directory"])
def test_an_entry_others_can_write_is_not_read(compile_mlir, cache, what):
    vmfb = compile_mlir("control.mlir")
    _plant_wrong_entry(vmfb)
    [entry] = _entries(cache)
    target = entry if what == "file" else cache
    os.chmod(target, 0o666 if what == "file" else 0o777)
    assert _run(vmfb, 27) == _collatz_steps(27)


def test_no_cache_reads_and_writes_nothing(compile_mlir, cache, monkeypatch):
    vmfb = compile_mlir("control.mlir")
    _plant_wrong_entry(vmfb)
    [entry] = _entries(cache)
    monkeypatch.setenv("VMRT_NO_CACHE", "1")
    assert _run(vmfb, 27) == _collatz_steps(27)
    entry.unlink()
    assert _run(vmfb, 27) == _collatz_steps(27)
    assert _entries(cache) == []


def test_keys_differ_by_module_and_variant():
    a, b = b"module a", b"module b"
    assert transcache.cache_key(a, "plain") == transcache.cache_key(a, "plain")
    assert transcache.cache_key(a, "plain") != transcache.cache_key(b, "plain")
    assert transcache.cache_key(a, "plain") != transcache.cache_key(a, "trace")


def test_rodata_contents_do_not_key_the_translation(compile_mlir, cache):
    # two modules that differ only in a rodata segment's bytes share one translation
    # (the translated code reads the segment at run time), and each reads its own data
    vmfb = compile_mlir("vmops2.mlir", "--compile-mode=vm")
    data = vmfb.read_bytes()
    mod = vmrt.BytecodeModule.load(vmrt.Instance(), vmfb)
    [(off, n)] = [s for s, seg in zip(mod.definition.rodata_spans, mod.definition.rodata)
                  if bytes(seg) == b"0123456789"]
    assert data[off:off + n] == b"0123456789"
    other = vmfb.with_name("other.vmfb")
    other.write_bytes(data[:off] + b"abcdefghij" + data[off + n:])
    n_funcs = len(mod.definition.functions)
    spans = mod.definition.rodata_spans
    assert transcache.cache_key(data, "plain", spans) == \
        transcache.cache_key(other.read_bytes(), "plain", spans)
    assert transcache.cache_key(data, "plain", spans) != transcache.cache_key(data, "plain")
    # ... and bytes outside the rodata still make another key
    flipped = bytearray(data)
    flipped[off - 1] ^= 1
    assert transcache.cache_key(bytes(flipped), "plain", spans) != \
        transcache.cache_key(data, "plain", spans)
    assert transcache.load(transcache.cache_key(data, "plain", spans), n_funcs) is not None
    for path, text in ((vmfb, b"0123456789"), (other, b"abcdefghij")):
        inst = vmrt.Instance()
        with vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, path)]) as ctx:
            assert [int(ctx.invoke(f"{mod.name}.globref", [i])[0]) for i in range(10)] == list(text)
    assert len(_entries(cache)) == 1


def test_the_key_covers_every_translator_source_file():
    """The translator lives in a subpackage (vmrt/bytecode/translate): its files
    count in the key like the format's and the VM's (a change to any of them
    picks another key, so a translation made before is a miss)."""
    root = REPO / "vmrt"
    want = sorted(p.relative_to(root).as_posix() for pkg in ("bytecode", "vm")
                  for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)
    listed = [name for pkg in ("bytecode", "vm")
              for name, _size, _mtime in transcache.source_files(str(root), pkg)]
    assert sorted(listed) == want
    assert "bytecode/translate/codegen.py" in listed and "bytecode/translate/emitters.py" in listed
    for name, size, mtime in transcache.source_files(str(root), "bytecode"):
        st = (root / name).stat()
        assert (size, mtime) == (st.st_size, st.st_mtime_ns)
