"""The op emitters: :data:`EMITTERS` maps an opcode's mnemonic (as
:mod:`vmrt.bytecode.isa` names it) to the function writing its Python.

An emitter is called as ``emitter(t, ins, fields, ind)``: ``t`` the function's
translator (:class:`~vmrt.bytecode.translate.codegen.FunctionTranslator`, seen
here through the :class:`~vmrt.bytecode.translate.layout.ControlFlow`
interface it implements), ``ins`` the decoded instruction, ``fields`` its
operands, ``ind`` the indentation; it returns the lines.  Register-to-register
ops are not here: their expressions are templates (templates.py).  The
families of an op per width or element kind (``global.load.{i32,i64,f32,f64}``,
``buffer.load.i8.u`` ...) are one function each, given the width.
"""
from __future__ import annotations

from collections.abc import Callable

from ...vm.module import cconv_fragments
from ..decoder import MOVE_BIT, REF_BIT, Instr
from .calls import group_variadic
from .disasm import IMPORT_BIT
from .layout import ControlFlow
from .namespace import WIDTH

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EMITTERS", "Emitter"]

#: writes the lines of one instruction: ``(translator, ins, fields, indent) -> lines``
Emitter = Callable[[ControlFlow, Instr, "tuple[Any, ...]", str], list[str]]

#: opcode mnemonic -> its emitter
EMITTERS: dict[str, Emitter] = {}

#: the widths of the global, list and switch families
WIDTHS = ("i32", "i64", "f32", "f64")
#: the element kinds of ``buffer.load.*`` (``buffer.store``/``buffer.fill`` have no sign)
LOAD_KINDS = ("i8.u", "i8.s", "i16.u", "i16.s", "i32", "i64", "f32", "f64")
STORE_KINDS = ("i8", "i16", "i32", "i64", "f32", "f64")


def emits(*names: str) -> Callable[[Emitter], Emitter]:
    """Register the decorated function as the emitter of the ops ``names``."""
    def register(fn: Emitter) -> Emitter:
        for name in names:
            EMITTERS[name] = fn
        return fn
    return register


def family(pattern: str, params: tuple[str, ...], make: Callable[[str], Emitter]) -> None:
    """Register ``make(p)`` as the emitter of op ``pattern.format(p)`` for each ``p``."""
    for p in params:
        EMITTERS[pattern.format(p)] = make(p)


# -- constants -------------------------------------------------------------------
@emits("const.i32", "const.i64")
def const_int(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[1])} = {int(f[0])}"]


@emits("const.i32.zero", "const.i64.zero")
def const_int_zero(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[0])} = 0"]


@emits("const.f32", "const.f64")
def const_float(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[1])} = {t.const(float(f[0]))}"]


@emits("const.f32.zero", "const.f64.zero")
def const_float_zero(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[0])} = 0.0"]


@emits("const.ref.zero")
def const_ref_zero(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.ref_reg(f[0])} = None"]


