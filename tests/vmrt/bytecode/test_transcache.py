"""The translation cache (vmrt/bytecode/transcache.py): a second load of a
module reads its translation instead of translating again; entries that are
corrupt, renamed, or writable by others are ignored (the module is translated
again, with the same results); ``VMRT_NO_CACHE`` turns it off."""
from __future__ import annotations

import builtins
import gc
import os
import subprocess
import sys

import pytest

import vmrt
from tests.vmrt.iree_tools import REPO
from tests.vmrt.vmrt_testutil import needs_iree
from vmrt.bytecode import transcache
from vmrt.bytecode.format import flatbuffer_end, module_record, parse_module

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
    """The modules' entries (not the compiled code kept beside them)."""
    return sorted(p for p in where.glob("*.vmtc")
                  if not p.name.endswith(("-code.vmtc", "-src.vmtc"))) \
        if where.exists() else []


def _key_and_count(vmfb) -> tuple[bytes, int]:
    mod = vmrt.BytecodeModule.load(vmrt.Instance(), vmfb)
    data = vmfb.read_bytes()
    return (transcache.cache_key(data, "plain", flatbuffer_end(data)),
            len(mod.definition.functions))


def _codes(key: bytes) -> dict:
    """The compiled code kept for the module's cached translation."""
    entry = transcache.load(key)
    return transcache.load_code(key, entry[2]) if entry is not None else {}


_CHILD = ("import sys, vmrt\n"
          "inst = vmrt.Instance()\n"
          "m = vmrt.BytecodeModule.load(inst, sys.argv[1])\n"
          "with vmrt.Context(inst, [m]) as c:\n"
          "    print(int(c.invoke('module.collatz', [97])[0]))\n"
          "print('vmrt.bytecode.translate.codegen' in sys.modules)\n")


def test_second_load_uses_the_cache_and_skips_the_translator(compile_mlir, cache):
    vmfb = compile_mlir("control.mlir")
    assert _run(vmfb, 27) == _collatz_steps(27)
    [entry] = _entries(cache)
    assert entry.stat().st_mode & 0o077 == 0 and cache.stat().st_mode & 0o077 == 0
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(vmfb)], capture_output=True,
                         text=True, env=env, timeout=120, check=True).stdout.split()
    assert out == [str(_collatz_steps(97)), "False"]
    assert _entries(cache) == [entry]


def test_a_cached_load_neither_parses_nor_compiles_what_it_compiled_before(
        compile_mlir, cache, monkeypatch):
    vmfb = compile_mlir("control.mlir")
    assert _run(vmfb, 27) == _collatz_steps(27)      # parsed, translated, collatz compiled
    from vmrt.bytecode import module as bytecode_module
    from vmrt.bytecode.translate import namespace

    def refuse(*_a, **_k):
        raise AssertionError("parsed or compiled although cached")
    monkeypatch.setattr(bytecode_module, "parse_module", refuse)
    monkeypatch.setattr(namespace, "compile", refuse, raising=False)
    assert _run(vmfb, 31) == _collatz_steps(31)
    monkeypatch.undo()
    # the definition read from the cache is the one the parser makes
    cached = vmrt.BytecodeModule.load(vmrt.Instance(), vmfb).definition
    parsed = parse_module(vmfb.read_bytes())
    for name in ("name", "version", "requirements", "types", "dependencies", "imports",
                 "exports", "signatures", "signature_attrs", "global_bytes", "global_refs",
                 "functions", "bytecode_version", "rodata_spans", "bytecode_span"):
        assert getattr(cached, name) == getattr(parsed, name), name
    assert bytes(cached.bytecode) == bytes(parsed.bytecode)
    assert [bytes(x) for x in cached.rodata] == [bytes(x) for x in parsed.rodata]


