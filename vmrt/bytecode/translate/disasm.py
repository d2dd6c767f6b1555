"""Execution-trace lines: one decoded instruction rendered the way IREE's
runtime prints it when built with execution tracing
(``[module.function+OFFSET]    %i2 = vm.add.i32 %i0(5), %i1(7)``).

:func:`trace_line` turns an instruction into a ``%``-format string and the
Python expressions of the values it shows (operand registers as read before
the instruction runs, globals loaded); the translator (codegen.py, trace
mode) emits ``TW(K[n] % (values,))`` before the instruction.  Results show
their register names only, as IREE's do.  :func:`ref_text` and
:func:`list_value` format the values at run time.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

from ...vm.types import type_of
from ..decoder import MOVE_BIT, REF_BIT, Instr

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

IMPORT_BIT = 0x80000000
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def ref_text(v: Any) -> str:
    """A ref register's value as IREE prints it: ``null`` or ``!type/0xADDR``."""
    if v is None:
        return "null"
    t = type_of(v)
    return f"!{t.name if t is not None else type(v).__name__}/{id(v):#x}"


def list_value(v: Any) -> str:
    """A value in a register list (call arguments, returns, branch operands):
    IREE prints the register's 32-bit slot unsigned, or the ref."""
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v & 0xFFFFFFFF)
    if isinstance(v, float):
        try:
            return str(_U32.unpack(_F32.pack(v))[0])
        except OverflowError:
            return str(v)
    return ref_text(v)


class _Line:
    """A trace line under construction: literal text and value slots."""

    def __init__(self, local: Callable[[int], str]):
        self.local = local          # register raw number -> its Python local
        self.parts: list[str] = []
        self.exprs: list[str] = []

    def text(self, s: str) -> None:
        self.parts.append(s.replace("%", "%%"))

    def value(self, fmt: str, expr: str) -> None:
        self.parts.append(fmt)
        self.exprs.append(expr)

    def name(self, raw: int, bank: str | None = None) -> None:
        if raw & REF_BIT:
            self.text(f"%{'R' if raw & MOVE_BIT else 'r'}{raw & 0x3FFF}")
        elif bank in ("i64", "f64"):
            self.text(f"%i{raw}:{raw + 1}")
        else:
            self.text(f"%i{raw}")

    def operand(self, raw: int, bank: str | None) -> None:
        """A typed operand: its name and ``(value)``."""
        self.name(raw, bank)
        reg = self.local(raw)
        if raw & REF_BIT:
            self.value("(%s)", f"TREF({reg})")
        elif bank in ("f32", "f64"):
            self.value("(%f)", reg)
        else:
            self.value("(%d)", reg)

    def reg_list(self, regs: tuple[Any, ...], with_values: bool = True) -> None:
        for n, raw in enumerate(regs):
            if n:
                self.text(", ")
            self.name(raw)
            if with_values:
                self.value("(%s)", f"TLIST({self.local(raw & ~MOVE_BIT)})")

    def remap(self, target: int, pairs: tuple[Any, ...]) -> None:
        self.text(f"^{target:08X}(")
        for n, (src, dst) in enumerate(pairs):
            if n:
                self.text(", ")
            self.name(src)
            self.value("(%s)", f"TLIST({self.local(src & ~MOVE_BIT)})")
            self.text("->")
            self.name(dst)
        self.text(")")


class TraceNames:
    """What a trace line needs to know about the module: function and
    import names, type names."""

    def __init__(self, module_name: str, functions: dict[int, str], imports: list[str],
                 types: list[str]):
        self.module_name = module_name
        self.functions = functions
        self.imports = imports
        self.types = types

    def callee(self, ordinal: int) -> str:
        if ordinal & IMPORT_BIT:
            k = ordinal & ~IMPORT_BIT
            return self.imports[k] if k < len(self.imports) else f"import:{k}"
        n = self.functions.get(ordinal)
        return f"{self.module_name}.{n}" if n else f"{self.module_name}:{ordinal}"

    def type_name(self, k: int) -> str:
        return self.types[k].lstrip("!") if k < len(self.types) else "*"


def trace_line(ins: Instr, label: str, names: TraceNames,
               local: Callable[[int], str]) -> tuple[str, list[str]]:
    """The format string (ending in a newline) and value expressions of the
    trace line of ``ins`` in the function labelled ``label``."""
    line = _Line(local)
    line.text(f"[{label}+{ins.pc:08X}]    ")
    m = ins.mnemonic
    f = ins.fields
    special = _SPECIAL.get(m) or next((fn for p, fn in _PREFIXED if m.startswith(p)), None)
    if special is not None:
        special(line, ins, f, names)
    else:
        _generic(line, ins, names)
    line.text("\n")
    return "".join(line.parts), line.exprs


