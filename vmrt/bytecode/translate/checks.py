"""The checks of a function's instructions against the module's tables and
calling conventions that IREE's verifier makes at load: rodata, type, global,
import and function ordinals in range, call and return registers matching the
cconv.  :func:`check_instructions` runs them over a decoded function without
translating it (at load, while translation waits for the first call); the
translator, an :class:`InstrChecks` too, runs the same ones as it emits.
Errors are :class:`VerifyError` naming the function and the pc."""
from __future__ import annotations

from collections.abc import Callable

from ...errors import VerifyError
from ...vm.module import cconv_fragments
from ..decoder import REF_BIT, Block, Instr
from .disasm import IMPORT_BIT
from .info import ModuleInfo

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["InstrChecks", "check_arguments", "check_instructions"]

#: the byte widths of the global load/store families
_GLOBAL_WIDTHS = {"i32": 4, "i64": 8, "f32": 4, "f64": 8}


class InstrChecks:
    """The checks, on the module ``mod`` and the function ``where`` names
    (returning ``result_codes``)."""

    mod: ModuleInfo
    where: str
    result_codes: str

    def fail(self, ins: Instr, msg: str) -> VerifyError:
        return VerifyError(f"{msg}; at {self.where}+{ins.pc:08X}")

    def check_regs(self, ins: Instr, regs: tuple[Any, ...], codes: str, what: str) -> None:
        if len(regs) != len(codes):
            raise self.fail(ins, f"{what} count mismatch: {len(regs)} registers for cconv "
                                 f"'{codes or 'v'}'")
        for raw, c in zip(regs, codes):
            is_ref = bool(raw & REF_BIT)
            if (c == "r") != is_ref:
                raise self.fail(ins, f"{what} register {raw:#06x} does not match cconv type "
                                     f"'{c}'")
            if c in "IF" and raw & 1:
                raise self.fail(ins, f"{what} register {raw:#06x} for 64-bit value is odd")

    def check_rodata(self, ins: Instr, k: int) -> None:
        if k >= self.mod.n_rodata:
            raise self.fail(ins, f"rodata ordinal {k} out of range ({self.mod.n_rodata})")

    def check_global(self, ins: Instr, off: int, width: int) -> None:
        if off + width > self.mod.global_bytes:
            raise self.fail(ins, f"global byte_offset out of range: {off} "
                                 f"(rwdata={self.mod.global_bytes})")

    def check_global_ref(self, ins: Instr, k: int) -> None:
        if k >= self.mod.global_refs:
            raise self.fail(ins, f"global ref ordinal {k} out of range")

    def check_type(self, ins: Instr, idx: int) -> None:
        if idx >= self.mod.n_types:
            raise self.fail(ins, f"type ordinal {idx} out of range ({self.mod.n_types})")

    def check_import_resolved(self, ins: Instr, k: int) -> None:
        if not k & IMPORT_BIT or (k & ~IMPORT_BIT) >= self.mod.n_imports:
            raise self.fail(ins, f"import ordinal {k & ~IMPORT_BIT} out of range")

    def check_function(self, ins: Instr, callee: int) -> None:
        if callee >= self.mod.n_functions:
            raise self.fail(ins, f"function ordinal {callee} out of range "
                                 f"({self.mod.n_functions})")

    def check_call(self, ins: Instr, callee: int, args: tuple[Any, ...],
                   results: tuple[Any, ...]) -> None:
        """A (not variadic) call of internal function ``callee``."""
        self.check_function(ins, callee)
        a_codes, r_codes = cconv_fragments(self.mod.signature(callee))
        self.check_regs(ins, args, a_codes, "argument")
        self.check_regs(ins, results, r_codes, "result")

    def check_import_call(self, ins: Instr, k: int, args: tuple[Any, ...],
                          results: tuple[Any, ...], variadic: bool) -> None:
        """A call of import ``k`` (``variadic``: a ``call.variadic``, whose
        arguments the segment sizes group, checked when it runs)."""
        if k >= self.mod.n_imports:
            raise self.fail(ins, f"import ordinal {k} out of range ({self.mod.n_imports})")
        cconv = self.mod.import_cconv(k)
        a_codes, r_codes = cconv_fragments(cconv)
        if variadic:
            self.check_regs(ins, results, r_codes, "result")
            return
        if "C" in a_codes:
            raise self.fail(ins, "call to a variadic import without segment sizes")
        if cconv:
            self.check_regs(ins, args, a_codes, "argument")
            self.check_regs(ins, results, r_codes, "result")


