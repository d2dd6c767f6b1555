"""Writes programs/arith/*.mlir and programs/types/*.mlir: integer and
float arithmetic, math functions, casts, bf16 / i1 / i4 element types;
expected values from NumPy (and Python's ``math`` for erf).
Run ``python -m tests.vmrt.conformance.gen_arith``."""
from __future__ import annotations

import math

import numpy as np

from tests.vmrt.conformance.gen_linalg import f16_linalg
from tests.vmrt.conformance.harness import PROGRAMS
from tests.vmrt.conformance.mlirgen import Program

R = np.random.default_rng(2014)
N = 11   # odd vector length: exercises vector tails


def _wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _u(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


INT_OPS = {
    "addi": lambda a, b, n: a + b,
    "subi": lambda a, b, n: a - b,
    "muli": lambda a, b, n: a * b,
    "minsi": lambda a, b, n: min(a, b),
    "maxsi": lambda a, b, n: max(a, b),
    "minui": lambda a, b, n: a if _u(a, n) < _u(b, n) else b,
    "maxui": lambda a, b, n: a if _u(a, n) > _u(b, n) else b,
    "andi": lambda a, b, n: a & b,
    "ori": lambda a, b, n: a | b,
    "xori": lambda a, b, n: a ^ b,
}
DIV_OPS = {
    "divsi": lambda a, b, n: _tdiv(a, b),
    "divui": lambda a, b, n: _u(a, n) // _u(b, n),
    "remsi": lambda a, b, n: a - b * _tdiv(a, b),
    "remui": lambda a, b, n: _u(a, n) % _u(b, n),
    "ceildivsi": lambda a, b, n: -((-a) // b),
    "floordivsi": lambda a, b, n: a // b,
}
SHIFT_OPS = {
    "shli": lambda a, s, n: a << s,
    "shrsi": lambda a, s, n: a >> s,
    "shrui": lambda a, s, n: _u(a, n) >> s,
}


def integers(p: Program, pdiv: Program, pwide: Program) -> None:
    """Division goes to ``pdiv`` (i8..i32) and ``pwide`` (i64)."""
    for bits in (8, 16, 32, 64):
        t = f"i{bits}"
        lo, hi = -(1 << (bits - 1)), 1 << (bits - 1)
        edge = [lo, hi - 1, -1, 0, 1, lo + 1]
        a = [*edge, *(int(x) for x in R.integers(lo, hi, size=N - len(edge), dtype=np.int64))]
        b = [int(x) for x in R.integers(lo, hi, size=N, dtype=np.int64)]
        # small divisors too, never 0, and never (MIN, -1)
        b[:4] = [3, -7, 2, 5]
        b = [x if x != 0 else 1 for x in b]
        b = [(2 if (x == -1 and y == lo) else x) for x, y in zip(b, a)]
        tt = f"tensor<{N}x{t}>"
        for name, fn in [*INT_OPS.items(), *DIV_OPS.items()]:
            exp = [_wrap(fn(x, y, bits), bits) for x, y in zip(a, b)]
            (p if name in INT_OPS else pwide if bits == 64 else pdiv).func(f"{name}_{t}", [(np.array(a, dtype=object), t), (np.array(b, dtype=object), t)],
                   f"%r = arith.{name} %a0, %a1 : {tt}", np.array(exp, dtype=object), t)
        s = [int(x) for x in R.integers(0, bits, size=N)]
        s[:3] = [0, bits - 1, 1]
        for name, fn in SHIFT_OPS.items():
            exp = [_wrap(fn(x, y, bits), bits) for x, y in zip(a, s)]
            p.func(f"{name}_{t}", [(np.array(a, dtype=object), t), (np.array(s), t)],
                   f"%r = arith.{name} %a0, %a1 : {tt}", np.array(exp, dtype=object), t)
        # compare + select, signed and unsigned
        exp = [x if x < y else y * 2 for x, y in zip(a, b)]
        p.func(f"cmpi_slt_select_{t}", [(np.array(a, dtype=object), t), (np.array(b, dtype=object), t)],
               f"%c = arith.cmpi slt, %a0, %a1 : {tt}\n%two = arith.addi %a1, %a1 : {tt}\n"
               f"%r = arith.select %c, %a0, %two : tensor<{N}xi1>, {tt}",
               np.array([_wrap(v, bits) for v in exp], dtype=object), t)
        exp = [1 if _u(x, bits) >= _u(y, bits) else 0 for x, y in zip(a, b)]
        p.func(f"cmpi_uge_{t}", [(np.array(a, dtype=object), t), (np.array(b, dtype=object), t)],
               f"%c = arith.cmpi uge, %a0, %a1 : {tt}\n"
               f"%r = arith.extui %c : tensor<{N}xi1> to tensor<{N}xi32>", np.array(exp), "i32")
        # sign / zero extension and truncation across widths
        if bits < 64:
            w = 64
            p.func(f"extsi_{t}_i64", [(np.array(a, dtype=object), t)],
                   f"%r = arith.extsi %a0 : {tt} to tensor<{N}xi64>", np.array(a, dtype=object), "i64")
            p.func(f"extui_{t}_i64", [(np.array(a, dtype=object), t)],
                   f"%r = arith.extui %a0 : {tt} to tensor<{N}xi64>",
                   np.array([_u(x, bits) for x in a], dtype=object), "i64")
            wide = [int(x) for x in R.integers(-(1 << 62), 1 << 62, size=N, dtype=np.int64)]
            p.func(f"trunci_i64_{t}", [(np.array(wide, dtype=object), "i64")],
                   f"%r = arith.trunci %a0 : tensor<{N}xi64> to {tt}",
                   np.array([_wrap(x, bits) for x in wide], dtype=object), t)
            _ = w
    # math on integers
    a = [int(x) for x in R.integers(-(1 << 31), 1 << 31, size=N, dtype=np.int64)]
    a[0] = -(1 << 31)
    p.func("absi_i32", [(np.array(a, dtype=object), "i32")],
           f"%r = math.absi %a0 : tensor<{N}xi32>", np.array([_wrap(abs(x), 32) for x in a], dtype=object), "i32")
    p.func("ctpop_i32", [(np.array(a, dtype=object), "i32")],
           f"%r = math.ctpop %a0 : tensor<{N}xi32>", np.array([bin(_u(x, 32)).count("1") for x in a]), "i32")
    a[1] = 0
    p.func("ctlz_i32", [(np.array(a, dtype=object), "i32")],
           f"%r = math.ctlz %a0 : tensor<{N}xi32>", np.array([32 - _u(x, 32).bit_length() for x in a]), "i32")
    p.func("cttz_i64", [(np.array(a, dtype=object), "i64")],
           f"%r = math.cttz %a0 : tensor<{N}xi64>",
           np.array([64 if x == 0 else (_u(x, 64) & -_u(x, 64)).bit_length() - 1 for x in a]), "i64")


def _f(shape=(N,), scale=10.0):
    return (R.standard_normal(shape) * scale).astype(np.float32)


def floats(p: Program, t: str = "f32") -> None:
    """f32 (or f16/f64) arithmetic without transcendental library calls."""
    dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[t]
    tt = f"tensor<{N}x{t}>"
    a, b = _f().astype(dt), _f().astype(dt)
    b[b == 0] = 1
    a[:4] = [2.5, -2.5, 0.5, -0.0]
    ops = {"addf": a + b, "subf": a - b, "mulf": a * b, "divf": a / b,
           "maximumf": np.maximum(a, b), "minimumf": np.minimum(a, b)}
    for name, exp in ops.items():
        p.func(f"{name}_{t}", [(a, t), (b, t)], f"%r = arith.{name} %a0, %a1 : {tt}", exp, t,
               almost=True)
    un = {"negf": ("arith.negf", -a), "absf": ("math.absf", np.abs(a)),
          "floor": ("math.floor", np.floor(a)), "ceil": ("math.ceil", np.ceil(a)),
          }
    if t == "f64":
        # iree-compile cannot link f64 ceil/trunc for x86_64 (undefined symbols)
        un = {k: un[k] for k in ("negf", "absf")}
    for name, (op, exp) in un.items():
        p.func(f"{name}_{t}", [(a, t)], f"%r = {op} %a0 : {tt}", exp, t, almost=True)
    pos = np.abs(a) + dt(0.25)
    p.func(f"sqrt_{t}", [(pos, t)], f"%r = math.sqrt %a0 : {tt}", np.sqrt(pos), t, almost=True)
    p.func(f"rsqrt_{t}", [(pos, t)], f"%r = math.rsqrt %a0 : {tt}", 1 / np.sqrt(pos), t,
           almost=True)
    p.func(f"copysign_{t}", [(a, t), (b, t)], f"%r = math.copysign %a0, %a1 : {tt}",
           np.copysign(a, b), t, almost=True)
    p.func(f"cmpf_select_{t}", [(a, t), (b, t)],
           f"%c = arith.cmpf olt, %a0, %a1 : {tt}\n%d = arith.cmpf oge, %a0, %a1 : {tt}\n"
           f"%s = arith.select %c, %a0, %a1 : tensor<{N}xi1>, {tt}\n"
           f"%z = arith.constant dense<0.0> : {tt}\n"
           f"%r = arith.select %d, %s, %z : tensor<{N}xi1>, {tt}",
           np.where(a >= b, b, 0), t, almost=True)
    p.func(f"fptosi_{t}_i32", [(a, t)], f"%r = arith.fptosi %a0 : {tt} to tensor<{N}xi32>",
           np.trunc(a).astype(np.int64), "i32")
    p.func(f"fptoui_{t}_i32", [(pos, t)], f"%r = arith.fptoui %a0 : {tt} to tensor<{N}xi32>",
           np.trunc(pos).astype(np.int64), "i32")
    ii = R.integers(-2000, 2000, size=N) if t == "f16" else R.integers(-(1 << 20), 1 << 20, size=N)
    p.func(f"sitofp_i32_{t}", [(ii, "i32")], f"%r = arith.sitofp %a0 : tensor<{N}xi32> to {tt}",
           ii.astype(dt), t, almost=True)
    p.func(f"uitofp_i16_{t}", [(ii, "i16")], f"%r = arith.uitofp %a0 : tensor<{N}xi16> to {tt}",
           (ii & 0xFFFF).astype(dt), t, almost=True)


def float32_extras(p: Program, pwide: Program) -> None:
    tt = f"tensor<{N}xf32>"
    a = _f()
    big = (R.integers(-(1 << 40), 1 << 40, size=N)).astype(np.int64)
    pwide.func("sitofp_i64_f32", [(big, "i64")], f"%r = arith.sitofp %a0 : tensor<{N}xi64> to {tt}",
           big.astype(np.float32), "f32", almost=True)
    pwide.func("fptosi_f32_i64", [(a * 1e6, "f32")], f"%r = arith.fptosi %a0 : {tt} to tensor<{N}xi64>",
           np.trunc((a * 1e6).astype(np.float32)).astype(np.int64), "i64")
    p.func("bitcast_f32_i32", [(a, "f32")], f"%r = arith.bitcast %a0 : {tt} to tensor<{N}xi32>",
           a.view(np.int32), "i32")
    bits = R.integers(0, 0x7F000000, size=N).astype(np.int32)
    p.func("bitcast_i32_f32", [(bits, "i32")], f"%r = arith.bitcast %a0 : tensor<{N}xi32> to {tt}",
           bits.view(np.float32), "f32", almost=True)
    p.func("fptosi_f32_i8", [(a, "f32")], f"%r = arith.fptosi %a0 : {tt} to tensor<{N}xi8>",
           np.trunc(a).astype(np.int64), "i8")
    x = _f((4, 5))
    p.func("mulf_addf_chain_2d", [(x, "f32")],
           "%c = arith.constant dense<1.5> : tensor<4x5xf32>\n"
           "%m = arith.mulf %a0, %c : tensor<4x5xf32>\n%s = arith.addf %m, %a0 : tensor<4x5xf32>\n"
           "%r = arith.subf %s, %c : tensor<4x5xf32>", x * 1.5 + x - 1.5, "f32", almost=True)


def f16_extras(p: Program) -> None:
    tt = f"tensor<{N}xf16>"
    a = _f()
    p.func("truncf_f32_f16_bits", [(a, "f32")],
           f"%h = arith.truncf %a0 : tensor<{N}xf32> to {tt}\n"
           f"%r = arith.bitcast %h : {tt} to tensor<{N}xi16>",
           a.astype(np.float16).view(np.int16), "i16")
    h = a.astype(np.float16)
    p.func("extf_f16_f32", [(h, "f16")], f"%r = arith.extf %a0 : {tt} to tensor<{N}xf32>",
           h.astype(np.float32), "f32")
    f16_linalg(p)


def f64_extras(p: Program, pwide: Program) -> None:
    tt = f"tensor<{N}xf64>"
    a = R.standard_normal(N) * 1e10
    p.func("extf_f32_f64", [(a.astype(np.float32), "f32")],
           f"%r = arith.extf %a0 : tensor<{N}xf32> to {tt}", a.astype(np.float32).astype(np.float64),
           "f64")
    p.func("truncf_f64_f32", [(a, "f64")], f"%r = arith.truncf %a0 : {tt} to tensor<{N}xf32>",
           a.astype(np.float32), "f32")
    pwide.func("fptosi_f64_i64", [(a, "f64")], f"%r = arith.fptosi %a0 : {tt} to tensor<{N}xi64>",
           np.trunc(a).astype(np.int64), "i64")
    big = R.integers(-(1 << 62), 1 << 62, size=N).astype(np.int64)
    pwide.func("sitofp_i64_f64", [(big, "i64")], f"%r = arith.sitofp %a0 : tensor<{N}xi64> to {tt}",
           big.astype(np.float64), "f64", almost=True)
    p.func("bitcast_f64_i64", [(a, "f64")], f"%r = arith.bitcast %a0 : {tt} to tensor<{N}xi64>",
           a.view(np.int64), "i64")
    x, y = R.standard_normal((3, 4)), R.standard_normal((4, 5))
    p.func("matmul_f64", [(x, "f64"), (y, "f64")],
           "%e = tensor.empty() : tensor<3x5xf64>\n%z = arith.constant 0.0 : f64\n"
           "%f = linalg.fill ins(%z : f64) outs(%e : tensor<3x5xf64>) -> tensor<3x5xf64>\n"
           "%r = linalg.matmul ins(%a0, %a1 : tensor<3x4xf64>, tensor<4x5xf64>)"
           " outs(%f : tensor<3x5xf64>) -> tensor<3x5xf64>", x @ y, "f64", almost=True)


def transcendental(p: Program, softmax: bool = True) -> None:
    tt = f"tensor<{N}xf32>"
    # roundf/roundevenf come from musl bitcode that relies on float (not x87
    # extended) evaluation: wrong on i386 hardware, so they live here
    r = _f()
    r[:4] = [2.5, -2.5, 0.5, -0.0]
    p.func("round_f32", [(r, "f32")], f"%r = math.round %a0 : {tt}",
           np.sign(r) * np.floor(np.abs(r) + np.float32(0.5)), "f32", almost=True)
    p.func("roundeven_f32", [(r, "f32")], f"%r = math.roundeven %a0 : {tt}", np.round(r), "f32",
           almost=True)
    x = (R.standard_normal(N) * 2).astype(np.float32)
    x64 = x.astype(np.float64)
    pos = np.abs(x) + np.float32(0.1)
    p64 = pos.astype(np.float64)
    cases = [
        ("exp", "math.exp", x, np.exp(x64)),
        ("exp2", "math.exp2", x, np.exp2(x64)),
        ("expm1", "math.expm1", x, np.expm1(x64)),
        ("log", "math.log", pos, np.log(p64)),
        ("log2", "math.log2", pos, np.log2(p64)),
        ("log1p", "math.log1p", pos, np.log1p(p64)),
        ("tanh", "math.tanh", x, np.tanh(x64)),
        ("sin", "math.sin", x, np.sin(x64)),
        ("cos", "math.cos", x, np.cos(x64)),
        ("atan", "math.atan", x, np.arctan(x64)),
        ("erf", "math.erf", x, np.array([math.erf(v) for v in x64])),
    ]
    for name, op, arg, exp in cases:
        p.func(f"{name}_f32", [(arg, "f32")], f"%r = {op} %a0 : {tt}", exp, "f32", almost=True,
               atol=1e-4)
    y = (R.standard_normal(N)).astype(np.float32)
    p.func("powf_f32", [(pos, "f32"), (y, "f32")], f"%r = math.powf %a0, %a1 : {tt}",
           np.power(p64, y.astype(np.float64)), "f32", almost=True, atol=1e-4)
    p.func("atan2_f32", [(x, "f32"), (y, "f32")], f"%r = math.atan2 %a0, %a1 : {tt}",
           np.arctan2(x64, y.astype(np.float64)), "f32", almost=True, atol=1e-4)
    p.func("sigmoid_f32", [(x, "f32")],
           f"%one = arith.constant dense<1.0> : {tt}\n%n = arith.negf %a0 : {tt}\n"
           f"%e = math.exp %n : {tt}\n%d = arith.addf %one, %e : {tt}\n%r = arith.divf %one, %d : {tt}",
           1 / (1 + np.exp(-x64)), "f32", almost=True, atol=1e-4)
    z = (R.standard_normal(N)).astype(np.float32)
    p.func("fma_f32", [(x, "f32"), (y, "f32"), (z, "f32")], f"%r = math.fma %a0, %a1, %a2 : {tt}",
           x64 * y + z, "f32", almost=True)
    p.func("remf_f32", [(x * 3, "f32"), (pos, "f32")], f"%r = arith.remf %a0, %a1 : {tt}",
           np.fmod((x * 3).astype(np.float64), p64), "f32", almost=True)
    if not softmax:
        return
    s = (R.standard_normal((3, 7)) * 3).astype(np.float32)
    e = np.exp(s.astype(np.float64) - s.max(axis=1, keepdims=True))
    p.func("softmax_f32", [(s, "f32")],
           "%e = tensor.empty() : tensor<3x7xf32>\n"
           "%r = linalg.softmax dimension(1) ins(%a0 : tensor<3x7xf32>) outs(%e : tensor<3x7xf32>)"
           " -> tensor<3x7xf32>", e / e.sum(axis=1, keepdims=True), "f32", almost=True, atol=1e-5)


def types(p: Program) -> None:
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    a, b = _f().astype(bf), _f().astype(bf)
    tt = f"tensor<{N}xbf16>"
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    for name, exp in [("addf", fa + fb), ("mulf", fa * fb), ("subf", fa - fb)]:
        # exact in f32; IREE may or may not round the bf16 result before the
        # extf, so allow half a bf16 ulp (|values| < 256)
        p.func(f"{name}_bf16", [(fa, "bf16"), (fb, "bf16")],
               f"%s = arith.{name} %a0, %a1 : {tt}\n%r = arith.extf %s : {tt} to tensor<{N}xf32>",
               exp, "f32", almost=True, atol=0.51)
    x = _f()
    p.func("truncf_f32_bf16_bits", [(x, "f32")],
           f"%h = arith.truncf %a0 : tensor<{N}xf32> to {tt}\n%r = arith.bitcast %h : {tt} to tensor<{N}xi16>",
           x.astype(bf).view(np.int16), "i16")
    m, k, n = 3, 8, 5
    xa, xb = (R.integers(-8, 9, (m, k)) / 4), (R.integers(-8, 9, (k, n)) / 4)
    p.func("matmul_bf16_f32", [(xa, "bf16"), (xb, "bf16")],
           f"%e = tensor.empty() : tensor<{m}x{n}xf32>\n%z = arith.constant 0.0 : f32\n"
           f"%f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>\n"
           f"%r = linalg.matmul ins(%a0, %a1 : tensor<{m}x{k}xbf16>, tensor<{k}x{n}xbf16>)"
           f" outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>", xa @ xb, "f32", almost=True)
    # i1 masks
    u, v = _f(), _f()
    mu, mv = u > 0, v > 0
    p.func("i1_mask_logic", [(u, "f32"), (v, "f32")],
           f"%z = arith.constant dense<0.0> : tensor<{N}xf32>\n"
           f"%p = arith.cmpf ogt, %a0, %z : tensor<{N}xf32>\n%q = arith.cmpf ogt, %a1, %z : tensor<{N}xf32>\n"
           f"%x = arith.xori %p, %q : tensor<{N}xi1>\n%o = arith.ori %p, %q : tensor<{N}xi1>\n"
           f"%r = arith.andi %x, %o : tensor<{N}xi1>", mu ^ mv, "i1")
    p.func("i1_mask_input_select_count", [(mu, "i1"), (u, "f32")],
           f"%z = arith.constant dense<0.0> : tensor<{N}xf32>\n"
           f"%s = arith.select %a0, %a1, %z : tensor<{N}xi1>, tensor<{N}xf32>\n"
           f"%c = arith.extui %a0 : tensor<{N}xi1> to tensor<{N}xi32>\n"
           f"%fc = arith.sitofp %c : tensor<{N}xi32> to tensor<{N}xf32>\n"
           f"%r = arith.addf %s, %fc : tensor<{N}xf32>", np.where(mu, u, 0) + mu, "f32", almost=True)
    mm = R.integers(0, 2, (3, 17)).astype(bool)
    p.func("i1_2d_not", [(mm, "i1")],
           "%t = arith.constant dense<true> : tensor<3x17xi1>\n"
           "%r = arith.xori %a0, %t : tensor<3x17xi1>", ~mm, "i1")
    # i4 (sub-byte, packed two per byte)
    q = R.integers(-8, 8, size=16)
    p.func("i4_extsi", [(q, "i4")], "%r = arith.extsi %a0 : tensor<16xi4> to tensor<16xi32>", q, "i32")
    p.func("i4_extui", [(q, "i4")], "%r = arith.extui %a0 : tensor<16xi4> to tensor<16xi32>", q & 15, "i32")
    w = R.integers(-100, 100, size=16)
    p.func("i4_trunci_extsi", [(w, "i32")],
           "%t = arith.trunci %a0 : tensor<16xi32> to tensor<16xi4>\n"
           "%r = arith.extsi %t : tensor<16xi4> to tensor<16xi32>",
           ((w & 15) ^ 8) - 8, "i32")
    d = R.integers(-8, 8, size=(4, 8))
    p.func("i4_dequant_matvec", [(d, "i4"), (np.arange(8) / 4, "f32")],
           "%w = arith.sitofp %a0 : tensor<4x8xi4> to tensor<4x8xf32>\n"
           "%e = tensor.empty() : tensor<4xf32>\n%z = arith.constant 0.0 : f32\n"
           "%f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>\n"
           "%r = linalg.matvec ins(%w, %a1 : tensor<4x8xf32>, tensor<8xf32>) outs(%f : tensor<4xf32>)"
           " -> tensor<4xf32>", d @ (np.arange(8) / 4), "f32", almost=True)


MATH_NOTE = ("// transcendental math: iree-compile links a zero-byte `fmaf` (musl wasm32\n"
             "// bitcode) into dispatches for CPUs without FMA, so arm (without +vfp4)\n"
             "// and i386 cannot run this program; arm runs it in math_arm_vfp4.mlir\n")


def main() -> None:
    out = PROGRAMS / "arith"
    hdr = "// (tests/vmrt/conformance/gen_arith.py writes this file)\n"
    p = Program("// integer arith on i8/i16/i32/i64; expected values computed in Python\n" + hdr)
    pdiv = Program("// ARCHES: x86_64 aarch64 riscv64 i386 riscv32\n"
                   "// integer division on i8/i16/i32; not arm: iree-compile does not link\n"
                   "// __aeabi_idiv/__aeabi_idivmod for armv7-a (no hardware divide)\n" + hdr)
    pwide = Program("// ARCHES: x86_64 aarch64 riscv64\n"
                    "// FLAGS: --iree-input-demote-f64-to-f32=false\n"
                    "// i64 division and i64<->float casts: on the 32-bit CPUs iree-compile does\n"
                    "// not link the compiler-rt helpers they need (__divdi3, __aeabi_ldivmod,\n"
                    "// __fixsfdi, __aeabi_l2f, ...)\n" + hdr)
    integers(p, pdiv, pwide)
    p = _write(p, out / "int.mlir")
    _write(pdiv, out / "int_div.mlir")
    p = Program("// f32 arith, rounding, comparisons and casts; expected values from NumPy\n" + hdr)
    floats(p, "f32")
    float32_extras(p, pwide)
    _write(p, out / "float.mlir")
    p = Program("// ARCHES: x86_64 aarch64 riscv64 i386 riscv32\n"
                "// f16 arith and linalg; not arm: iree-compile cannot link f16 code for armv7\n"
                "// (undefined __aeabi_h2f / __aeabi_f2h)\n" + hdr)
    floats(p, "f16")
    f16_extras(p)
    _write(p, out / "f16.mlir")
    p = Program("// ARCHES: x86_64 aarch64 riscv64 arm i386\n"
                "// FLAGS: --iree-input-demote-f64-to-f32=false\n"
                "// f64 arith and casts; not riscv32 (rv32imf: iree-compile does not link the\n"
                "// soft-double helpers __adddf3, __divdf3, ...)\n" + hdr)
    floats(p, "f64")
    f64_extras(p, pwide)
    _write(p, out / "f64.mlir")
    _write(pwide, out / "wide64.mlir")
    p = Program("// ARCHES: x86_64 aarch64 riscv64 riscv32\n" + MATH_NOTE + hdr)
    transcendental(p)
    _write(p, out / "math.mlir")
    p = Program("// ARCHES: arm\n// FLAGS: --iree-llvmcpu-target-cpu-features=+vfp4\n"
                "// math.mlir's functions for arm with VFPv4 (so with fmaf), but softmax:\n"
                "// iree-compile does not link its fmaxf for arm\n" + hdr)
    transcendental(p, softmax=False)
    _write(p, out / "math_arm_vfp4.mlir")
    p = Program("// bf16, i1 masks and i4; expected values from NumPy / ml_dtypes\n" + hdr)
    types(p)
    _write(p, PROGRAMS / "types" / "types.mlir")


def _write(p: Program, path) -> Program:
    p.write(path)
    print(path.name, len(p.funcs))
    return p


if __name__ == "__main__":
    main()