def _generic(line: _Line, ins: Instr, names: TraceNames) -> None:
    """``results = vm.op operand(value), ...``: the shape of most ops."""
    writes = [(v, d) for v, d in zip(ins.fields, ins.defs)
              if d[1] in ("register", "variadic_results") and d[3] == "write"]
    for n, (v, d) in enumerate(writes):
        if n:
            line.text(", ")
        line.name(v, d[2])
    line.text((" = " if writes else "") + f"vm.{ins.mnemonic}")
    first = True
    for v, d in zip(ins.fields, ins.defs):
        kind = d[1]
        if kind in ("register", "variadic_results") and d[3] == "write":
            continue
        line.text(" " if first else ", ")
        first = False
        if kind == "register":
            line.operand(v, d[2])
        elif kind == "variadic_operands":
            line.reg_list(v)
        elif kind == "type_of":
            line.text("!" + names.type_name(v))
        elif kind == "string_attr":
            line.text(f'"{v}"')
        elif kind in ("attribute",):
            line.text(f"{v:f}" if isinstance(v, float) else str(v))
        else:
            line.text(str(v))


def _const(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    m = ins.mnemonic
    if m.endswith(".zero"):
        line.name(f[0], m.split(".")[1])
        line.text(f" = vm.{m}")
        return
    if m == "const.ref.rodata":
        line.name(f[1])
        line.text(f" = vm.const.ref.rodata {f[0]}")
        return
    line.name(f[1], m.split(".")[1])
    line.text(f" = vm.{m} " + (f"{f[0]:f}" if isinstance(f[0], float) else str(f[0])))


def _global(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    m = ins.mnemonic
    width = m.rsplit(".", 1)[1]
    load = ".load." in m
    if m.startswith(("global.load.indirect", "global.store.indirect")):
        _generic(line, ins, names)
        return
    if width == "ref":
        slot, ty, reg = f
        where = f".refs[{slot}]"
        if load:
            line.name(reg)
            line.text(f" = vm.{m} {where}")
            line.value("(%s)", f"TREF(GR[{slot}])")
        else:
            line.text(f"vm.{m} ")
            line.operand(reg, "ref")
            line.text(f", {where}")
        line.text(" : !" + names.type_name(ty))
        return
    off, reg = f
    if load:
        line.name(reg, width)
        line.text(f" = vm.{m} .rwdata[{off}]")
        line.value("(%f)" if width[0] == "f" else "(%d)", f"UN_{width}(RW, {off})[0]")
    else:
        line.text(f"vm.{m} ")
        line.operand(reg, width)
        line.text(f", .rwdata[{off}]")


def _branch(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    m = ins.mnemonic
    if m in ("br", "yield", "break"):
        line.text(f"vm.{m} ")
        line.remap(f[0], f[1])
    elif m == "cond_br":
        line.text("vm.cond_br ")
        line.operand(f[0], "i32")
        line.text(", ")
        line.remap(f[1], f[2])
        line.text(", ")
        line.remap(f[3], f[4])
    elif m == "cond_break":
        line.text("vm.cond_break ")
        line.operand(f[0], "i32")
        line.text(", ")
        line.remap(f[1], f[2])
    else:   # br_table
        idx, dflt, dremap, _n, cases = f
        line.text("vm.br_table ")
        line.operand(idx, "i32")
        line.text(" { default: ")
        line.remap(dflt, dremap)
        for k, (t, rm) in enumerate(cases):
            line.text(f", {k}: ")
            line.remap(t, rm)
        line.text(" }")


def _call(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    m = ins.mnemonic
    callee = f[0]
    args = f[2] if "variadic" in m else f[1]
    results = f[-1]
    if results:
        line.reg_list(results, with_values=False)
        line.text(" = ")
    # IREE spells the variadic call "vm.call.varadic"
    op = {"call": "vm.call", "call.variadic": "vm.call.varadic"}.get(m, f"vm.{m}")
    line.text(f"{op} @{names.callee(callee)}(")
    line.reg_list(args)
    line.text(")")


def _return(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    line.text("vm.return ")
    line.reg_list(f[0])


def _fail(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    line.text("vm.fail ")
    line.operand(f[0], "i32")
    line.text(f', "{f[1]}"')


def _import_resolved(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    line.name(f[1])
    line.text(f" = vm.import.exists @{names.callee(f[0])} // ")
    k = f[0] & ~IMPORT_BIT
    line.value("(%s)", f"('unresolved' if state.imports[{k}] is None else 'resolved')")


def _buffer_store(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    """IREE prints the stored value first: ``vm.buffer.store.i32 value, buffer, offset``."""
    banks = [d[2] for d in ins.defs]
    line.text(f"vm.{ins.mnemonic} ")
    for n, k in enumerate((2, 0, 1)):
        if n:
            line.text(", ")
        line.operand(f[k], banks[k])


def _debug(line: _Line, ins: Instr, f: tuple[Any, ...], names: TraceNames) -> None:
    line.text(f'vm.{ins.mnemonic} "{f[0]}"(')
    line.reg_list(f[1])
    line.text(")")


_SPECIAL: dict[str, Callable[..., None]] = {
    "br": _branch, "cond_br": _branch, "br_table": _branch, "yield": _branch,
    "break": _branch, "cond_break": _branch,
    "call": _call, "call.variadic": _call, "call.yieldable": _call,
    "call.variadic.yieldable": _call, "return": _return, "fail": _fail,
    "import.resolved": _import_resolved, "trace": _debug, "print": _debug,
}
_PREFIXED: tuple[tuple[str, Callable[..., None]], ...] = (
    ("const.", _const), ("global.load.", _global), ("global.store.", _global),
    ("buffer.store.", _buffer_store))


__all__ = ["TraceNames", "list_value", "ref_text", "trace_line"]
