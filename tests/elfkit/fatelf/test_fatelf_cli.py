"""`elfkit fatelf ...`: behaviour of every subcommand, good and bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from elfkit import fatelf
from elfkit import tools as cli
from tests.elfkit.fatelf.fatelf_inputs import (
    A64,
    ARCHES,
    BAD,
    X64,
    arch_elf,
    place,
    raw_fatelf,
    reference_fatelf,
)

SUBCOMMANDS = ["pack", "list", "extract", "split", "select", "remove", "replace", "verify"]


def run(capsys, *argv):
    """elfkit.tools.main in-process: (exit code, stdout, stderr)."""
    try:
        code = cli.main(["fatelf", *map(str, argv)])
    except SystemExit as e:  # argparse usage errors and --help
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def run_proc(*argv, cwd=None):
    return subprocess.run([sys.executable, "-m", "elfkit", "fatelf", *map(str, argv)],
                          capture_output=True, cwd=cwd, timeout=60)


@pytest.fixture
def six(tmp_path):
    """plugin.<arch>.so for the six arches and their FatELF."""
    paths = []
    for name in ARCHES:
        p = tmp_path / f"plugin.{name}.so"
        p.write_bytes(arch_elf(name))
        paths.append(p)
    return tmp_path, paths


def only(tmp_path, *names):
    return sorted(os.listdir(tmp_path)) == sorted(names)


# --------------------------------------------------------------------------

@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_every_subcommand_has_help(capsys, sub):
    code, out, _err = run(capsys, sub, "--help")
    assert code == 0 and "usage: elfkit fatelf " + sub in out


def test_fatelf_without_subcommand_prints_help(capsys):
    code, _out, err = run(capsys)
    assert code == 2 and "pack" in err and "verify" in err


def test_pack_list_extract_round_trip(capsys, six):
    d, paths = six
    out = d / "plugin.sos"
    code, o, e = run(capsys, "pack", "-o", out, *paths)
    assert code == 0, e
    assert out.read_bytes() == reference_fatelf([p.read_bytes() for p in paths])
    code, o, _ = run(capsys, "list", out)
    assert code == 0
    lines = o.splitlines()
    assert lines[0] == f"{out}: FatELF version 1, 6 record(s), {out.stat().st_size} bytes"
    assert lines[1].split() == ["#", "ARCH", "MACHINE", "CLASS", "ORDER", "OSABI", "ABIVER",
                                "OFFSET", "SIZE"]
    assert [ln.split()[1] for ln in lines[2:]] == list(ARCHES)
    assert "243 riscv" in o and "183 aarch64" in o
    for i, (name, p) in enumerate(zip(ARCHES, paths)):
        x = d / f"x.{name}.so"
        code, o, e = run(capsys, "extract", out, "--arch", name, "-o", x)
        assert code == 0, e
        assert x.read_bytes() == p.read_bytes()
        y = d / f"y.{name}.so"
        assert run(capsys, "extract", out, "--index", i, "-o", y)[0] == 0
        assert y.read_bytes() == p.read_bytes()


def test_list_json(capsys, six):
    d, paths = six
    fatelf.pack_to(d / "p.sos", paths)
    code, o, _ = run(capsys, "list", d / "p.sos", "--json")
    doc = json.loads(o)
    assert code == 0 and doc["fatelf"] is True and doc["version"] == 1
    assert [r["arch"] for r in doc["records"]] == list(ARCHES)
    assert {"index", "machine", "osabi", "osabi_version", "word_size", "byte_order", "offset",
            "size"} <= set(doc["records"][0])


def test_list_plain_elf(capsys, tmp_path):
    p = tmp_path / "a.so"
    p.write_bytes(arch_elf("arm"))
    code, o, _ = run(capsys, "list", p)
    assert code == 0 and "plain ELF" in o and " arm " in o


def test_pack_align_auto(capsys, tmp_path):
    a = tmp_path / "a.so"
    a.write_bytes(arch_elf("aarch64", p_align=65536))
    b = tmp_path / "b.so"
    b.write_bytes(arch_elf("x86_64"))
    assert run(capsys, "pack", "--align", "auto", "-o", tmp_path / "o.sos", a, b)[0] == 0
    assert [r.offset for r in fatelf.read(tmp_path / "o.sos").records] == [65536, 131072]
    assert run(capsys, "pack", "--align", "0x40", "-o", tmp_path / "p.sos", a, b)[0] == 0
    assert (tmp_path / "p.sos").read_bytes() == reference_fatelf([a.read_bytes(), b.read_bytes()], 64)
    code, _o, e = run(capsys, "pack", "--align", "1000", "-o", tmp_path / "q.sos", a, b)
    assert code == 2 and e.count("\n") == 1 and "power of two" in e
    assert not (tmp_path / "q.sos").exists()


def test_split(capsys, six):
    d, paths = six
    fatelf.pack_to(d / "plugin.sos", paths)
    outdir = d / "out"
    outdir.mkdir()
    code, o, e = run(capsys, "split", d / "plugin.sos", "-d", outdir)
    assert code == 0, e
    assert sorted(os.listdir(outdir)) == sorted(f"plugin.{n}.so" for n in ARCHES)
    for name, p in zip(ARCHES, paths):
        assert (outdir / f"plugin.{name}.so").read_bytes() == p.read_bytes()
    assert len(o.splitlines()) == 6


def test_select_to_stdout_reports_on_stderr(six):
    d, paths = six
    fatelf.pack_to(d / "p.sos", paths)
    r = run_proc("select", d / "p.sos", "--arch", "riscv32", "-o", "-")
    assert r.returncode == 0
    assert r.stdout == (d / "plugin.riscv32.so").read_bytes()
    assert r.stderr.decode().startswith("selected record 5: riscv32")


def test_select_host(capsys, six):
    from elfkit import arch
    if arch.host() is None or arch.host().name not in ARCHES:
        pytest.skip("unsupported host")
    d, paths = six
    fatelf.pack_to(d / "p.sos", paths)
    code, o, _ = run(capsys, "select", d / "p.sos", "-o", d / "h.so")
    assert code == 0 and o.startswith("selected record")
    assert (d / "h.so").read_bytes() == (d / f"plugin.{arch.host().name}.so").read_bytes()


def test_select_no_host_slice_and_fallback(capsys, tmp_path):
    from elfkit import arch
    h = arch.host()
    if h is None:
        pytest.skip("unsupported host")
    others = [n for n in ARCHES if n != h.name]
    src = tmp_path / "p.sos"
    src.write_bytes(fatelf.pack([arch_elf(n) for n in others]))
    code, _o, e = run(capsys, "select", src, "-o", tmp_path / "o.so")
    assert code == 2 and e.count("\n") == 1
    assert "no ELFs matching the runtime architecture or Linux ABI found in the FatELF" in e
    assert not (tmp_path / "o.so").exists()
    code, o, _ = run(capsys, "select", src, "--fallback", "-o", tmp_path / "o.so")
    assert code == 0
    best = fatelf.best(fatelf.read(src))
    assert (tmp_path / "o.so").read_bytes() == arch_elf(best.arch)


def test_remove_and_replace(capsys, six):
    d, paths = six
    fatelf.pack_to(d / "p.sos", paths)
    code, _o, e = run(capsys, "remove", d / "p.sos", "--arch", "arm64", "-o", d / "r.sos")
    assert code == 0, e
    rest = [p.read_bytes() for n, p in zip(ARCHES, paths) if n != "aarch64"]
    assert (d / "r.sos").read_bytes() == reference_fatelf(rest)
    new = d / "new.so"
    new.write_bytes(arch_elf("i386", 5000, seed=9))
    code, _o, e = run(capsys, "replace", d / "r.sos", new, "-o", d / "s.sos")
    assert code == 0, e
    expected = [new.read_bytes() if n == "i386" else p.read_bytes()
                for n, p in zip(ARCHES, paths) if n != "aarch64"]
    assert (d / "s.sos").read_bytes() == reference_fatelf(expected)
    code, _o, e = run(capsys, "replace", d / "r.sos", d / "plugin.aarch64.so", "-o", d / "t.sos")
    assert code == 2 and "no record matches" in e and e.count("\n") == 1
    assert not (d / "t.sos").exists()


def test_verify_exit_codes(capsys, tmp_path):
    good = tmp_path / "good.sos"
    good.write_bytes(fatelf.pack([X64, A64]))
    code, o, _ = run(capsys, "verify", good)
    assert code == 0 and o.strip() == f"{good}: OK"
    bad = tmp_path / "bad.sos"
    bad.write_bytes(place([(4096, X64)], raw_fatelf([(183, 0, 0, 2, 1, 4096, 700),
                                                     (62, 0, 0, 2, 1, 1 << 20, 5)])))
    code, o, _ = run(capsys, "verify", bad)
    assert code == 1
    assert "error: record 0 (aarch64) at offset 4096: the record says machine 183" in o
    assert "error: record 1 (x86_64) at offset 1048576: ELF file range out of bounds" in o
    code, o, _ = run(capsys, "verify", bad, "--json")
    assert code == 1 and len(json.loads(o)["problems"]) == 2
    junk = tmp_path / "junk.sos"
    junk.write_bytes(fatelf.pack([X64]) + b"xx")
    assert run(capsys, "verify", junk)[0] == 1
    unusable = tmp_path / "v2.sos"
    unusable.write_bytes(raw_fatelf([], version=2))
    code, o, e = run(capsys, "verify", unusable)
    assert code == 2 and o == "" and e.count("\n") == 1 and "version 2" in e
    code, _o, e = run(capsys, "verify", tmp_path / "missing.sos")
    assert code == 2 and e.count("\n") == 1


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_every_command(capsys, tmp_path, case):
    data, expected = BAD[case]
    src = tmp_path / "bad.sos"
    src.write_bytes(data)
    out = tmp_path / "out"
    ok = tmp_path / "ok.so"
    ok.write_bytes(X64)
    commands = [
        ("list", src),
        ("extract", src, "--index", "0", "-o", out),
        ("select", src, "--fallback", "-o", out),
        ("remove", src, "--index", "0", "-o", out),
        ("replace", src, ok, "-o", out),
        ("split", src, "-d", tmp_path),
    ]
    for argv in commands:
        code, o, e = run(capsys, *argv)
        assert code == 2, (argv, o, e)
        assert e.count("\n") == 1 and e.startswith("elfkit: error: "), e
        assert only(tmp_path, "bad.sos", "ok.so"), (argv, os.listdir(tmp_path))
    code, o, e = run(capsys, "verify", src)
    assert code in (1, 2)
    assert expected in (o + e)


def test_pack_bad_inputs_write_nothing(capsys, tmp_path):
    a = tmp_path / "a.so"
    a.write_bytes(X64)
    b = tmp_path / "b.so"
    b.write_bytes(arch_elf("x86_64", 999))
    txt = tmp_path / "t.txt"
    txt.write_bytes(b"just some text, definitely not an ELF file")
    out = tmp_path / "o.sos"
    for ins in [(a, b), (a, txt), (a, tmp_path / "missing.so"), (a, tmp_path)]:
        code, _o, e = run(capsys, "pack", "-o", out, *ins)
        assert code == 2 and e.count("\n") == 1, e
        assert not out.exists()
    assert only(tmp_path, "a.so", "b.so", "t.txt")


def test_output_errors_are_one_line(capsys, tmp_path):
    a = tmp_path / "a.so"
    a.write_bytes(X64)
    code, _o, e = run(capsys, "pack", "-o", tmp_path / "nodir" / "o.sos", a)
    assert code == 2 and e.count("\n") == 1
    code, _o, e = run(capsys, "pack", "-o", tmp_path, a)
    assert code == 2 and e.count("\n") == 1 and "directory" in e


def test_pack_to_stdout_subprocess(tmp_path):
    a = tmp_path / "a.so"
    a.write_bytes(arch_elf("riscv64"))
    r = run_proc("pack", "-o", "-", a)
    assert r.returncode == 0 and r.stdout == reference_fatelf([a.read_bytes()])
    assert b"packed 1 slice" in r.stderr
    bad = run_proc("list", tmp_path / "nope.sos")
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1 and bad.stdout == b""


def test_unknown_arch_is_one_line(capsys, six):
    d, paths = six
    fatelf.pack_to(d / "p.sos", paths)
    code, _o, e = run(capsys, "extract", d / "p.sos", "--arch", "mips", "-o", d / "x")
    assert code == 2 and e.count("\n") == 1 and "unknown architecture 'mips'" in e
    assert not (d / "x").exists()
