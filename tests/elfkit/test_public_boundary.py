"""vmrt uses elfkit through its public modules only (issue 28.4).

Every ``import``/``from ... import`` of elfkit in vmrt's sources (at module level,
in functions and under ``TYPE_CHECKING``) and every ``elfkit.a.b`` attribute chain
is read with :mod:`ast`: the module must be one of :data:`PUBLIC`; a name taken from
a module with an ``__all__`` must be in it (or be one of the public modules); no
private name (``_x``).  So ``elfkit.exec.emulated``, ``elfkit.exec.base`` or
``elfkit._support.records`` cannot creep back into vmrt.
"""
from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

#: the elfkit modules code outside elfkit may import
PUBLIC = frozenset({"elfkit", "elfkit.exec", "elfkit.arch", "elfkit.signature", "elfkit.fatelf",
                    "elfkit.loader", "elfkit.errors", "elfkit.support"})


def _is_module(name: str) -> bool:
    """``name`` is a module or package of elfkit's sources (not a name in one)."""
    path = REPO / pathlib.Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _check_name(module: str, name: str) -> str | None:
    """What is wrong with using ``module.name``, or None."""
    if name.startswith("_") and not name.startswith("__"):
        return f"private name {module}.{name}"
    full = f"{module}.{name}"
    exported = getattr(importlib.import_module(module), "__all__", None)
    if exported is not None and name in exported:
        return None
    if _is_module(full):
        return None if full in PUBLIC else f"internal module {full}"
    if exported is not None:
        return f"{full} is not in {module}.__all__"
    return None


def _check_module(module: str) -> str | None:
    if module in PUBLIC:
        return None
    return f"internal module {module}"


def _dotted(node: ast.expr) -> list[str] | None:
    """``elfkit.a.b`` as ["elfkit", "a", "b"], else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "elfkit":
        return ["elfkit", *reversed(parts)]
    return None


def violations(source: str, filename: str = "<source>") -> list[str]:
    """Every use of an elfkit module or name in ``source`` that is not public."""
    found: list[str] = []

    def note(line: int, problem: str | None) -> None:
        if problem:
            found.append(f"{filename}:{line}: {problem}")

    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "elfkit":
                    note(node.lineno, _check_module(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "elfkit":
            problem = _check_module(node.module)
            note(node.lineno, problem)
            if problem is None:
                for alias in node.names:
                    note(node.lineno, _check_name(node.module, alias.name))
        elif isinstance(node, ast.Attribute) and not isinstance(getattr(node, "ctx", None),
                                                                ast.Store):
            parts = _dotted(node)
            if parts is None:
                continue
            # down the public modules, then the name used in the last one
            module = "elfkit"
            for part in parts[1:]:
                if f"{module}.{part}" in PUBLIC:
                    module = f"{module}.{part}"
                    continue
                note(node.lineno, _check_name(module, part))
                break
    return sorted(set(found))


def test_vmrt_uses_only_public_elfkit():
    problems: list[str] = []
    files = sorted((REPO / "vmrt").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        problems += violations(path.read_text(), str(path.relative_to(REPO)))
    assert problems == []


@pytest.mark.parametrize(("source", "expect"), [
    ("from elfkit.exec.base import PROT_READ", "internal module elfkit.exec.base"),
    ("def f():\n    from elfkit.exec.emulated import gdbstub",
     "internal module elfkit.exec.emulated"),
    ("from elfkit._support.records import DataRecord", "internal module elfkit._support.records"),
    ("from elfkit.exec import unicorn_lib", "internal module elfkit.exec.unicorn_lib"),
    ("from elfkit.exec import NativeMachine", "elfkit.exec.NativeMachine is not in"),
    ("from elfkit import _version", "private name elfkit._version"),
    ("import elfkit.tools.run", "internal module elfkit.tools.run"),
    ("import elfkit\nelfkit.exec.emulated.EmulatedMachine", "internal module elfkit.exec.emulated"),
    ("import elfkit\nx = elfkit._support", "private name elfkit._support"),
    ("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from elfkit.module import Module",
     "internal module elfkit.module"),
])
def test_the_check_finds_internal_uses(source, expect):
    found = violations(source)
    assert len(found) == 1 and expect in found[0], found


@pytest.mark.parametrize("source", [
    "import elfkit\nelfkit.load\nelfkit.loader.parse\nelfkit.__version__",
    "from elfkit import ElfkitError, fatelf",
    "from elfkit.exec import PROT_EXEC, PROT_READ, create_machine, host_fpu",
    "from elfkit.support import DataRecord, codecache, field, lazy_names",
    "from elfkit.arch import get, host",
])
def test_the_check_accepts_public_uses(source):
    assert violations(source) == []
