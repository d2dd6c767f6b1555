"""Translate decoded functions into Python functions (once, at load time).

Each VM function becomes one Python function whose registers are local
variables (``i<n>`` for the 32-bit bank, ``r<n>`` for refs; an i64/f64 value
lives whole in the local of its even slot) and whose blocks are arms of a
``while True`` dispatch on the block's pc.  Only integers produced by the
decoder are interpolated into the source; strings (messages, function names)
and floats go through the constant table ``K``.
"""
from __future__ import annotations

from ...errors import VerifyError
from ...vm.module import cconv_fragments
from ..decoder import MOVE_BIT, REF_BIT, Block, Instr
from .calls import group_variadic
from .disasm import IMPORT_BIT, TraceNames, trace_line
from .layout import ControlFlow, drop_unread
from .namespace import WIDTH
from .regfacts import ConstantRegs, constant_registers, no_overflow
from .regkinds import coercion_registers, register_coercions
from .templates import PURE_PREFIXES, SIMPLE_OPS, WRAPPED_OPS, two_sided, wrap_lines


class FunctionTranslator(ControlFlow):
    """Builds the Python source of one function."""

    def __init__(self, mod, ordinal: int, blocks: list[Block], where: str,
                 i32_count: int, ref_count: int, trace: TraceNames | None = None):
        self.mod = mod                     # a ModuleInfo (see module.py)
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
        self.coerce: dict[int, list] = {}
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

    def fail(self, ins: Instr, msg: str) -> VerifyError:
        return VerifyError(f"{msg}; at {self.where}+{ins.pc:08X}")

    def const(self, value) -> str:
        return self.mod.const(value)

    def check_regs(self, ins: Instr, regs, codes: str, what: str) -> None:
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

    # -- translation -----------------------------------------------------------
    def translate(self, arg_codes: str, result_codes: str) -> str:
        params: list[str] = []
        islot = 0
        rslot = 0
        for c in arg_codes:
            if c in "if":
                params.append(self.int_reg(islot))
                islot += 1
            elif c in "IF":
                islot += islot & 1
                params.append(self.int_reg(islot))
                islot += 2
            elif c == "r":
                params.append(self.ref_reg(rslot | REF_BIT))
                rslot += 1
            else:
                raise VerifyError(f"variadic cconv not allowed on internal function; at "
                                  f"{self.where}")
        if islot > max(self.i32_count, 0) + (1 if islot and self.i32_count & 1 else 0) \
                or rslot > self.ref_count:
            raise VerifyError(f"argument storage exceeds register counts ({islot} i32 slots "
                              f"for {self.i32_count}, {rslot} refs for {self.ref_count}); at "
                              f"{self.where}")
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
        body = drop_unread(self.dispatch(self.blocks, "            "))
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
        meth = getattr(self, "op_" + m.replace(".", "_"), None)
        if meth is None:
            raise self.fail(ins, f"unimplemented opcode '{m}'")
        out.extend(meth(ins, ins.fields, ind))
        return out

    # -- constants -------------------------------------------------------------
    def op_const_i32(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[1])} = {int(f[0])}"]

    op_const_i64 = op_const_i32

    def op_const_i32_zero(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[0])} = 0"]

    op_const_i64_zero = op_const_i32_zero

    def op_const_f32(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[1])} = {self.const(float(f[0]))}"]

    op_const_f64 = op_const_f32

    def op_const_f32_zero(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[0])} = 0.0"]

    op_const_f64_zero = op_const_f32_zero

    def op_const_ref_zero(self, ins, f, ind):
        return [f"{ind}{self.ref_reg(f[0])} = None"]

    def op_const_ref_rodata(self, ins, f, ind):
        if f[0] >= self.mod.n_rodata:
            raise self.fail(ins, f"rodata ordinal {f[0]} out of range ({self.mod.n_rodata})")
        return [f"{ind}{self.ref_reg(f[1])} = RO[{f[0]}]"]

    # -- globals ---------------------------------------------------------------
    def _gcheck(self, ins, off, width):
        if off + width > self.mod.global_bytes:
            raise self.fail(ins, f"global byte_offset out of range: {off} "
                                 f"(rwdata={self.mod.global_bytes})")

    @staticmethod
    def _gload(w):
        def op(self, ins, f, ind):
            self._gcheck(ins, f[0], WIDTH[w].size)
            return [f"{ind}{self.int_reg(f[1])} = UN_{w}(RW, {f[0]})[0]"]
        return op

    @staticmethod
    def _gstore(w):
        def op(self, ins, f, ind):
            self._gcheck(ins, f[0], WIDTH[w].size)
            return [f"{ind}PK_{w}(RW, {f[0]}, {self.int_reg(f[1])})"]
        return op

    @staticmethod
    def _gload_ind(w):
        def op(self, ins, f, ind):
            return [f"{ind}{self.int_reg(f[1])} = gload(RW, ST_{w}, {self.int_reg(f[0])})"]
        return op

    @staticmethod
    def _gstore_ind(w):
        def op(self, ins, f, ind):
            return [f"{ind}gstore(RW, ST_{w}, {self.int_reg(f[0])}, {self.int_reg(f[1])})"]
        return op

    def _type(self, ins, idx):
        if idx >= self.mod.n_types:
            raise self.fail(ins, f"type ordinal {idx} out of range ({self.mod.n_types})")
        return f"TY[{idx}]"

    def op_global_load_ref(self, ins, f, ind):
        if f[0] >= self.mod.global_refs:
            raise self.fail(ins, f"global ref ordinal {f[0]} out of range")
        self._type(ins, f[1])
        return [f"{ind}{self.ref_reg(f[2])} = GR[{f[0]}]"]

    def op_global_store_ref(self, ins, f, ind):
        if f[0] >= self.mod.global_refs:
            raise self.fail(ins, f"global ref ordinal {f[0]} out of range")
        return [f"{ind}refcheck({self.ref_reg(f[2])}, {self._type(ins, f[1])})",
                f"{ind}GR[{f[0]}] = {self.ref_reg(f[2])}"]

    def op_global_load_indirect_ref(self, ins, f, ind):
        self._type(ins, f[1])
        return [f"{ind}{self.ref_reg(f[2])} = grefload(GR, {self.int_reg(f[0])})"]

    def op_global_store_indirect_ref(self, ins, f, ind):
        return [f"{ind}grefstore(GR, {self.int_reg(f[0])}, {self.ref_reg(f[2])}, "
                f"{self._type(ins, f[1])})"]

    # -- lists -----------------------------------------------------------------
    def op_list_alloc(self, ins, f, ind):
        return [f"{ind}{self.ref_reg(f[2])} = lalloc({self._type(ins, f[0])}, "
                f"{self.int_reg(f[1])})"]

    def op_list_reserve(self, ins, f, ind):
        return [f"{ind}lreserve({self.ref_reg(f[0])}, {self.int_reg(f[1])})"]

    def op_list_size(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[1])} = lsize({self.ref_reg(f[0])})"]

    def op_list_resize(self, ins, f, ind):
        return [f"{ind}lresize({self.ref_reg(f[0])}, {self.int_reg(f[1])})"]

    @staticmethod
    def _lget(w):
        def op(self, ins, f, ind):
            return [f"{ind}{self.int_reg(f[2])} = lget({self.ref_reg(f[0])}, {self.int_reg(f[1])}, "
                    f"'{w}')"]
        return op

    @staticmethod
    def _lset(w):
        def op(self, ins, f, ind):
            return [f"{ind}lset({self.ref_reg(f[0])}, {self.int_reg(f[1])}, '{w}', "
                    f"{self.int_reg(f[2])})"]
        return op

    def op_list_get_ref(self, ins, f, ind):
        return [f"{ind}{self.ref_reg(f[3])} = lgetref({self.ref_reg(f[0])}, {self.int_reg(f[1])}, "
                f"{self._type(ins, f[2])})"]

    def op_list_set_ref(self, ins, f, ind):
        return [f"{ind}lsetref({self.ref_reg(f[0])}, {self.int_reg(f[1])}, {self.ref_reg(f[2])})"]

    # -- refs ----------------------------------------------------------------
    def op_select_ref(self, ins, f, ind):
        self._type(ins, f[1])
        return [f"{ind}{self.ref_reg(f[4])} = {self.ref_reg(f[2])} if {self.int_reg(f[0])} else "
                f"{self.ref_reg(f[3])}"]

    def op_cast_any_ref(self, ins, f, ind):
        return [f"{ind}{self.ref_reg(f[2])} = cast_ref({self.ref_reg(f[0])}, "
                f"{self._type(ins, f[1])})"]

    def op_discard_refs(self, ins, f, ind):
        regs = [self.ref_reg(x) for x in f[0] if x & REF_BIT]
        return [f"{ind}{' = '.join(regs)} = None"] if regs else []

    # -- switch ----------------------------------------------------------------
    def _switch(self, ins, f, ind, reg):
        idx, default, vals, dst = f
        items = ", ".join(reg(x) for x in vals)
        n = len(vals)
        if n == 0:
            return [f"{ind}{reg(dst)} = {reg(default)}"]
        return [f"{ind}{reg(dst)} = ({items},)[{self.int_reg(idx)}] if 0 <= {self.int_reg(idx)} < "
                f"{n} "
                f"else {reg(default)}"]

    def op_switch_i32(self, ins, f, ind):
        return self._switch(ins, f, ind, self.int_reg)

    op_switch_i64 = op_switch_i32   # NOTE: full 64-bit case values (IREE truncates; see README)
    op_switch_f32 = op_switch_i32
    op_switch_f64 = op_switch_i32

    def op_switch_ref(self, ins, f, ind):
        idx, _ty, default, vals, dst = f
        return self._switch(ins, (idx, default, vals, dst), ind, self.ref_reg)

    # -- buffers ---------------------------------------------------------------
    @staticmethod
    def _bload(kind):
        def op(self, ins, f, ind):
            return [f"{ind}{self.int_reg(f[2])} = bload({self.ref_reg(f[0])}, '{kind}', "
                    f"{self.int_reg(f[1])})"]
        return op

    @staticmethod
    def _bstore(kind):
        def op(self, ins, f, ind):
            return [f"{ind}bstore({self.ref_reg(f[0])}, '{kind}', {self.int_reg(f[1])}, "
                    f"{self.int_reg(f[2])})"]
        return op

    @staticmethod
    def _bfill(kind):
        def op(self, ins, f, ind):
            return [f"{ind}bfill({self.ref_reg(f[0])}, '{kind}', {self.int_reg(f[1])}, "
                    f"{self.int_reg(f[2])}, "
                    f"{self.int_reg(f[3])})"]
        return op

    def op_buffer_alloc(self, ins, f, ind):
        return [f"{ind}{self.ref_reg(f[2])} = balloc({self.int_reg(f[0])}, {self.int_reg(f[1])})"]

    def op_buffer_clone(self, ins, f, ind):
        return [f"{ind}{self.ref_reg(f[4])} = bclone({self.ref_reg(f[0])}, {self.int_reg(f[1])}, "
                f"{self.int_reg(f[2])}, "
                f"{self.int_reg(f[3])})"]

    def op_buffer_length(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[1])} = blen({self.ref_reg(f[0])})"]

    def op_buffer_copy(self, ins, f, ind):
        return [f"{ind}bcopy({self.ref_reg(f[0])}, {self.int_reg(f[1])}, {self.ref_reg(f[2])}, "
                f"{self.int_reg(f[3])}, "
                f"{self.int_reg(f[4])})"]

    def op_buffer_compare(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[5])} = bcompare({self.ref_reg(f[0])}, {self.int_reg(f[1])}, "
                f"{self.ref_reg(f[2])}, {self.int_reg(f[3])}, {self.int_reg(f[4])})"]

    def op_buffer_hash(self, ins, f, ind):
        return [f"{ind}{self.int_reg(f[3])} = bhash({self.ref_reg(f[0])}, {self.int_reg(f[1])}, "
                f"{self.int_reg(f[2])})"]

    # -- control flow ------------------------------------------------------------
    def op_trace(self, ins, f, ind):
        return []

    op_print = op_trace

    def op_fail(self, ins, f, ind):
        return [f"{ind}raise fail({self.int_reg(f[0])}, {self.const(f[1])})"]

    def op_return(self, ins, f, ind):
        regs = f[0]
        self.check_regs(ins, regs, self.result_codes, "return")
        vals = ", ".join(self.reg(x & ~MOVE_BIT) for x in regs)
        return [f"{ind}return ({vals}{',' if regs else ''})"]

    def op_import_resolved(self, ins, f, ind):
        k = f[0]
        if not k & IMPORT_BIT or (k & ~IMPORT_BIT) >= self.mod.n_imports:
            raise self.fail(ins, f"import ordinal {k & ~IMPORT_BIT} out of range")
        return [f"{ind}{self.int_reg(f[1])} = 0 if state.imports[{k & ~IMPORT_BIT}] is None else 1"]

    def _results(self, regs) -> str:
        if not regs:
            return ""
        return ", ".join(self.reg(x & ~MOVE_BIT) for x in regs) + ", = "

    def _call(self, ins, callee, args, results, ind, segments=None):
        if callee & IMPORT_BIT:
            k = callee & ~IMPORT_BIT
            if k >= self.mod.n_imports:
                raise self.fail(ins, f"import ordinal {k} out of range ({self.mod.n_imports})")
            cconv = self.mod.import_cconv(k)
            a_codes, r_codes = cconv_fragments(cconv)
            regs = [self.reg(x & ~MOVE_BIT) for x in args]
            if segments is not None:
                self.check_regs(ins, results, r_codes, "result")
                segs = tuple(s if s < 0x8000 else s - 0x10000 for s in segments)
                plan = group_variadic(cconv, segs, len(regs)) if "C" in a_codes else None
                if plan is None:        # the generic path reports what does not add up
                    return [f"{ind}{self._results(results)}callimp_variadic(state, {k}, "
                            f"{segs!r}, [{', '.join(regs)}])"]
                return [f"{ind}{self._results(results)}CI[{k}]({_grouped(plan, regs)})"]
            if "C" in a_codes:
                raise self.fail(ins, "call to a variadic import without segment sizes")
            if cconv:
                self.check_regs(ins, args, a_codes, "argument")
                self.check_regs(ins, results, r_codes, "result")
            return [f"{ind}{self._results(results)}CI[{k}]({', '.join(regs)})"]
        if segments is not None:
            raise self.fail(ins, "variadic calls only supported for import callees")
        if callee >= self.mod.n_functions:
            raise self.fail(ins, f"function ordinal {callee} out of range "
                                 f"({self.mod.n_functions})")
        a_codes, r_codes = cconv_fragments(self.mod.signature(callee))
        self.check_regs(ins, args, a_codes, "argument")
        self.check_regs(ins, results, r_codes, "result")
        argl = ", ".join(["state"] + [self.reg(x & ~MOVE_BIT) for x in args])
        return [f"{ind}{self._results(results)}f{callee}({argl})"]

    def _plain_call(self, ins, callee, args, results, ind, segments=None):
        return self._call(ins, callee, args, results, ind, segments)

    def op_call(self, ins, f, ind):
        return self._plain_call(ins, f[0], f[1], f[2], ind)

    def op_call_variadic(self, ins, f, ind):
        return self._plain_call(ins, f[0], f[2], f[3], ind, segments=f[1])

    def op_call_yieldable(self, ins, f, ind):
        callee, args, dest, results = f
        return self._plain_call(ins, callee, args, results, ind) + self.jump(dest, ind)

    def op_call_variadic_yieldable(self, ins, f, ind):
        callee, segs, args, dest, results = f
        return self._plain_call(ins, callee, args, results, ind, segments=segs) + \
            self.jump(dest, ind)