def test_functions_are_compiled_on_first_call(compile_mlir, cache, monkeypatch):
    vmfb = compile_mlir("control.mlir")
    from vmrt.bytecode.translate import namespace
    compiled: list[str] = []

    def counting(src, *args):
        compiled.append(src.split("(")[0])
        return builtins.compile(src, *args)
    monkeypatch.setattr(namespace, "compile", counting, raising=False)
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    assert compiled == []                       # translated (verified), nothing compiled
    with vmrt.Context(inst, [mod]) as ctx:
        k = next(e.ordinal for e in mod.exports if e.name == "collatz")
        assert ctx.invoke("module.collatz", [27]) == [_collatz_steps(27)]
        assert f"def f{k}" in compiled
        n = len(compiled)
        assert ctx.invoke("module.collatz", [31]) == [_collatz_steps(31)]
        assert len(compiled) == n               # once
    assert n < len(mod.definition.functions)
    # the code compiled is kept in the cache (at the latest when the module goes),
    # and the next load of the module compiles none of it again
    key, _ = _key_and_count(vmfb)
    del mod, ctx
    gc.collect()
    assert k in _codes(key)
    compiled.clear()
    assert _run(vmfb, 9) == _collatz_steps(9)
    assert compiled == []


def test_code_compiled_from_another_translation_is_not_used(compile_mlir, cache, monkeypatch):
    # the module's entry is gone (pruned, damaged) but the code compiled from its
    # translation is still there: a new translation never runs that code (its
    # constant table could be laid out otherwise), it compiles its own
    vmfb = compile_mlir("control.mlir")
    assert _run(vmfb, 27) == _collatz_steps(27)
    key, _ = _key_and_count(vmfb)
    old = transcache.load(key)
    assert old is not None and transcache.load_code(key, old[2])
    _entries(cache)[0].unlink()
    from vmrt.bytecode.translate import namespace
    compiled: list[str] = []

    def counting(src, *args):
        compiled.append(src)
        return builtins.compile(src, *args)
    monkeypatch.setattr(namespace, "compile", counting, raising=False)
    assert _run(vmfb, 31) == _collatz_steps(31)
    assert compiled
    new = transcache.load(key)
    assert new is not None and new[2] != old[2] and transcache.load_code(key, old[2]) == {}


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


@pytest.mark.parametrize("part", ["module", "code"])
@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage", "empty", "renamed"])
def test_a_corrupt_entry_is_ignored_and_replaced(compile_mlir, cache, how, part):
    vmfb = compile_mlir("control.mlir")
    other = compile_mlir("func.func @f(%x: i32) -> i32 {\n  return %x : i32\n}\n",
                         name="ident")
    inst = vmrt.Instance()
    with vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, other)]) as ctx:
        assert ctx.invoke("module.f", [5]) == [5]
    [other_entry] = _entries(cache) if part == "module" else sorted(cache.glob("*-code.vmtc"))
    other_blob = other_entry.read_bytes()
    for p in cache.glob("*.vmtc"):
        p.unlink()
    assert _run(vmfb, 27) == _collatz_steps(27)
    [entry] = _entries(cache) if part == "module" else sorted(cache.glob("*-code.vmtc"))
    key, _ = _key_and_count(vmfb)
    _corrupt(entry, how, other_blob)
    if part == "module":
        assert transcache.load(key) is None
    else:
        assert _codes(key) == {}
    assert _run(vmfb, 31) == _collatz_steps(31)
    if part == "module":
        assert transcache.load(key) is not None        # translated again and rewritten
    else:
        assert _codes(key) != {}                       # compiled again and rewritten


def _plant_wrong_entry(vmfb) -> tuple[bytes, int]:
    """A well-formed entry under the module's key whose functions all return 999."""
    key, n = _key_and_count(vmfb)
    record = module_record(parse_module(vmfb.read_bytes()))
    transcache.store(key, record, [], [f"def f{i}(s, *a):\n    return (999,)\n"
                                       for i in range(n)], transcache.cache_dir())
    return key, n


