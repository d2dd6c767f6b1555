"""Translate decoded functions into Python functions (once, at load time).

Each VM function becomes one Python function whose registers are local
variables (``i<n>`` for the 32-bit bank, ``r<n>`` for refs; an i64/f64 value
lives whole in the local of its even slot) and whose blocks are arms of a
``while True`` dispatch on the block's pc.  Only integers produced by the
decoder are interpolated into the source; strings (messages, function names)
and floats go through the constant table ``K``.
"""
from __future__ import annotations

from collections.abc import Callable

from ...errors import LoadError, VmError
from ...vm.module import cconv_fragments
from ..decoder import REF_BIT, Block, Instr, decode_function
from ..format import FEATURE_EXT_F64
from .checks import check_arguments, check_instructions
from .disasm import TraceNames, trace_line
from .emitters import EMITTERS
from .info import ModuleInfo
from .layout import ControlFlow, drop_unread
from .regfacts import ConstantRegs, constant_registers, no_overflow
from .regkinds import coercion_registers, register_coercions
from .templates import PURE_PREFIXES, SIMPLE_OPS, WRAPPED_OPS, two_sided, wrap_lines

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ..format import ModuleDef

__all__ = ["FunctionTranslator", "translate_function", "translate_module", "verify_function"]


class FunctionTranslator(ControlFlow):
    """Builds the Python source of one function."""

    def __init__(self, mod: ModuleInfo, ordinal: int, blocks: list[Block], where: str,
                 i32_count: int, ref_count: int, trace: TraceNames | None = None):
        self.mod = mod
        #: trace mode: each instruction first writes its trace line (disasm.py)
        self.trace = trace
        self.ordinal = ordinal
        self.blocks = blocks
        self.where = where
        self.i32_count = i32_count
        self.ref_count = ref_count
        self.lines: list[str] = []
        self.used_i: set[int] = set()
        self.used_r: set[int] = set()
        self.coerce: dict[int, list[Any]] = {}
        #: per pc (-1: the entry), the i64 registers whose high half is kept too
        self.split: dict[int, list[int]] = {}
        #: registers holding one constant (regfacts.py), read as literals
        self.konst = ConstantRegs({}, frozenset())
        #: pcs of the wrapped ops whose result is known in range (regfacts.py)
        self.in_range: frozenset[int] = frozenset()

    # -- register names ----------------------------------------------------
    def int_reg(self, raw: int) -> str:
        """The Python name of integer/float register ``raw`` (``i7``)."""
        self.used_i.add(raw)
        return f"i{raw}"

    def ref_reg(self, raw: int) -> str:
        """The Python name of ref register ``raw`` (``r3``; the ref bit is masked off)."""
        n = raw & 0x3FFF
        self.used_r.add(n)
        return f"r{n}"

    def reg(self, raw: int) -> str:
        """The Python name of register ``raw``, ref or not."""
        return self.ref_reg(raw) if raw & REF_BIT else self.int_reg(raw)

    def const(self, value: Any) -> str:
        return self.mod.const(value)

    # -- translation -----------------------------------------------------------
    def translate(self, arg_codes: str, result_codes: str) -> str:
        params = [self.reg(raw) for raw in check_arguments(arg_codes, self.i32_count,
                                                           self.ref_count, self.where)]
        self.result_codes = result_codes
        # registers read as the other kind (integer vs float) than they hold: reinterpret
        # their bits first, as IREE's untyped registers do
        facts = register_coercions(self.blocks, arg_codes, result_codes, self.mod)
        self.coerce, self.split = facts.coerce, facts.split
        if self.trace is None:          # the trace shows registers as they are
            self.konst = constant_registers(
                self.blocks, params, [r for cs in self.coerce.values() for c in cs
                                      for r in coercion_registers(c)] +
                [r + 1 for rs in self.split.values() for r in rs])
            self.in_range = no_overflow(self.blocks, self.konst, self.coerce)
        self.falls, self.fallen = self.plan_falls(), set()
        body = self.dispatch([b for b in self.blocks if b.pc not in self.falls], "            ")
        if self.fallen != self.falls:   # (not expected) a block left out: every one an arm
            self.falls, self.fallen = frozenset(), set()
            body = self.dispatch(self.blocks, "            ")
        body = drop_unread(body)
        pset = set(params)
        inits = [n for n in ([f"i{x}" for x in sorted(self.used_i)] +
                             [f"r{x}" for x in sorted(self.used_r)]) if n not in pset]
        head = [f"def f{self.ordinal}(state, {', '.join(params)}):" if params
                else f"def f{self.ordinal}(state):"]
        ivals = [n for n in inits if n[0] == "i"]
        rvals = [n for n in inits if n[0] == "r"]
        if ivals:
            head.append(f"    {' = '.join(ivals)} = 0")
        head += [f"    i{r + 1} = HIGH(i{r})" for r in self.split.get(-1, ())]
        if rvals:
            head.append(f"    {' = '.join(rvals)} = None")
        head += ["    L = state.ctx.limits", "    RW = state.rw", "    GR = state.grefs",
                 "    CI = state.calls"] + (["    TW = state.trace"] if self.trace else []) + [
                 "    b = 0", "    p = 0", "    try:", "        while True:"]
        # names come from the file: they reach the source only via the constant table
        label = self.const(self.where)
        tail = ["    except _VmError as e:",
                f"        raise e.annotate('at %s+%08X' % ({label}, p))",
                "    except RecursionError:",
                "        raise",
                "    except Exception as e:",
                f"        raise _VmError('%s: %s' % (type(e).__name__, e), _StatusCode.INTERNAL)"
                f".annotate('at %s+%08X' % ({label}, p)) from e"]
        return "\n".join(head + body + tail) + "\n"

    def prelude(self, ins: Instr, ind: str) -> list[str]:
        """What runs before instruction ``ins``: the pc bookkeeping (ops that
        can raise), register reinterpretations, the trace line."""
        m = ins.mnemonic
        out: list[str] = []
        if not m.startswith(PURE_PREFIXES) or m.startswith(("select.ref", "const.ref")):
            out.append(f"{ind}p = {ins.pc}")
        for reg, bank, held in self.coerce.get(ins.pc, ()):
            name = self.int_reg(reg)
            if bank == "pair":          # an i64 read from two 32-bit registers
                out.append(f"{ind}{name} = PAIR({name}, {self.int_reg(reg + 1)})")
                continue
            if bank == "hi":            # the high register of an i64 read as an i32
                out.append(f"{ind}{name} = HIGH({self.int_reg(reg - 1)})")
                continue
            bits = int(bank[1:])
            if bank[0] == "i":
                src = int(held[1:]) if held and held[0] == "f" else bits
                out.append(f"{ind}{name} = REINT_I({name}, {bits}, {src})")
            else:
                out.append(f"{ind}{name} = REINT_F({name}, {bits})")
        if self.trace is not None:
            fmt, exprs = trace_line(ins, self.where, self.trace, self.reg)
            out.append(f"{ind}TW({self.const(fmt)} % ({''.join(e + ', ' for e in exprs)}))")
        return out

    def operands(self, ins: Instr) -> tuple[str | None, list[str]]:
        """(register written, registers read) of a register-to-register op."""
        reads = []
        dst = None
        for val, fdef in zip(ins.fields, ins.defs):
            kind, bank, access = fdef[1], fdef[2], fdef[3]
            if kind != "register":
                continue
            reg = self.ref_reg(val) if bank == "ref" else self.int_reg(val)
            if access == "write":
                dst = reg
            else:
                reads.append(self.konst.literal(reg, ins.pc) or reg)
        return dst, reads

    def emit(self, ins: Instr, ind: str) -> list[str]:
        """The code of ``ins``, then the high halves it must keep (regkinds.py)."""
        out = self.emit_op(ins, ind)
        for r in self.split.get(ins.pc, ()):       # (never renamed: see coalesced)
            out.append(f"{ind}{self.int_reg(r + 1)} = HIGH({self.int_reg(r)})")
        return out

    def emit_op(self, ins: Instr, ind: str) -> list[str]:
        m = ins.mnemonic
        out = self.prelude(ins, ind)
        tmpl = SIMPLE_OPS.get(m)
        wrapped = WRAPPED_OPS.get(m)
        if wrapped is not None:
            tmpl = wrapped[0]
        if tmpl is not None:
            dst, reads = self.operands(ins)
            dst = self.renamed.get(ins.pc, dst)
            expr = tmpl.format(**dict(zip('abc', reads)))
            bits = self.masked.get(ins.pc)
            if bits is not None and two_sided(m, reads):   # a modular register (layout.py)
                out.append(f"{ind}{dst} = ({expr}) & {(1 << bits) - 1}")
                self.masked_any = True
                return out
            out.append(f"{ind}{dst} = {expr}")
            if wrapped is not None and dst is not None and ins.pc not in self.in_range:
                out += wrap_lines(m, wrapped[1], dst, reads, ind)
            return out
        emitter = EMITTERS.get(m)
        if emitter is None:
            raise self.fail(ins, f"unimplemented opcode '{m}'")
        out.extend(emitter(self, ins, ins.fields, ind))
        return out


