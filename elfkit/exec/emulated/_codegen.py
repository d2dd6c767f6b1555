"""Specialised Python code for one signature: argument marshalling into one
register batch (+ one stack write), ``uc_emu_start``, result decoding -- and
the reverse for host callbacks.  Generated once per (signature, entry) so a
call does no per-argument dispatch at run time.

What the generated code uses of its machine comes in a ``CallContext``:
the engine, the call state (``_callstate``), the runner's slow paths
(nested calls, limited runs, abnormal stops), the argument memory and the
x87 stack.  Each is bound once into the code's globals, so a call reaches
every one with a single lookup.
"""
from __future__ import annotations

import ctypes
import struct
import threading
import time
import types
from collections.abc import Callable

from ..._support.codecache import compile_cached
from ..._support.records import DataRecord
from ...arch import Arch
from ...errors import MemoryAccessError, SignatureError
from ...signature import CType
from . import _uc, _watchdog
from ._cc import Loc, Piece, Plan, reg_size
from ._layout import SENTINEL

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._args import ArgumentMemory
    from ._callstate import CallState
    from ._runner import CallRunner
    from ._uc import Engine
    from ._x87 import X87Stack


class CallContext(DataRecord, frozen=True, slots=True):
    """What the code generated for one machine uses.  ``runner``: its
    ``nested``, ``run_limited`` and ``abnormal`` are the slow paths, and it
    is what the watchdog stops on a signal (``stop_for_signal``);
    ``inexact``: the FP flag every call starts with raised
    (``EmulatedMachine.raise_inexact_flag``), or None."""
    engine: Engine
    state: CallState
    runner: CallRunner
    args: ArgumentMemory
    x87: X87Stack
    inexact: tuple[str, int] | None = None


_F = struct.Struct("<f")
_D = struct.Struct("<d")
_I = struct.Struct("<I")
_Q = struct.Struct("<Q")


def f2i(x: float) -> int:
    return _I.unpack(_F.pack(x))[0]


def d2q(x: float) -> int:
    return _Q.unpack(_D.pack(x))[0]


def i2f(x: int) -> float:
    return _F.unpack(_I.pack(x & 0xFFFFFFFF))[0]


def q2d(x: int) -> float:
    return _D.unpack(_Q.pack(x & 0xFFFFFFFFFFFFFFFF))[0]


def _norm(t: CType, word: int, sext32: bool, var: str) -> tuple[str, bool]:
    """Expression normalising the Python int ``var`` to type ``t`` as the
    register value the ABI wants; and whether it is signed."""
    bits = 8 * t.size(word)
    mask = (1 << bits) - 1
    signed = t is not CType.PTR and (t.is_signed or (sext32 and bits == 32))
    if signed:
        s = 1 << (bits - 1)
        return f"((({var}) & {mask:#x}) ^ {s:#x}) - {s:#x}", True
    return f"({var}) & {mask:#x}", False


def _slot(n: int) -> int:
    return (n + 7) & -8


def _pad(fmt: str, used: int, size: int) -> str:
    return fmt + (f"{size - used}x" if size > used else "")


def _int_code(size: int, signed: bool) -> str:
    return {8: "q", 4: "i"}[size].upper() if not signed else {8: "q", 4: "i"}[size]