@pytest.mark.parametrize("what", ["file", "directory"])
def test_an_entry_others_can_write_is_not_read(compile_mlir, cache, what):
    vmfb = compile_mlir("control.mlir")
    _plant_wrong_entry(vmfb)
    [entry] = _entries(cache)
    target = entry if what == "file" else cache
    os.chmod(target, 0o666 if what == "file" else 0o777)
    assert _run(vmfb, 27) == _collatz_steps(27)


def test_a_planted_entry_is_what_runs(compile_mlir, cache):
    # (the entry really is what a cached load runs: the checks above are what keep it out)
    vmfb = compile_mlir("control.mlir")
    _plant_wrong_entry(vmfb)
    assert _run(vmfb, 27) == 999


def test_no_cache_reads_and_writes_nothing(compile_mlir, cache, monkeypatch):
    vmfb = compile_mlir("control.mlir")
    _plant_wrong_entry(vmfb)
    [entry] = _entries(cache)
    monkeypatch.setenv("VMRT_NO_CACHE", "1")
    assert _run(vmfb, 27) == _collatz_steps(27)
    for planted in cache.glob("*.vmtc"):        # the entry and its sources
        planted.unlink()
    assert _run(vmfb, 27) == _collatz_steps(27)
    assert list(cache.glob("*.vmtc")) == []


def test_a_damaged_module_is_refused_at_load_though_its_twin_is_cached(compile_mlir, cache):
    # a cache entry exists only for a module that loaded: the damaged copy has
    # another key, is parsed and translated, and fails at load as uncached
    vmfb = compile_mlir("control.mlir")
    assert _run(vmfb, 27) == _collatz_steps(27)
    data = vmfb.read_bytes()
    mod = parse_module(data)
    k = next(e.internal_ordinal for e in mod.exports if e.local_name == "sumsq")
    pos = mod.bytecode_span[0] + mod.functions[k].bytecode_offset
    bad = data[:pos + 1] + b"\xff" + data[pos + 2:]
    for _ in range(2):
        with pytest.raises(vmrt.VerifyError) as ei:
            vmrt.BytecodeModule(vmrt.Instance(), bad)
        assert str(ei.value) == "INVALID_ARGUMENT; unknown opcode 0xff; at module.sumsq+00000001"
    end = flatbuffer_end(data)
    assert end is not None
    for cut in (end // 3, end - 1):            # truncated inside the FlatBuffer
        with pytest.raises(vmrt.VmError):
            vmrt.BytecodeModule(vmrt.Instance(), data[:cut])


def test_the_cache_stays_under_its_bound(compile_mlir, cache, monkeypatch):
    monkeypatch.setenv("VMRT_CACHE_MAX_BYTES", str(64 << 10))
    for i in range(12):
        vmfb = compile_mlir(f"func.func @f(%x: i32) -> i32 {{\n  %c = arith.constant {i} : i32\n"
                            f"  %y = arith.addi %x, %c : i32\n  return %y : i32\n}}\n",
                            name=f"add{i}")
        for _ in range(2):          # translated, then cached (or pruned and translated again)
            inst = vmrt.Instance()
            with vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, vmfb)]) as ctx:
                assert ctx.invoke("module.f", [5]) == [5 + i]
    assert sum(p.stat().st_size for p in cache.iterdir()) <= 64 << 10


def test_keys_differ_by_module_and_variant():
    a, b = b"module a", b"module b"
    assert transcache.cache_key(a, "plain") == transcache.cache_key(a, "plain")
    assert transcache.cache_key(a, "plain") != transcache.cache_key(b, "plain")
    assert transcache.cache_key(a, "plain") != transcache.cache_key(a, "trace")