def verify_function(d: ModuleDef, k: int, where: str,
                    info: ModuleInfo | None = None) -> tuple[list[Block], str, str]:
    """Function ``k`` of module ``d`` checked as IREE's verifier checks it at
    load (its features, every instruction's encoding, registers and branch
    targets, its calling convention and arguments' storage, the ordinals its
    instructions name, its calls' and returns' registers against the cconvs
    -- checks.py), without translating it: its decoded blocks and its argument
    and result codes (``where``: how errors name it; ``info``: ``d``'s facts,
    made once for all its functions)."""
    fd = d.functions[k]
    if fd.requirements & ~(1 | FEATURE_EXT_F64 | 4 | 8):
        raise LoadError(f"function requires unknown features {fd.requirements:#x}; "
                        f"at {where}")
    body = bytes(d.bytecode[fd.bytecode_offset:fd.bytecode_offset + fd.bytecode_length])
    blocks = decode_function(body, where, fd.i32_register_count, fd.ref_register_count)
    try:
        a_codes, r_codes = cconv_fragments(d.signatures[k])
    except VmError as e:
        raise LoadError(f"{e.message}; at {where}") from None
    check_arguments(a_codes, fd.i32_register_count, fd.ref_register_count, where)
    check_instructions(ModuleInfo(d) if info is None else info, blocks, where, r_codes)
    return blocks, a_codes, r_codes


def translate_function(info: ModuleInfo, k: int, where: str,
                       verified: tuple[list[Block], str, str],
                       trace: TraceNames | None = None) -> str:
    """The Python source of function ``k`` (``verified``: what
    :func:`verify_function` gave for it); its constants go to ``info``'s
    table."""
    fd = info.function(k)
    blocks, a_codes, r_codes = verified
    tr = FunctionTranslator(info, k, blocks, where, fd.i32_register_count,
                            fd.ref_register_count, trace)
    return tr.translate(a_codes, r_codes)


def translate_module(d: ModuleDef, label: Callable[[int], str],
                     trace: TraceNames | None = None) -> tuple[list[str], list[Any]]:
    """The Python source of each function of module ``d`` (``label(k)``: how
    errors name function ``k``; ``trace``: the trace-mode translation), and
    the constant table that source reads (``K``)."""
    info = ModuleInfo(d)
    sources = [translate_function(info, k, label(k), verify_function(d, k, label(k), info),
                                  trace)
               for k in range(len(d.functions))]
    return sources, info.consts