class _Layout:
    """Accumulates register slots and stack pieces for one direction."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.reg_fmt = "<"
        self.reg_exprs: list[str] = []
        self.reg_ids: list[int] = []
        self.reg_offs: list[int] = []
        self.reg_size = 0
        self.stack: list[tuple[int, str, int, list[str]]] = []   # (offset, fmt, size, exprs)

    def reg(self, name: str, fmt: str, used: int, exprs: list[str]) -> None:
        size = _slot(max(reg_size(self.engine.arch, name), used))
        self.reg_ids.append(self.engine.reg_id(name))
        self.reg_offs.append(self.reg_size)
        self.reg_fmt += _pad(fmt, used, size)
        self.reg_exprs.extend(exprs)
        self.reg_size += size

    def stk(self, offset: int, fmt: str, used: int, size: int, exprs: list[str]) -> None:
        self.stack.append((offset, _pad(fmt, used, size), size, exprs))

    def stack_struct(self, base: int, total: int) -> tuple[str, list[str]]:
        fmt = "<"
        exprs: list[str] = []
        pos = 0
        for off, f, size, ex in sorted(self.stack):
            off += base
            if off > pos:
                fmt += f"{off - pos}x"
            fmt += f
            exprs.extend(ex)
            pos = off + size
        if total > pos:
            fmt += f"{total - pos}x"
        return fmt, exprs

    def buffers(self) -> tuple[Any, Any, Any, int]:
        buf = ctypes.create_string_buffer(max(self.reg_size, 16))
        n = len(self.reg_ids)
        ids = (ctypes.c_int * max(n, 1))(*self.reg_ids)
        base = ctypes.addressof(buf)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[base + o for o in self.reg_offs])
        return buf, ids, ptrs, n


def _encode_piece(lay: _Layout, loc: Loc, p: Piece, var: str, signed: bool) -> None:
    """Place one piece of an argument (or result) whose normalised value is ``var``."""
    if p.kind == "int":
        if p.part < 0:
            code = _int_code(p.size if p.reg is None else min(p.size, 8), signed)
            n = 8 if code in "qQ" else 4
            exprs = [var]
        else:
            code, n = "I", 4
            exprs = [f"({var}) & 0xffffffff" if p.part == 0 else f"(({var}) >> 32) & 0xffffffff"]
        if p.reg is not None:
            lay.reg(p.reg, code, n, exprs)
        else:
            lay.stk(p.offset, code, n, p.size, exprs)
        return
    code = "f" if p.kind == "f32" else "d"
    n = 4 if code == "f" else 8
    exprs = [var]
    if p.box:
        code += "I"
        n = 8
        exprs.append("0xffffffff")
    if p.reg is not None:
        lay.reg(p.reg, code, n, exprs)
    else:
        lay.stk(p.offset, code, n, p.size, exprs)


def _arg_prelude(arch: Arch, plan: Plan, i: int, loc: Loc, src: str,
                 lines: list[str]) -> tuple[str, bool]:
    """Emit code turning argument ``src`` into its normalised value; return
    (variable, signed)."""
    word = arch.word
    t = loc.type
    v = f"v{i}"
    if t.is_float:
        if loc.as_int:
            lines.append(f"{v} = {'_f2i' if t is CType.F32 else '_d2q'}({src})")
            return v, False
        return src, False
    if t is CType.PTR:
        mask = (1 << (8 * word)) - 1
        lines.append(f"{v} = {src} & {mask:#x} if {src}.__class__ is int else _ptr({src}, _cl)")
        return v, False
    expr, signed = _norm(t, word, plan.sext32, src)
    lines.append(f"{v} = {expr}")
    return v, signed


# control registers a plugin may change that are not part of the calling
# convention; set with every call (besides the arch's ``uc_init``)
_CALL_RESET = {"riscv64": (("FCSR", 0),), "riscv32": (("FCSR", 0),), "arm": (("FPSCR", 0),),
               "aarch64": (("FPCR", 0), ("FPSR", 0))}
_NO_RESET = ("TP", "TPIDR_EL0", "C13_C0_3", "FS_BASE", "GS_BASE")


def call_reset(arch: Any, inexact: tuple[str, int] | None = None) -> list[tuple[str, int]]:
    """(register, value) pairs written at the start of every call: the
    FPU enable and mode registers of ``uc_init`` and the FP control/status
    (with the sticky inexact flag ``inexact`` = (register, bit) raised, see
    ``EmulatedMachine.raise_inexact_flag``)."""
    regs = [(r, v) for r, v in arch.uc_init if r not in _NO_RESET]
    fp = [(r, v | (inexact[1] if inexact and inexact[0] == r else 0))
          for r, v in _CALL_RESET.get(arch.name, ())]
    return regs + fp


def stack_area(arch: Arch, plan: Plan) -> tuple[int, int]:
    """(bytes reserved below the caller's stack base, offset of the first argument)."""
    cc = arch.cc
    align = max(cc.stack_align, 16) if arch.name in ("x86_64", "i386") else cc.stack_align
    size = (plan.stack_size + align - 1) & -align
    if cc.lr is None:                       # x86: return address pushed by "call"
        return size + arch.word, arch.word
    return size, 0


def build_caller(ctx: CallContext, plan: Plan, entry: int | None,
                 name: str) -> Callable[..., Any]:
    """A function ``f(*args, timeout=None, budget=None)`` calling guest code at ``entry``
    (or, if ``entry`` is None, ``f(entry, args, timeout, budget)``)."""
    engine = ctx.engine
    arch = engine.arch
    cc = arch.cc
    word = arch.word
    lay = _Layout(engine)
    lines: list[str] = []
    has_ptr = any(t is CType.PTR for t in plan.sig.params)
    for i, loc in enumerate(plan.args):
        var, signed = _arg_prelude(arch, plan, i, loc, f"a{i}", lines)
        for p in loc.pieces:
            _encode_piece(lay, loc, p, var, signed)
    area, argbase = stack_area(arch, plan)
    wcode = "Q" if word == 8 else "I"
    # fixed registers: stack pointer, link register, x87 reset on i386
    lay.reg(cc.sp, wcode, word, ["_sp"])
    if cc.lr is not None:
        lay.reg(cc.lr, wcode, word, [str(SENTINEL)])
    # floating-point unit on, rounding and exception state as after reset:
    # nothing a previous call left there reaches this one
    for reg, value in call_reset(arch, ctx.inexact):
        lay.reg(reg, "Q", 8, [str(value)])
    rbuf, rids, rptrs, nregs = lay.buffers()
    if cc.lr is None:
        lay.stk(-argbase, wcode, word, word, [str(SENTINEL)])
    sfmt, sexprs = lay.stack_struct(argbase, area)
    state, runner = ctx.state, ctx.runner
    ns: dict[str, Any] = {
        "_s": state, "_runner": runner, "_h": engine.handle, "_lock": state.lock,
        "_nested": runner.nested, "_run_limited": runner.run_limited,
        "_abnormal": runner.abnormal, "_emu": _uc.lib.uc_emu_start,
        "_wb": _uc.lib.uc_reg_write_batch, "_rd": _uc.lib.uc_reg_read,
        "_rdb": _uc.lib.uc_reg_read_batch, "_mw": _uc.lib.uc_mem_write,
        "_pack_regs": struct.Struct(lay.reg_fmt).pack_into, "_rbuf": rbuf, "_rids": rids,
        "_rptrs": rptrs, "_f2i": f2i, "_d2q": d2q, "_i2f": i2f, "_q2d": q2d,
        "_ptr": ctx.args.ptr_arg, "_release": ctx.args.release, "_bad": bad_args,
        "_plan": plan, "_serr": struct.error,
        "_slock": state.slock, "_act": state.active,
        "_gid": threading.get_ident, "_mainid": threading.main_thread().ident,
        "_wd_main": _watchdog.MAIN, "_wd_sig": _watchdog.SIGNALS, "_wd_install": _watchdog.install,
        "_wd_pend": _watchdog.PENDING, "_handlers": runner.pending_handlers,
        "_now": time.time_ns,
    }
    src, entry_expr = _caller_head(entry, len(plan.args))
    body: list[str] = []
    body.append("try:")
    body.extend("    " + ln for ln in lines)
    body.append("    _sp = _s.call_sp - " + str(area))
    body.append(f"    _pack_regs(_rbuf, 0, {', '.join(lay.reg_exprs)})")
    if sexprs or area and cc.lr is None:
        ns["_pack_stack"] = struct.Struct(sfmt).pack_into
        ns["_sbuf"] = ctypes.create_string_buffer(max(area, 8))
        body.append(f"    _pack_stack(_sbuf, 0, {', '.join(sexprs)})")
    body.append("except (TypeError, ValueError, OverflowError, _serr) as e:")
    body.append("    raise _bad(_plan, args, e) from None")
    body.append(f"_wb(_h, _rids, _rptrs, {nregs})")
    if sexprs or cc.lr is None:
        body.append(f"_mw(_h, _sp, _sbuf, {area})")
    body.extend(_run_lines(entry_expr))
    body.extend(_ret_decode(ctx, plan, ns))
    if has_ptr:                         # (the list made before the try its finally reads)
        src.append("        _cl = []")
        src.append("        try:")
        src.extend("            " + ln for ln in body)
        src.append("        finally:")
        src.append("            if _cl: _release(_cl)")
    else:
        src.extend("        " + ln for ln in body)
    code = "\n".join(src) + "\n"
    ns["_ENTRY"] = entry
    exec(compile_cached(code, f"<elfkit call {name}>"), ns)
    fn = ns["__call"]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{plan.sig} at {entry:#x}" if entry is not None else str(plan.sig)
    fn.generated_source = code
    return fn


def rebind(fn: Any, entry: int, name: str) -> Callable[..., Any]:
    """A copy of caller ``fn`` (made by ``build_caller`` with an entry address)
    that calls ``entry``: the same code and buffers, its own globals."""
    ns = dict(fn.__globals__)
    code = fn.__code__.replace(co_filename=f"<elfkit call {name}>")
    new = types.FunctionType(code, ns, name, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    ns["_ENTRY"] = entry
    ns["__call"] = new                  # nested calls re-enter this copy
    new.__qualname__ = name
    new.__doc__ = f"{ns['_plan'].sig} at {entry:#x}"
    new.generated_source = fn.generated_source  # type: ignore[attr-defined]
    return new


def _caller_head(entry: int | None, nargs: int) -> tuple[list[str], str]:
    """The caller's ``def`` line, argument unpacking and the detour for
    nested calls; returns the lines and the expression of the entry address."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    src: list[str] = []
    if entry is None:
        src.append("def __call(_entry, args, timeout=None, budget=None):")
        entry_expr = "_entry"
        self_call = "lambda *a, timeout=None, budget=None: __call(_entry, a, timeout, budget)"
    else:           # the address is a global, so that ``rebind`` can copy the caller
        src.append("def __call(*args, timeout=None, budget=None):")
        entry_expr = "_ENTRY"
        self_call = "__call"
    if nargs:
        src.append("    try:")
        src.append(f"        {params}, = args")
        src.append("    except ValueError:")
        src.append("        raise _bad(_plan, args, None) from None")
    else:
        src.append("    if args:")
        src.append("        raise _bad(_plan, args, None)")
    src.append("    with _lock:")
    src.append("        if _s.running or _s.closed:")
    src.append(f"            return _nested({self_call}, args, timeout, budget)")
    return src, entry_expr


def _run_lines(entry_expr: str) -> list[str]:
    """Run the guest code: straight ``uc_emu_start`` unless a limit applies.

    Starting and ending a run happen under the machine's stop lock, so a stop
    request (timeout, cancel, signal) reaches only the call it was meant for;
    a call on the main thread is registered so that a signal (Ctrl-C) stops it.
    A call on the main thread notes when it started (a signal that arrived
    before does not stop it); one starting while a signal may be unhandled
    (``_watchdog.PENDING``) runs the handlers before the guest code: the
    watchdog's repeated stops, which look at that flag under the same lock,
    then never reach a call started after the handlers ran.  Guarded spans
    released since the last run lose their rights first (``_spans``).

    An exception at any point (a KeyboardInterrupt raised by Python's signal
    check after any call, an error of a hook) leaves the machine usable: the
    stop lock is taken by ``with``, whose exit always runs; the whole
    prologue is inside the ``try``, and the ``finally`` undoes what it got to
    (``_g`` is on ``_act`` only if it got there, ``_st`` says whether
    ``_wd_main`` was set).  The ``finally`` changes the state with plain
    stores first and the ``pop`` last: Python checks for signals only after
    a call, and then nothing is left to undo.
    """
    return ["_onmain = _gid() == _mainid",
            "_g = _st = 0",
            "try:",
            "    with _slock:",
            "        _s.gen = _g = _s.gen + 1",
            "        _act.append(_g)",
            "        _s.stop = None",
            "        _s.running = True",
            "        _pend = 0",
            "        if _onmain:",
            "            _s.started = _now()",
            "            _pend = _wd_pend[0]",
            "            if _pend:",
            "                _wd_pend[0] = 0",
            "    if _onmain:",
            "        _prev = _wd_main[0]",
            "        _st = 1",
            "        _wd_main[0] = _runner",
            "        if not _wd_sig[0]:",
            "            _wd_install()",
            "    if _pend:",
            "        _handlers()",
            "    if _s.unsealed:",
            "        _s.seal()",
            "    if timeout is None and budget is None and not _s.limited:",
            "        _s.count_mode = False",
            f"        err = _emu(_h, {entry_expr}, {SENTINEL}, 0, 0)",
            "    else:",
            f"        err = _run_limited({entry_expr}, timeout, budget)",
            "finally:",
            "    with _slock:",
            "        _s.running = False",
            "        if _st:",
            "            _wd_main[0] = _prev",
            "        if _act and _act[-1] == _g:",
            "            _act.pop()",
            "if err or _s.stop is not None:",
            f"    _abnormal(err, {entry_expr}, timeout, budget)"]


def _ret_decode(ctx: CallContext, plan: Plan, ns: dict[str, Any]) -> list[str]:
    loc = plan.ret
    if loc is None:
        return ["return None"]
    if loc.x87:
        ns["_x87pop"] = ctx.x87.pop
        return ["return _x87pop()"]
    engine = ctx.engine
    t = loc.type
    word = engine.arch.word
    if len(loc.pieces) == 1:
        p = loc.pieces[0]
        assert p.reg is not None        # a one-piece result is in a register
        if p.kind == "int":
            ns["_rv"] = rv = ctypes.c_uint64()
            ns["_rref"] = ctypes.byref(rv)
            out = [f"_rd(_h, {engine.reg_id(p.reg)}, _rref)", "x = _rv.value"]
            if loc.as_int:
                out.append("return _i2f(x)" if t is CType.F32 else "return _q2d(x)")
            else:
                out.append("return " + _norm(t, word, False, "x")[0])
            return out
        ns["_fbuf"] = ctypes.create_string_buffer(16)
        ns["_unf"] = (_F if p.kind == "f32" else _D).unpack_from
        return [f"_rd(_h, {engine.reg_id(p.reg)}, _fbuf)", "return _unf(_fbuf)[0]"]
    # double-word in two registers
    lay = _Layout(engine)
    for p in loc.pieces:
        assert p.reg is not None    # both halves are registers
        lay.reg(p.reg, "I", 4, [])
    buf, ids, ptrs, n = lay.buffers()
    ns.update(_retbuf=buf, _retids=ids, _retptrs=ptrs,
              _unret=struct.Struct(lay.reg_fmt).unpack_from)
    out = [f"_rdb(_h, _retids, _retptrs, {n})", "lo, hi = _unret(_retbuf)", "x = lo | hi << 32"]
    if loc.as_int:
        out.append("return _q2d(x)")
    else:
        out.append("return " + _norm(t, word, False, "x")[0])
    return out


# --- host callbacks ---------------------------------------------------------------
def build_callback(engine: Engine, x87: X87Stack, plan: Plan, fn: Callable[..., Any],
                   name: str) -> Callable[[], None]:
    """A no-argument function run inside the stub's code hook: decode the
    arguments, call ``fn``, store its result where the guest expects it."""
    arch = engine.arch
    cc = arch.cc
    word = arch.word
    lay = _Layout(engine)
    wcode = "Q" if word == 8 else "I"
    raw: list[list[str]] = []            # per argument: raw piece variable names
    k = 0
    stack_pieces: list[tuple[int, str, int, str]] = []
    reg_vars: list[str] = []
    for loc in plan.args:
        names = []
        for p in loc.pieces:
            var = f"r{k}"
            k += 1
            names.append(var)
            if p.kind == "int":
                n = 8 if (p.part < 0 and p.size == 8) else 4
                code = "Q" if n == 8 else "I"
            else:
                code, n = ("f", 4) if p.kind == "f32" else ("d", 8)
            if p.reg is not None:
                lay.reg(p.reg, code, n, [])
                reg_vars.append(var)
            else:
                stack_pieces.append((p.offset, code, n, var))
                lay.stk(p.offset, code, n, p.size, [var])
        raw.append(names)
    need_stack = bool(stack_pieces)
    if need_stack:
        lay.reg(cc.sp, wcode, word, [])
        reg_vars.append("_sp")
    rbuf, rids, rptrs, nregs = lay.buffers()
    skip = word if cc.lr is None else 0
    ns: dict[str, Any] = {"_h": engine.handle, "_fn": fn, "_rdb": _uc.lib.uc_reg_read_batch,
                          "_wb": _uc.lib.uc_reg_write_batch, "_mr": _uc.lib.uc_mem_read,
                          "_rbuf": rbuf, "_rids": rids, "_rptrs": rptrs, "_i2f": i2f,
                          "_q2d": q2d, "_f2i": f2i, "_d2q": d2q, "_retbad": bad_result,
                          "_plan": plan, "_name": name, "_serr": struct.error}
    src = ["def __cb():"]
    if nregs:
        ns["_unregs"] = struct.Struct(lay.reg_fmt).unpack_from
        src.append(f"    _rdb(_h, _rids, _rptrs, {nregs})")
        src.append(f"    {', '.join(reg_vars)}, = _unregs(_rbuf)")
    if need_stack:
        total = max(off + n for off, _c, n, _v in stack_pieces)
        total = max(total, max(off + size for off, _f, size, _e in lay.stack))
        sfmt, svars = lay.stack_struct(0, total)
        ns["_sbuf"] = ctypes.create_string_buffer(total)
        ns["_unstack"] = struct.Struct(sfmt).unpack_from
        src.append(f"    _mr(_h, _sp + {skip}, _sbuf, {total})")
        src.append(f"    {', '.join(svars)}, = _unstack(_sbuf)")
    args = []
    for loc, names in zip(plan.args, raw):
        t = loc.type
        val = f"({names[0]} | {names[1]} << 32)" if len(names) == 2 else names[0]
        if t.is_float:
            if loc.as_int:
                val = f"_i2f({val})" if t is CType.F32 else f"_q2d({val})"
        else:
            val = _norm(t, word, False, val)[0]
        args.append(val)
    src.append(f"    res = _fn({', '.join(args)})")
    src.extend("    " + ln for ln in _ret_encode(engine, x87, plan, ns))
    code = "\n".join(src) + "\n"
    exec(compile_cached(code, f"<elfkit callback {name}>"), ns)
    cb = ns["__cb"]
    cb.generated_source = code
    return cb


def _ret_encode(engine: Engine, x87: X87Stack, plan: Plan, ns: dict[str, Any]) -> list[str]:
    loc = plan.ret
    if loc is None:
        return []
    if loc.x87:
        ns["_x87push"] = x87.push
        return ["try:", "    res = float(res)", "except (TypeError, ValueError):",
                "    raise _retbad(_plan, _name, res) from None", "_x87push(res)"]
    lay = _Layout(engine)
    lines: list[str] = []
    t = loc.type
    if t.is_float and not loc.as_int:
        var, signed = "res", False
    elif t.is_float:
        lines.append(f"v = {'_f2i' if t is CType.F32 else '_d2q'}(res)")
        var, signed = "v", False
    else:
        expr, signed = _norm(t, engine.arch.word, plan.sext32, "res")
        lines.append(f"v = {expr}")
        var = "v"
    for p in loc.pieces:
        _encode_piece(lay, loc, p, var, signed)
    buf, ids, ptrs, n = lay.buffers()
    ns.update(_obuf=buf, _oids=ids, _optrs=ptrs, _pack_out=struct.Struct(lay.reg_fmt).pack_into)
    out = ["try:"]
    out.extend("    " + ln for ln in lines)
    out.append(f"    _pack_out(_obuf, 0, {', '.join(lay.reg_exprs)})")
    out.append("except (TypeError, ValueError, OverflowError, _serr):")
    out.append("    raise _retbad(_plan, _name, res) from None")
    out.append(f"_wb(_h, _oids, _optrs, {n})")
    return out


def bad_args(plan: Plan, args: tuple[Any, ...], err: BaseException | None) -> Exception:
    """The error for arguments ``args`` a caller of ``plan`` could not pass
    (``err``: what packing them raised, passed on when it is ours)."""
    if isinstance(err, (SignatureError, MemoryAccessError)):
        return err
    sig = plan.sig
    if len(args) != len(sig.params):
        return SignatureError(f"{sig}: expected {len(sig.params)} argument(s), got {len(args)}")
    for i, (t, a) in enumerate(zip(sig.params, args)):
        if t.is_float:
            if not isinstance(a, (int, float)) and not hasattr(a, "__float__"):
                return SignatureError(f"{sig}: argument {i} ({t.value}) must be a number, "
                                      f"not {type(a).__name__}")
        elif t is not CType.PTR and (isinstance(a, float) or not hasattr(a, "__index__")):
            return SignatureError(f"{sig}: argument {i} ({t.value}) must be an int, "
                                  f"not {type(a).__name__}")
    return SignatureError(f"{sig}: bad arguments {args!r}: {err}")


def bad_result(plan: Plan, name: str, res: Any) -> SignatureError:
    return SignatureError(f"callback {name or '?'} ({plan.sig}) returned {res!r}, which is not "
                          f"a {plan.sig.ret.value}")