def test_external_rodata_contents_do_not_key_the_module(hal_compile, cache):
    # the dispatch library lies after the FlatBuffer (external rodata): only the
    # file's length keys it; every byte before the FlatBuffer's end counts
    vmfb = hal_compile("elementwise.mlir")
    data = vmfb.read_bytes()
    end = flatbuffer_end(data)
    spans = parse_module(data).rodata_spans
    assert end is not None and any(off >= end for off, _ in spans)
    off, n = max(spans)
    assert off >= end
    other = data[:off] + bytes(n) + data[off + n:]
    key = transcache.cache_key(data, "plain", end)
    assert transcache.cache_key(other, "plain", end) == key
    assert transcache.cache_key(data + b"\0", "plain", end) != key
    flipped = bytearray(data)
    flipped[end - 1] ^= 1
    assert transcache.cache_key(bytes(flipped), "plain", end) != key


def test_embedded_rodata_is_read_from_each_module(compile_mlir, cache):
    # two modules that differ only in an embedded rodata segment's bytes each read their own
    vmfb = compile_mlir("vmops2.mlir", "--compile-mode=vm")
    data = vmfb.read_bytes()
    mod = vmrt.BytecodeModule.load(vmrt.Instance(), vmfb)
    [(off, n)] = [s for s, seg in zip(mod.definition.rodata_spans, mod.definition.rodata)
                  if bytes(seg) == b"0123456789"]
    assert data[off:off + n] == b"0123456789"
    other = vmfb.with_name("other.vmfb")
    other.write_bytes(data[:off] + b"abcdefghij" + data[off + n:])
    for _ in range(2):
        for path, text in ((vmfb, b"0123456789"), (other, b"abcdefghij")):
            inst = vmrt.Instance()
            with vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, path)]) as ctx:
                assert [int(ctx.invoke(f"{mod.name}.globref", [i])[0])
                        for i in range(10)] == list(text)


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




@pytest.mark.parametrize("cached", [False, True])
def test_a_function_with_a_bad_ordinal_is_refused_at_load_with_the_translators_error(
        tmp_path, cache, monkeypatch, cached):
    # g's call names function 99: the decoder accepts the encoding, the load-time
    # checks (translate/checks.py) refuse the ordinal -- at load, as IREE's verifier
    # does, though g is translated only on its first call, with the very error the
    # whole-module translation gives; and every load after it (no cache entry is kept)
    from tests.vmrt.vmrt_testutil import assemble, caller_module
    from vmrt.bytecode.translate.codegen import translate_module
    good = assemble(caller_module("lazy"), tmp_path / "m.vmfb").read_bytes()
    d = parse_module(good)
    k = next(e.internal_ordinal for e in d.exports if e.local_name == "g")
    fd = d.functions[k]
    pos = d.bytecode_span[0] + fd.bytecode_offset
    body = good[pos:pos + fd.bytecode_length]
    call = body.index(b"\x58")
    bad = good[:pos + call + 1] + (99).to_bytes(4, "little") + good[pos + call + 5:]
    if not cached:
        monkeypatch.setenv("VMRT_NO_CACHE", "1")
    with pytest.raises(vmrt.VerifyError) as want:
        names = {e.internal_ordinal: e.local_name for e in d.exports}
        translate_module(parse_module(bad), lambda i: f"lazy.{names[i]}")
    assert str(want.value).endswith(
        f"function ordinal 99 out of range (2); at lazy.g+{call:08X}")
    for _ in range(2):
        with pytest.raises(vmrt.VerifyError) as got:
            vmrt.BytecodeModule(vmrt.Instance(), bad)
        assert str(got.value) == str(want.value)
    assert _entries(cache) == []
    inst = vmrt.Instance()
    with vmrt.Context(inst, [vmrt.BytecodeModule(inst, good)]) as ctx:
        assert ctx.invoke("lazy.g", [5]) == [15]
    gc.collect()
    assert len(_entries(cache)) == (1 if cached else 0)
    inst = vmrt.Instance()       # the good module's cached load is not fooled by the bad one
    with pytest.raises(vmrt.VerifyError):
        vmrt.BytecodeModule(inst, bad)