@emits("const.ref.rodata")
def const_ref_rodata(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    t.check_rodata(ins, f[0])
    return [f"{ind}{t.ref_reg(f[1])} = RO[{f[0]}]"]


# -- globals ---------------------------------------------------------------------
def _type(t: ControlFlow, ins: Instr, idx: int) -> str:
    t.check_type(ins, idx)
    return f"TY[{idx}]"


def global_load(w: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        t.check_global(ins, f[0], WIDTH[w].size)
        return [f"{ind}{t.int_reg(f[1])} = UN_{w}(RW, {f[0]})[0]"]
    return op


def global_store(w: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        t.check_global(ins, f[0], WIDTH[w].size)
        return [f"{ind}PK_{w}(RW, {f[0]}, {t.int_reg(f[1])})"]
    return op


def global_load_indirect(w: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        return [f"{ind}{t.int_reg(f[1])} = gload(RW, ST_{w}, {t.int_reg(f[0])})"]
    return op


def global_store_indirect(w: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        return [f"{ind}gstore(RW, ST_{w}, {t.int_reg(f[0])}, {t.int_reg(f[1])})"]
    return op


family("global.load.{}", WIDTHS, global_load)
family("global.store.{}", WIDTHS, global_store)
family("global.load.indirect.{}", WIDTHS, global_load_indirect)
family("global.store.indirect.{}", WIDTHS, global_store_indirect)


@emits("global.load.ref")
def global_load_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    t.check_global_ref(ins, f[0])
    _type(t, ins, f[1])
    return [f"{ind}{t.ref_reg(f[2])} = GR[{f[0]}]"]


@emits("global.store.ref")
def global_store_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    t.check_global_ref(ins, f[0])
    return [f"{ind}refcheck({t.ref_reg(f[2])}, {_type(t, ins, f[1])})",
            f"{ind}GR[{f[0]}] = {t.ref_reg(f[2])}"]


@emits("global.load.indirect.ref")
def global_load_indirect_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    _type(t, ins, f[1])
    return [f"{ind}{t.ref_reg(f[2])} = grefload(GR, {t.int_reg(f[0])})"]


@emits("global.store.indirect.ref")
def global_store_indirect_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...],
                              ind: str) -> list[str]:
    return [f"{ind}grefstore(GR, {t.int_reg(f[0])}, {t.ref_reg(f[2])}, "
            f"{_type(t, ins, f[1])})"]


# -- lists -----------------------------------------------------------------------
@emits("list.alloc")
def list_alloc(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.ref_reg(f[2])} = lalloc({_type(t, ins, f[0])}, {t.int_reg(f[1])})"]


@emits("list.reserve")
def list_reserve(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}lreserve({t.ref_reg(f[0])}, {t.int_reg(f[1])})"]


@emits("list.size")
def list_size(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[1])} = lsize({t.ref_reg(f[0])})"]


@emits("list.resize")
def list_resize(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}lresize({t.ref_reg(f[0])}, {t.int_reg(f[1])})"]


def list_get(w: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        return [f"{ind}{t.int_reg(f[2])} = lget({t.ref_reg(f[0])}, {t.int_reg(f[1])}, '{w}')"]
    return op


def list_set(w: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        return [f"{ind}lset({t.ref_reg(f[0])}, {t.int_reg(f[1])}, '{w}', {t.int_reg(f[2])})"]
    return op


family("list.get.{}", WIDTHS, list_get)
family("list.set.{}", WIDTHS, list_set)


@emits("list.get.ref")
def list_get_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.ref_reg(f[3])} = lgetref({t.ref_reg(f[0])}, {t.int_reg(f[1])}, "
            f"{_type(t, ins, f[2])})"]


@emits("list.set.ref")
def list_set_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}lsetref({t.ref_reg(f[0])}, {t.int_reg(f[1])}, {t.ref_reg(f[2])})"]


# -- refs ------------------------------------------------------------------------
@emits("select.ref")
def select_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    _type(t, ins, f[1])
    return [f"{ind}{t.ref_reg(f[4])} = {t.ref_reg(f[2])} if {t.int_reg(f[0])} else "
            f"{t.ref_reg(f[3])}"]


@emits("cast.any.ref")
def cast_any_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.ref_reg(f[2])} = cast_ref({t.ref_reg(f[0])}, {_type(t, ins, f[1])})"]


@emits("discard.refs")
def discard_refs(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    regs = [t.ref_reg(x) for x in f[0] if x & REF_BIT]
    return [f"{ind}{' = '.join(regs)} = None"] if regs else []


# -- switch ----------------------------------------------------------------------
def _switch(t: ControlFlow, f: tuple[Any, ...], ind: str, reg: Callable[[int], str]) -> list[str]:
    idx, default, vals, dst = f
    if not vals:
        return [f"{ind}{reg(dst)} = {reg(default)}"]
    items = ", ".join(reg(x) for x in vals)
    return [f"{ind}{reg(dst)} = ({items},)[{t.int_reg(idx)}] if 0 <= {t.int_reg(idx)} < "
            f"{len(vals)} else {reg(default)}"]


# NOTE: switch.i64 compares full 64-bit case values (IREE truncates; see README)
@emits(*(f"switch.{w}" for w in WIDTHS))
def switch_value(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return _switch(t, f, ind, t.int_reg)


@emits("switch.ref")
def switch_ref(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    idx, _ty, default, vals, dst = f
    return _switch(t, (idx, default, vals, dst), ind, t.ref_reg)


# -- buffers ---------------------------------------------------------------------
def buffer_load(kind: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        return [f"{ind}{t.int_reg(f[2])} = bload({t.ref_reg(f[0])}, '{kind}', "
                f"{t.int_reg(f[1])})"]
    return op


def buffer_store(kind: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        return [f"{ind}bstore({t.ref_reg(f[0])}, '{kind}', {t.int_reg(f[1])}, "
                f"{t.int_reg(f[2])})"]
    return op


def buffer_fill(kind: str) -> Emitter:
    def op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
        return [f"{ind}bfill({t.ref_reg(f[0])}, '{kind}', {t.int_reg(f[1])}, "
                f"{t.int_reg(f[2])}, {t.int_reg(f[3])})"]
    return op


family("buffer.load.{}", LOAD_KINDS, buffer_load)
family("buffer.store.{}", STORE_KINDS, buffer_store)
family("buffer.fill.{}", STORE_KINDS, buffer_fill)


@emits("buffer.alloc")
def buffer_alloc(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.ref_reg(f[2])} = balloc({t.int_reg(f[0])}, {t.int_reg(f[1])})"]


@emits("buffer.clone")
def buffer_clone(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.ref_reg(f[4])} = bclone({t.ref_reg(f[0])}, {t.int_reg(f[1])}, "
            f"{t.int_reg(f[2])}, {t.int_reg(f[3])})"]


@emits("buffer.length")
def buffer_length(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[1])} = blen({t.ref_reg(f[0])})"]


@emits("buffer.copy")
def buffer_copy(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}bcopy({t.ref_reg(f[0])}, {t.int_reg(f[1])}, {t.ref_reg(f[2])}, "
            f"{t.int_reg(f[3])}, {t.int_reg(f[4])})"]


@emits("buffer.compare")
def buffer_compare(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[5])} = bcompare({t.ref_reg(f[0])}, {t.int_reg(f[1])}, "
            f"{t.ref_reg(f[2])}, {t.int_reg(f[3])}, {t.int_reg(f[4])})"]


@emits("buffer.hash")
def buffer_hash(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}{t.int_reg(f[3])} = bhash({t.ref_reg(f[0])}, {t.int_reg(f[1])}, "
            f"{t.int_reg(f[2])})"]


# -- branches (debug-only break/yield behave as plain branches) ------------------
@emits("br")
def br(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    if ins is t.inline_br:
        return t.remap(tuple(p for p in f[1] if p not in t.folded), ind)
    return t.remap(f[1], ind) + t.jump(f[0], ind)


@emits("cond_br")
def cond_br(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    cond, tgt, tr, e, er = f
    inner = ind + "    "
    if t.falls_here(tgt, ind):      # the false side leaves, then the true one follows
        return ([f"{ind}if not {t.int_reg(cond)}:"] + t.remap(er, inner) + t.jump(e, inner)
                + t.remap(tr, ind) + t.jump(tgt, ind))
    side = t.side(e, ind)
    return ([f"{ind}if {t.int_reg(cond)}:"] + t.remap(tr, inner) + t.jump(tgt, inner)
            + ([] if side == ind else [f"{ind}else:"]) + t.remap(er, side) + t.jump(e, side))


@emits("br_table")
def br_table(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    idx, dflt, dremap, _n, cases = f
    x = t.int_reg(idx)
    inner = ind + "    "
    if not cases:
        return t.remap(dremap, ind) + t.jump(dflt, ind)
    out: list[str] = []
    for k, (tgt, rm) in enumerate(cases):
        out.append(f"{ind}{'if' if k == 0 else 'elif'} {x} == {k}:")
        out += t.remap(rm, inner) + t.jump(tgt, inner)
    out.append(f"{ind}else:")
    return out + t.remap(dremap, inner) + t.jump(dflt, inner)


# vmrt runs synchronously: a yield resumes immediately at its target
@emits("break", "yield")
def break_(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return t.remap(f[1], ind) + t.jump(f[0], ind)


@emits("cond_break")
def cond_break(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    cond, tgt, rm = f
    return [f"{ind}if {t.int_reg(cond)}:"] + t.remap(rm, ind + "    ") + \
        t.jump(tgt, ind + "    ")


# -- control ---------------------------------------------------------------------
@emits("trace", "print")
def no_op(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return []


@emits("fail")
def fail(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return [f"{ind}raise fail({t.int_reg(f[0])}, {t.const(f[1])})"]


@emits("return")
def return_(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    regs = f[0]
    t.check_regs(ins, regs, t.result_codes, "return")
    vals = ", ".join(t.reg(x & ~MOVE_BIT) for x in regs)
    return [f"{ind}return ({vals}{',' if regs else ''})"]


@emits("import.resolved")
def import_resolved(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    k = f[0]
    t.check_import_resolved(ins, k)
    return [f"{ind}{t.int_reg(f[1])} = 0 if state.imports[{k & ~IMPORT_BIT}] is None else 1"]


# -- calls -----------------------------------------------------------------------
def _results(t: ControlFlow, regs: tuple[Any, ...]) -> str:
    if not regs:
        return ""
    return ", ".join(t.reg(x & ~MOVE_BIT) for x in regs) + ", = "


def _call(t: ControlFlow, ins: Instr, callee: int, args: tuple[Any, ...],
          results: tuple[Any, ...], ind: str,
          segments: tuple[Any, ...] | None = None) -> list[str]:
    if callee & IMPORT_BIT:
        return _call_import(t, ins, callee & ~IMPORT_BIT, args, results, ind, segments)
    if segments is not None:
        raise t.fail(ins, "variadic calls only supported for import callees")
    t.check_call(ins, callee, args, results)
    argl = ", ".join(["state"] + [t.reg(x & ~MOVE_BIT) for x in args])
    return [f"{ind}{_results(t, results)}f{callee}({argl})"]


def _call_import(t: ControlFlow, ins: Instr, k: int, args: tuple[Any, ...],
                 results: tuple[Any, ...], ind: str,
                 segments: tuple[Any, ...] | None) -> list[str]:
    t.check_import_call(ins, k, args, results, segments is not None)
    cconv = t.mod.import_cconv(k)
    a_codes = cconv_fragments(cconv)[0]
    regs = [t.reg(x & ~MOVE_BIT) for x in args]
    if segments is not None:
        segs = tuple(s if s < 0x8000 else s - 0x10000 for s in segments)
        plan = group_variadic(cconv, segs, len(regs)) if "C" in a_codes else None
        if plan is None:        # the generic path reports what does not add up
            return [f"{ind}{_results(t, results)}callimp_variadic(state, {k}, "
                    f"{segs!r}, [{', '.join(regs)}])"]
        return [f"{ind}{_results(t, results)}CI[{k}]({_grouped(plan, regs)})"]
    return [f"{ind}{_results(t, results)}CI[{k}]({', '.join(regs)})"]


@emits("call")
def call(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return _call(t, ins, f[0], f[1], f[2], ind)


@emits("call.variadic")
def call_variadic(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    return _call(t, ins, f[0], f[2], f[3], ind, segments=f[1])


@emits("call.yieldable")
def call_yieldable(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    callee, args, dest, results = f
    return _call(t, ins, callee, args, results, ind) + t.jump(dest, ind)


@emits("call.variadic.yieldable")
def call_variadic_yieldable(t: ControlFlow, ins: Instr, f: tuple[Any, ...], ind: str) -> list[str]:
    callee, segs, args, dest, results = f
    return _call(t, ins, callee, args, results, ind, segments=segs) + t.jump(dest, ind)


def _grouped(plan: list[tuple[int, int]], regs: list[str]) -> str:
    """The arguments of a variadic import call: each span a list (of tuples
    when its groups hold more than one register)."""
    out: list[str] = []
    pos = 0
    for n, count in plan:
        if n == 0:
            out.append(regs[pos])
            pos += 1
            continue
        span = regs[pos:pos + n * count]
        pos += n * count
        if n == 1:
            out.append(f"[{', '.join(span)}]")
        else:
            out.append("[" + ", ".join(f"({', '.join(span[i:i + n])},)"
                                       for i in range(0, len(span), n)) + "]")
    return ", ".join(out)


__all__ += ["LOAD_KINDS", "STORE_KINDS", "WIDTHS", "emits", "family"]
