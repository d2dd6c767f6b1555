"""Import resolution explained: ``elfkit inspect --imports-from`` and the
report the missing-import error carries.

The expected answers are worked out here from pyelftools' view of the
files (the plugin's undefined symbols, each provider's defined ones) and
the rule "newest provider first": the first that has a name answers, the
older ones that have it too are shadowed.
"""
from __future__ import annotations

import ctypes.util
import io
import json
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from elfkit.toolchain import compile_plugin

PROVIDER_A = """\
#include <stdint.h>
#define EXPORT __attribute__((visibility("default")))
EXPORT int32_t host_add(int32_t a, int32_t b) { return a + b; }
EXPORT void host_log(int32_t code) { (void)code; }
"""
PROVIDER_B = """\
#include <stdint.h>
#define EXPORT __attribute__((visibility("default")))
EXPORT int32_t host_add(int32_t a, int32_t b) { return 1000 + a + b; }
EXPORT double host_scale(double x, float s) { return x * s; }
"""
USES_LIBM = """\
#define EXPORT __attribute__((visibility("default")))
extern double cos(double);
EXPORT double call_cos(double x) { return cos(x); }
"""


def _build(tmp, name: str, source: str, arch: str = "x86_64"):
    src = tmp / f"{name}.c"
    src.write_text(source)
    return compile_plugin(src, arch, tmp / f"{name}_{arch}.so", cflags=["-fno-builtin"])


@pytest.fixture(scope="module")
def providers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("providers")
    return _build(tmp, "prov_a", PROVIDER_A), _build(tmp, "prov_b", PROVIDER_B)


def _dynsym(path, defined: bool) -> dict[str, bool]:
    """name -> weak, of the defined (or undefined) dynamic symbols."""
    e = ELFFile(io.BytesIO(path.read_bytes()))
    return {s.name: s["st_info"]["bind"] == "STB_WEAK"
            for s in e.get_section_by_name(".dynsym").iter_symbols()
            if s.name and (s["st_shndx"] != "SHN_UNDEF") == defined}


def _expected(plugin, provider_paths) -> dict[str, tuple[str | None, list[str]]]:
    """import -> (label of the answering provider, labels shadowed), newest first."""
    newest_first = [(f"plugin {p}", _dynsym(p, True)) for p in reversed(provider_paths)]
    out = {}
    for name in _dynsym(plugin, False):
        having = [label for label, names in newest_first if name in names]
        out[name] = (having[0] if having else None, having[1:])
    return out


def _inspect(*args):
    return subprocess.run([sys.executable, "-m", "elfkit", "inspect", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_inspect_explains_answers_and_shadowing(plugins, providers):
    plugin = plugins.path("imports", "x86_64")
    r = _inspect(plugin, "--json", "--imports-from", *providers)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)["resolution"]
    assert [p["label"] for p in res["providers"]] == [f"plugin {p}" for p in reversed(providers)]
    got = {i["name"]: (i["provider"], i["shadowed"]) for i in res["imports"]}
    assert got == _expected(plugin, list(providers))
    # the weak import nobody has: left 0, not missing
    weak = [i for i in res["imports"] if i["optional"]]
    assert weak and all(not i["missing"] and i["provider"] is None for i in weak)
    # the same as text: one line per import, providers numbered newest first
    r = _inspect(plugin, "--imports-from", *providers)
    assert r.returncode == 0
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.startswith("  host_")}
    assert f"<- [1] plugin {providers[1]}; shadows [2]" in lines["host_add"]
    assert f"<- [2] plugin {providers[0]}" in lines["host_log"]
    assert "left 0 (weak): no provider has it" in lines["host_optional"]


def test_inspect_names_the_missing_ones(plugins, providers):
    plugin = plugins.path("imports", "x86_64")
    r = _inspect(plugin, "--json", "--imports-from", providers[0])
    assert r.returncode == 1
    info = json.loads(r.stdout)
    missing = [i["name"] for i in info["resolution"]["imports"] if i["missing"]]
    assert missing == [n for n, weak in _dynsym(plugin, False).items()
                       if not weak and n not in _dynsym(providers[0], True)]
    assert not info["loadable"] and any("host_scale" in p for p in info["problems"])
    r = _inspect(plugin, "--imports-from", plugin.parent / "no_such.so")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no_such.so" in r.stderr


def test_host_library_serves_native_code_only(tmp_path):
    libm = ctypes.util.find_library("m")
    if libm is None:
        pytest.skip("no C math library on this host")
    for arch, answered in (("x86_64", True), ("aarch64", False)):
        plugin = _build(tmp_path, "uses_libm", USES_LIBM, arch)
        r = _inspect(plugin, "--json", "--imports-from", f"system:{libm}")
        res = json.loads(r.stdout)["resolution"]
        (cos,) = [i for i in res["imports"] if i["name"] == "cos"]
        if answered:
            assert r.returncode == 0 and cos["provider"] == f"SystemLibrary('{libm}')"
        else:
            assert r.returncode == 1 and cos["missing"]
            assert cos["refused"] == [{"provider": f"SystemLibrary('{libm}')",
                                       "reason": "a host library cannot serve emulated code"}]


@pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                    reason="loads the providers natively on an x86_64 host")
def test_missing_import_error_carries_the_report(plugins, providers):
    with elfkit.load(providers[0]) as prov_a:
        imports = elfkit.Imports(prov_a, {"host_log": (lambda code: None, "void(i32)")})
        with pytest.raises(elfkit.UnresolvedImportError) as ei:
            elfkit.load(plugins.path("imports", "x86_64"), imports=imports)
    err = ei.value
    first, *rest = str(err).splitlines()
    assert first == "1 required import(s) not found: host_scale"
    assert err.names == ["host_scale"] and err.report.missing == ["host_scale"]
    answers = {a.name: a for a in err.report.answers}
    labels = [p.label for p in err.report.providers]
    assert labels[answers["host_log"].provider] == "{host_log}"          # the newest
    assert labels[answers["host_add"].provider].startswith("module ")    # the older module
    assert answers["host_optional"].optional and answers["host_optional"].provider is None
    assert any(line.split()[0] == "host_scale" and "MISSING" in line for line in rest)
