"""``vmrt executable imports`` and the report of a missing-import error.

The import names expected are read from the MLIR source of the program
(each private function declaration is an import, named by
``hal.import.name`` when it has one); what each variant plugin provides
is what its compile-time ``PROVIDES`` bits say (data/variant_plugin.c).
"""
from __future__ import annotations

import io
import re

import pytest

from tests.plugins import REPO
from tests.vmrt.hal.local.plugins.conftest import Variants
from vmrt import ImportResolutionError
from vmrt.hal.local.executable import Executable
from vmrt.hal.local.plugins.manager import PluginManager
from vmrt.tools.executable import main

SIMPLE_MUL = REPO / "examples" / "simple_mul.mlir"


def _mlir_imports(path) -> list[str]:
    text = path.read_text()
    names = []
    for m in re.finditer(r"func\.func private @(\w+)\((?:[^{]*)\{([^}]*)\}", text):
        override = re.search(r'hal\.import\.name = "([^"]+)"', m.group(2))
        names.append(override.group(1) if override else m.group(1))
    return sorted(names)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(map(str, argv)), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def _rows(out: str) -> dict[str, str]:
    names = _mlir_imports(SIMPLE_MUL)
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] in names:
            rows[parts[0]] = line
    assert sorted(rows) == names, out
    return rows


@pytest.fixture(scope="module")
def muls():
    """x10 provides simple_mul_workgroup, x100 that and echo_params, echoes only echo_params."""
    pytest.importorskip("ziglang", reason="the variant plugins are built with the ziglang wheel")
    variants = Variants()
    return (variants.path("x86_64", factor=10.0, name="x10", provides=1),
            variants.path("x86_64", factor=100.0, name="x100", provides=3),
            variants.path("x86_64", name="echoes", provides=2))


def test_imports_of_a_program_newest_first(iree, muls):
    x10, x100, _ = muls
    vmfb = iree.compile("simple_mul", "x86_64").vmfb
    rc, out, err = run("imports", vmfb, f"--executable_plugin=embedded:{x10}",
                       f"--executable_plugin=embedded:{x100}")
    assert rc == 0, err
    assert "providers searched newest first:" in out
    listed = re.findall(r"^  \[(\d)\] plugin '(\w+)'", out, re.M)
    assert listed == [("1", "x100"), ("2", "x10")]
    rows = _rows(out)
    assert "<- [1] plugin 'x100'" in rows["simple_mul_workgroup"]
    assert "shadows [2]" in rows["simple_mul_workgroup"]
    # no variant with bit 2: the optional import is left NULL, and that is fine
    assert "left NULL (optional): no provider has it" in rows["?vmrt_optional_probe"]


def test_imports_missing_ends_with_not_found(iree, muls):
    _, _, echoes = muls
    lib = iree.compile("simple_mul", "x86_64").library
    rc, out, err = run("imports", lib, f"--executable_plugin=embedded:{echoes}")
    assert rc == 1
    rows = _rows(out)
    assert "MISSING (required): no provider has it" in rows["simple_mul_workgroup"]
    assert err == "NOT_FOUND; 1 required import(s) missing: simple_mul_workgroup\n"


def test_imports_says_why_a_host_library_was_skipped(iree, system_plugin, emulation):
    lib = iree.compile("simple_mul", "aarch64").library
    rc, out, err = run("imports", lib, f"--executable_plugin=system:{system_plugin}")
    assert rc == 1
    rows = _rows(out)
    assert ("[1] skipped: a host library cannot serve emulated aarch64 code"
            in rows["simple_mul_workgroup"])


def test_missing_import_error_carries_the_report(iree, muls):
    _, _, echoes = muls
    with PluginManager() as manager, pytest.raises(ImportResolutionError) as ei:
        manager.register(str(echoes))
        Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=manager)
    err = ei.value
    first, *report = err.message.splitlines()
    assert first == ("executable 'simple_mul_linked' is missing 1 required import(s): "
                     "simple_mul_workgroup")
    assert err.report.missing == ["simple_mul_workgroup"]
    assert report[0].startswith("executable 'simple_mul_linked' (x86_64, native)")
    assert sorted(a.name for a in err.report.answers) == _mlir_imports(SIMPLE_MUL)