# per-width generated ops
for _w in ("i32", "i64", "f32", "f64"):
    setattr(FunctionTranslator, f"op_global_load_{_w}", FunctionTranslator._gload(_w))
    setattr(FunctionTranslator, f"op_global_store_{_w}", FunctionTranslator._gstore(_w))
    setattr(FunctionTranslator, f"op_global_load_indirect_{_w}",
            FunctionTranslator._gload_ind(_w))
    setattr(FunctionTranslator, f"op_global_store_indirect_{_w}",
            FunctionTranslator._gstore_ind(_w))
    setattr(FunctionTranslator, f"op_list_get_{_w}", FunctionTranslator._lget(_w))
    setattr(FunctionTranslator, f"op_list_set_{_w}", FunctionTranslator._lset(_w))
for _k, _name in (("i8.u", "i8_u"), ("i8.s", "i8_s"), ("i16.u", "i16_u"), ("i16.s", "i16_s"),
                  ("i32", "i32"), ("i64", "i64"), ("f32", "f32"), ("f64", "f64")):
    setattr(FunctionTranslator, f"op_buffer_load_{_name}", FunctionTranslator._bload(_k))
for _k in ("i8", "i16", "i32", "i64", "f32", "f64"):
    setattr(FunctionTranslator, f"op_buffer_store_{_k}", FunctionTranslator._bstore(_k))
    setattr(FunctionTranslator, f"op_buffer_fill_{_k}", FunctionTranslator._bfill(_k))


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
