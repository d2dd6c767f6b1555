"""Python expression templates for the VM's register-to-register ops, used
by the translator (codegen.py): ``{a}``, ``{b}``, ``{c}`` are the operand
registers, the names called are the runtime helpers (runtime.py)."""
from __future__ import annotations

from . import runtime

# ----- simple register->register ops: template over {a},{b},{c} -> value ----
SIMPLE_OPS: dict[str, str] = {}
# ops whose raw result must be wrapped to 32/64 bits: emitted as a plain
# expression plus a range check (much cheaper than always masking)
WRAPPED_OPS: dict[str, tuple[str, int]] = {}
for _w, _bits, _M, _S in (("i32", 32, "4294967295", 31), ("i64", 64, "18446744073709551615", 63)):
    WRAPPED_OPS.update({
        f"add.{_w}": ("{a} + {b}", _bits), f"sub.{_w}": ("{a} - {b}", _bits),
        f"mul.{_w}": ("{a} * {b}", _bits), f"fma.{_w}": ("{a} * {b} + {c}", _bits),
        f"shl.{_w}": (f"{{a}} << ({{b}} & {_S})", _bits),
        f"shr.{_w}.u": (f"({{a}} & {_M}) >> ({{b}} & {_S})", _bits),
        f"abs.{_w}": ("abs({a})", _bits),
    })
    SIMPLE_OPS.update({
        f"not.{_w}": "~{a}", f"and.{_w}": "{a} & {b}", f"or.{_w}": "{a} | {b}",
        f"xor.{_w}": "{a} ^ {b}",
        f"shr.{_w}.s": f"{{a}} >> ({{b}} & {_S})",
        f"min.{_w}.s": "{a} if {a} < {b} else {b}",
        f"max.{_w}.s": "{a} if {a} > {b} else {b}",
        f"min.{_w}.u": f"{{a}} if ({{a}} & {_M}) < ({{b}} & {_M}) else {{b}}",
        f"max.{_w}.u": f"{{a}} if ({{a}} & {_M}) > ({{b}} & {_M}) else {{b}}",
        f"cmp.eq.{_w}": "1 if {a} == {b} else 0", f"cmp.ne.{_w}": "1 if {a} != {b} else 0",
        f"cmp.lt.{_w}.s": "1 if {a} < {b} else 0",
        f"cmp.lt.{_w}.u": f"1 if ({{a}} & {_M}) < ({{b}} & {_M}) else 0",
        f"cmp.nz.{_w}": "1 if {a} else 0",
        f"select.{_w}": "{b} if {a} else {c}",
    })
WRAPPED_OPS["trunc.i64.i32"] = ("{a}", 32)
#: per width: (lowest, highest, modulus) of a wrapped result
RESULT_RANGES = {32: (-2147483648, 2147483647, 4294967296),
                 64: (-9223372036854775808, 9223372036854775807, 18446744073709551616)}


def _literal(s: str) -> int | None:
    """The value of an operand the translator wrote as a literal (``7``, ``(-1)``)."""
    t = s.strip("()")
    return int(t) if t.lstrip("-").isdigit() else None


def _sides(mnemonic: str, reads: list[str]) -> tuple[bool, bool]:
    """Whether the result of ``mnemonic`` on ``reads`` can fall below / rise
    above its range.  An i64 add or subtract of a constant can only cross the
    side the constant moves towards (i64 registers always hold values in
    range: every producer wraps and every input is converted); i32 registers
    may hold a whole i64 read through a 32-bit op, so i32 checks both."""
    if mnemonic in ("add.i64", "sub.i64"):
        c = _literal(reads[1])
        if c is None and mnemonic == "add.i64":
            c = _literal(reads[0])
        if c is not None:
            if mnemonic == "sub.i64":
                c = -c
            return c < 0, c > 0
    return True, True


def two_sided(mnemonic: str, reads: list[str]) -> bool:
    """Whether the wrap of ``mnemonic`` on ``reads`` checks both ends of the
    range (a multiply, a shift, a sum of two registers): a mask is then
    cheaper, where a value congruent to the result will do."""
    return all(_sides(mnemonic, reads))


def wrap_lines(mnemonic: str, bits: int, dst: str, reads: list[str], ind: str) -> list[str]:
    """The range check and wrap of ``dst`` after a wrapped op: compares only
    (no arithmetic) while values stay in range, which they mostly do; a value
    past one end only is brought back by one add or subtract of 2**bits."""
    lo, hi, mod = RESULT_RANGES[bits]
    below, above = _sides(mnemonic, reads)
    if not below:
        return [f"{ind}if {dst} > {hi}: {dst} -= {mod}"] if above else []
    if not above:
        return [f"{ind}if {dst} < {lo}: {dst} += {mod}"]
    return [f"{ind}if {dst} < {lo} or {dst} > {hi}:", f"{ind}    {dst} &= {mod - 1}",
            f"{ind}    if {dst} > {hi}: {dst} -= {mod}"]