def check_arguments(arg_codes: str, i32_count: int, ref_count: int, where: str) -> list[int]:
    """The registers holding a function's arguments (``arg_codes``: its
    cconv's), checked to fit its register counts."""
    regs: list[int] = []
    islot = 0
    rslot = 0
    for c in arg_codes:
        if c in "if":
            regs.append(islot)
            islot += 1
        elif c in "IF":
            islot += islot & 1
            regs.append(islot)
            islot += 2
        elif c == "r":
            regs.append(rslot | REF_BIT)
            rslot += 1
        else:
            raise VerifyError(f"variadic cconv not allowed on internal function; at {where}")
    if islot > max(i32_count, 0) + (1 if islot and i32_count & 1 else 0) \
            or rslot > ref_count:
        raise VerifyError(f"argument storage exceeds register counts ({islot} i32 slots "
                          f"for {i32_count}, {rslot} refs for {ref_count}); at {where}")
    return regs


class _Checker(InstrChecks):
    def __init__(self, mod: ModuleInfo, where: str, result_codes: str):
        self.mod, self.where, self.result_codes = mod, where, result_codes


_Check = Callable[[InstrChecks, Instr, "tuple[Any, ...]"], None]


def _call(c: InstrChecks, ins: Instr, callee: int, args: tuple[Any, ...],
          results: tuple[Any, ...], variadic: bool) -> None:
    if callee & IMPORT_BIT:
        c.check_import_call(ins, callee & ~IMPORT_BIT, args, results, variadic)
    elif variadic:      # refused when it runs, as IREE does; its ordinal at load
        c.check_function(ins, callee)
    else:
        c.check_call(ins, callee, args, results)


def _global_ref(c: InstrChecks, ins: Instr, f: tuple[Any, ...]) -> None:
    c.check_global_ref(ins, f[0])
    c.check_type(ins, f[1])


def _global(width: int) -> _Check:
    return lambda c, ins, f: c.check_global(ins, f[0], width)


def _type_at(i: int) -> _Check:
    return lambda c, ins, f: c.check_type(ins, f[i])


#: mnemonic -> the checks of its operands (the same the translator makes)
_CHECKS: dict[str, _Check] = {
    "const.ref.rodata": lambda c, ins, f: c.check_rodata(ins, f[0]),
    "global.load.ref": _global_ref,
    "global.store.ref": _global_ref,
    "global.load.indirect.ref": _type_at(1),
    "global.store.indirect.ref": _type_at(1),
    "list.alloc": _type_at(0),
    "list.get.ref": _type_at(2),
    "select.ref": _type_at(1),
    "switch.ref": _type_at(1),
    "cast.any.ref": _type_at(1),
    "import.resolved": lambda c, ins, f: c.check_import_resolved(ins, f[0]),
    "return": lambda c, ins, f: c.check_regs(ins, f[0], c.result_codes, "return"),
    "call": lambda c, ins, f: _call(c, ins, f[0], f[1], f[2], False),
    "call.yieldable": lambda c, ins, f: _call(c, ins, f[0], f[1], f[3], False),
    "call.variadic": lambda c, ins, f: _call(c, ins, f[0], f[2], f[3], True),
    "call.variadic.yieldable": lambda c, ins, f: _call(c, ins, f[0], f[2], f[4], True),
}
for _w, _n in _GLOBAL_WIDTHS.items():
    _CHECKS[f"global.load.{_w}"] = _CHECKS[f"global.store.{_w}"] = _global(_n)


def check_instructions(mod: ModuleInfo, blocks: list[Block], where: str,
                       result_codes: str) -> None:
    """Check every instruction of a decoded function (``where``: how errors
    name it; ``result_codes``: its cconv's results)."""
    checks = _CHECKS
    checker = None
    for blk in blocks:
        for ins in blk.instrs:
            check = checks.get(ins.mnemonic)
            if check is not None:
                if checker is None:
                    checker = _Checker(mod, where, result_codes)
                check(checker, ins, ins.fields)