def test_functions_translated_later_join_the_cached_entry(compile_mlir, cache, monkeypatch):
    vmfb = compile_mlir("control.mlir")
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    with vmrt.Context(inst, [mod]) as ctx:
        assert ctx.invoke("module.collatz", [27]) == [_collatz_steps(27)]
    key, n = _key_and_count(vmfb)
    names = {e.name: e.ordinal for e in mod.exports}
    del mod, ctx
    gc.collect()
    first = transcache.load(key)
    assert first is not None
    first_src = transcache.load_sources(key, first[2], n)
    assert first_src is not None
    assert first_src[names["collatz"]] is not None and first_src[names["sumsq"]] is None
    # a cached load translates sumsq on its first call; then the entry holds both
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    with vmrt.Context(inst, [mod]) as ctx:
        assert ctx.invoke("module.sumsq", [4]) == [0 + 1 + 4 + 9]
    del mod, ctx
    gc.collect()
    second = transcache.load(key)
    assert second is not None and second[2] != first[2]
    second_src = transcache.load_sources(key, second[2], n)
    assert second_src is not None
    assert all(second_src[names[x]] is not None for x in ("collatz", "sumsq"))
    assert {names["collatz"], names["sumsq"]} <= set(transcache.load_code(key, second[2]))
    # and the next load compiles (and translates) neither
    from vmrt.bytecode.translate import namespace

    def refuse(*_a, **_k):
        raise AssertionError("compiled although cached")
    monkeypatch.setattr(namespace, "compile", refuse, raising=False)
    inst = vmrt.Instance()
    with vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, vmfb)]) as ctx:
        assert ctx.invoke("module.collatz", [31]) == [_collatz_steps(31)]
        assert ctx.invoke("module.sumsq", [5]) == [0 + 1 + 4 + 9 + 16]


def test_a_load_whose_code_is_kept_reads_no_sources(compile_mlir, cache, monkeypatch):
    vmfb = compile_mlir("control.mlir")
    assert _run(vmfb, 27) == _collatz_steps(27)
    assert len(list(cache.glob("*-src.vmtc"))) == 1

    def refuse(*_a, **_k):
        raise AssertionError("sources read although the code is kept")
    monkeypatch.setattr(transcache, "load_sources", refuse)
    assert _run(vmfb, 31) == _collatz_steps(31)


@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage", "empty", "missing"])
def test_damaged_sources_are_translated_again(compile_mlir, cache, how):
    vmfb = compile_mlir("control.mlir")
    assert _run(vmfb, 27) == _collatz_steps(27)
    for code in cache.glob("*-code.vmtc"):      # the code gone: the sources are needed
        code.unlink()
    [src] = cache.glob("*-src.vmtc")
    if how == "missing":
        src.unlink()
    else:
        _corrupt(src, how, b"")
    key, n = _key_and_count(vmfb)
    entry = transcache.load(key)
    assert entry is not None and transcache.load_sources(key, entry[2], n) is None
    assert _run(vmfb, 31) == _collatz_steps(31)
    gc.collect()
    entry = transcache.load(key)          # translated again and kept again
    assert entry is not None
    kept = transcache.load_sources(key, entry[2], n)
    assert kept is not None and any(s is not None for s in kept)


def test_a_function_is_a_stand_in_named_for_it_until_its_first_call(compile_mlir, cache):
    vmfb = compile_mlir("control.mlir")
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    k = next(e.ordinal for e in mod.exports if e.name == "collatz")
    fns = mod.translated(False)
    assert len(fns) == len(mod.definition.functions)
    assert [f.__name__ for f in fns] == [f"f{i}" for i in range(len(fns))]
    assert not hasattr(fns[k], "__code__")          # not compiled yet
    with vmrt.Context(inst, [mod]) as ctx:
        assert ctx.invoke("module.collatz", [27]) == [_collatz_steps(27)]
    assert fns[k].__code__.co_name == f"f{k}"       # the stand-in replaced by the function