SIMPLE_OPS.update({
    "trunc.i32.i8": "{a} & 255", "trunc.i32.i16": "{a} & 65535",
    "ext.i8.i32.s": "(({a} + 128) & 255) - 128", "ext.i8.i32.u": "{a} & 255",
    "ext.i16.i32.s": "(({a} + 32768) & 65535) - 32768", "ext.i16.i32.u": "{a} & 65535",
    "ext.i32.i64.s": "{a}", "ext.i32.i64.u": "{a} & 4294967295",
    "div.i32.s": "divs32({a}, {b})", "div.i32.u": "divu32({a}, {b})",
    "rem.i32.s": "rems32({a}, {b})", "rem.i32.u": "remu32({a}, {b})",
    "div.i64.s": "divs64({a}, {b})", "div.i64.u": "divu64({a}, {b})",
    "rem.i64.s": "rems64({a}, {b})", "rem.i64.u": "remu64({a}, {b})",
    "ctlz.i32": "ctlz32({a})", "ctlz.i64": "ctlz64({a})",
    "cmp.eq.ref": "1 if {a} is {b} else 0", "cmp.ne.ref": "1 if {a} is not {b} else 0",
    "cmp.nz.ref": "1 if {a} is not None else 0",
    "assign.ref": "{a}",
})
# float ops, f32 rounds every result, f64 does not
for _w, _R in (("f32", "rf32"), ("f64", "")):
    def _r(x: str, _R: str = _R) -> str:
        return f"{_R}({x})" if _R else f"({x})"
    SIMPLE_OPS.update({
        f"add.{_w}": _r("{a} + {b}"), f"sub.{_w}": _r("{a} - {b}"),
        f"mul.{_w}": _r("{a} * {b}"), f"div.{_w}": _r("fdiv({a}, {b})"),
        f"rem.{_w}": _r("frem({a}, {b})"),
        f"fma.{_w}": "rfma32({a}, {b}, {c})" if _R else "({a} * {b} + {c})",
        f"abs.{_w}": "abs({a})", f"neg.{_w}": "-{a}",
        f"ceil.{_w}": "fceil({a})", f"floor.{_w}": "ffloor({a})",
        f"round.{_w}": "fround({a})", f"round.{_w}.even": "froundeven({a})",
        f"min.{_w}": "fmin({a}, {b})", f"max.{_w}": "fmax({a}, {b})",
        f"select.{_w}": "{b} if {a} else {c}",
        f"cmp.eq.{_w}.o": "1 if {a} == {b} else 0",
        f"cmp.eq.{_w}.u": "1 if ({a} == {b} or {a} != {a} or {b} != {b}) else 0",
        # the pip runtime's ordered not-equal is true for NaN operands (kept)
        f"cmp.ne.{_w}.o": "1 if {a} != {b} else 0",
        f"cmp.ne.{_w}.u": "1 if {a} != {b} else 0",
        f"cmp.lt.{_w}.o": "1 if {a} < {b} else 0",
        f"cmp.lt.{_w}.u": "0 if {a} >= {b} else 1",
        f"cmp.lte.{_w}.o": "1 if {a} <= {b} else 0",
        f"cmp.lte.{_w}.u": "0 if {a} > {b} else 1",
        f"cmp.nan.{_w}": "1 if {a} != {a} else 0",
        f"cast.si32.{_w}": _r("float({a})"), f"cast.ui32.{_w}": _r("float({a} & 4294967295)"),
        f"cast.si64.{_w}": _r("float({a})"),
        f"cast.ui64.{_w}": _r("float({a} & 18446744073709551615)"),
        f"cast.{_w}.si32": "f2si32({a})", f"cast.{_w}.ui32": "f2ui32({a})",
        f"cast.{_w}.si64": "f2si64({a})",
        f"cast.{_w}.ui64": "f2ui64({a})" if _R else "d2ui64({a})",
    })
    for _fn in runtime.FMATH:
        SIMPLE_OPS[f"{_fn}.{_w}"] = _r(f"FM_{_fn}({{a}})")
    for _fn in runtime.FMATH2:
        SIMPLE_OPS[f"{_fn}.{_w}"] = _r(f"FM_{_fn}({{a}}, {{b}})")
SIMPLE_OPS.update({
    "bitcast.i32.f32": "bits_i32_f32({a})", "bitcast.f32.i32": "bits_f32_i32({a})",
    "bitcast.i64.f64": "bits_i64_f64({a})", "bitcast.f64.i64": "bits_f64_i64({a})",
    "trunc.f64.f32": "rf32({a})", "ext.f32.f64": "{a}",
})
# ops that cannot raise: no pc bookkeeping needed before them
PURE_PREFIXES = ("add.i", "sub.i", "mul.i", "fma.i", "not.", "and.", "or.", "xor.", "shl.",
                  "shr.", "abs.i", "min.i", "max.i", "cmp.", "select.", "trunc.i", "ext.i",
                  "const.", "assign.ref", "br", "cond_br", "return", "discard.refs",
                  "import.resolved", "trace", "print", "yield", "break", "cond_break")


__all__ = ["PURE_PREFIXES", "RESULT_RANGES", "SIMPLE_OPS", "WRAPPED_OPS", "two_sided",
           "wrap_lines"]
