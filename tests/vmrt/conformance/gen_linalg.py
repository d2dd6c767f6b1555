"""Writes programs/linalg/*.mlir: linalg named ops and generics, expected
values from NumPy.  Run ``python -m tests.vmrt.conformance.gen_linalg``."""
from __future__ import annotations

import numpy as np

from tests.vmrt.conformance.harness import PROGRAMS
from tests.vmrt.conformance.mlirgen import Program, ttype

R = np.random.default_rng(14)


def ints(shape, lo=-4, hi=5):
    return R.integers(lo, hi, size=shape)


def floats(shape):
    # quarter steps: products and short sums stay exact in f32
    return R.integers(-8, 9, size=shape) / 4.0


def fill(var: str, shape, ety: str, value: str) -> str:
    tt = ttype(shape, ety)
    return (f"%{var}_e = tensor.empty() : {tt}\n"
            f"%{var}_z = arith.constant {value} : {ety}\n"
            f"%{var} = linalg.fill ins(%{var}_z : {ety}) outs(%{var}_e : {tt}) -> {tt}\n")


def matmuls(p: Program) -> None:
    for m, k, n in [(3, 5, 7), (1, 9, 13), (13, 9, 1), (17, 33, 19), (64, 16, 24)]:
        a, b = floats((m, k)), floats((k, n))
        p.func(f"matmul_f32_{m}x{k}x{n}", [(a, "f32"), (b, "f32")],
               fill("init", (m, n), "f32", "0.0") +
               f"%r = linalg.matmul ins(%a0, %a1 : {ttype((m, k), 'f32')}, {ttype((k, n), 'f32')})"
               f" outs(%init : {ttype((m, n), 'f32')}) -> {ttype((m, n), 'f32')}",
               a @ b, "f32", almost=True)
    for m, k, n in [(3, 5, 7), (2, 64, 3), (16, 16, 16)]:
        a, b = ints((m, k), -128, 128), ints((k, n), -128, 128)
        p.func(f"matmul_i8_i32_{m}x{k}x{n}", [(a, "i8"), (b, "i8")],
               fill("init", (m, n), "i32", "0") +
               f"%r = linalg.matmul ins(%a0, %a1 : {ttype((m, k), 'i8')}, {ttype((k, n), 'i8')})"
               f" outs(%init : {ttype((m, n), 'i32')}) -> {ttype((m, n), 'i32')}",
               a @ b, "i32")
    # accumulate into a non-zero init (a computed one: IREE's runtime crashes
    # when the init is the constant itself, writing into its read-only mapping)
    a, b, c = floats((4, 3)), floats((3, 5)), floats((4, 5))
    p.func("matmul_f32_accumulate", [(a, "f32"), (b, "f32"), (-c, "f32")],
           "%c = arith.negf %a2 : tensor<4x5xf32>\n"
           "%r = linalg.matmul ins(%a0, %a1 : tensor<4x3xf32>, tensor<3x5xf32>)"
           " outs(%c : tensor<4x5xf32>) -> tensor<4x5xf32>", c + a @ b, "f32", almost=True)
    a, b = floats((2, 3, 4)), floats((2, 4, 5))
    p.func("batch_matmul_f32", [(a, "f32"), (b, "f32")],
           fill("init", (2, 3, 5), "f32", "0.0") +
           "%r = linalg.batch_matmul ins(%a0, %a1 : tensor<2x3x4xf32>, tensor<2x4x5xf32>)"
           " outs(%init : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>", a @ b, "f32", almost=True)
    a, b = ints((3, 2, 7), -128, 128), ints((3, 7, 3), -128, 128)
    p.func("batch_matmul_i8_i32", [(a, "i8"), (b, "i8")],
           fill("init", (3, 2, 3), "i32", "0") +
           "%r = linalg.batch_matmul ins(%a0, %a1 : tensor<3x2x7xi8>, tensor<3x7x3xi8>)"
           " outs(%init : tensor<3x2x3xi32>) -> tensor<3x2x3xi32>", a @ b, "i32")
    a, v = floats((5, 7)), floats((7,))
    p.func("matvec_f32", [(a, "f32"), (v, "f32")],
           fill("init", (5,), "f32", "0.0") +
           "%r = linalg.matvec ins(%a0, %a1 : tensor<5x7xf32>, tensor<7xf32>)"
           " outs(%init : tensor<5xf32>) -> tensor<5xf32>", a @ v, "f32", almost=True)
    v, a = floats((5,)), floats((5, 9))
    p.func("vecmat_f32", [(v, "f32"), (a, "f32")],
           fill("init", (9,), "f32", "0.0") +
           "%r = linalg.vecmat ins(%a0, %a1 : tensor<5xf32>, tensor<5x9xf32>)"
           " outs(%init : tensor<9xf32>) -> tensor<9xf32>", v @ a, "f32", almost=True)
    a, b = floats((6,)), floats((6,))
    p.func("dot_f32", [(a, "f32"), (b, "f32")],
           fill("init", (), "f32", "0.0") +
           "%r = linalg.dot ins(%a0, %a1 : tensor<6xf32>, tensor<6xf32>)"
           " outs(%init : tensor<f32>) -> tensor<f32>", np.array(a @ b), "f32", almost=True)


def conv_ref(x, w, stride, dil):
    """NHWC x HWCF, no padding."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, f))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    out[:, i, j, :] += x[:, i * stride[0] + a * dil[0],
                                         j * stride[1] + b * dil[1], :] @ w[a, b]
    return out


def dw_ref(x, w, stride, dil):
    n, h, wd, c = x.shape
    kh, kw, _ = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    out[:, i, j, :] += x[:, i * stride[0] + a * dil[0],
                                         j * stride[1] + b * dil[1], :] * w[a, b]
    return out


def attrs(stride, dil) -> str:
    return (f"{{dilations = dense<[{dil[0]}, {dil[1]}]> : tensor<2xi64>, "
            f"strides = dense<[{stride[0]}, {stride[1]}]> : tensor<2xi64>}}")


def convs(p: Program) -> None:
    for name, xs, ws, stride, dil, pad in [
        ("conv_3x3_s1", (1, 5, 5, 2), (3, 3, 2, 3), (1, 1), (1, 1), 0),
        ("conv_3x3_s2", (2, 7, 6, 3), (3, 3, 3, 4), (2, 2), (1, 1), 0),
        ("conv_2x2_d2", (1, 6, 7, 2), (2, 2, 2, 5), (1, 1), (2, 2), 0),
        ("conv_3x3_pad1", (1, 4, 5, 3), (3, 3, 3, 2), (1, 1), (1, 1), 1),
        ("conv_1x1", (1, 3, 4, 8), (1, 1, 8, 16), (1, 1), (1, 1), 0),
        ("conv_3x2_s2x1_d1x2_pad1", (1, 7, 8, 3), (3, 2, 3, 4), (2, 1), (1, 2), 1),
    ]:
        x, w = floats(xs), floats(ws)
        xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0))) if pad else x
        out = conv_ref(xp, w, stride, dil)
        body = ""
        src = "%a0"
        if pad:
            body += (f"%pz = arith.constant 0.0 : f32\n"
                     f"%xp = tensor.pad %a0 low[0, {pad}, {pad}, 0] high[0, {pad}, {pad}, 0] {{\n"
                     f"^bb0(%i0: index, %i1: index, %i2: index, %i3: index):\n"
                     f"tensor.yield %pz : f32\n"
                     f"}} : {ttype(xs, 'f32')} to {ttype(xp.shape, 'f32')}\n")
            src = "%xp"
        body += fill("init", out.shape, "f32", "0.0")
        body += (f"%r = linalg.conv_2d_nhwc_hwcf {attrs(stride, dil)}"
                 f" ins({src}, %a1 : {ttype(xp.shape, 'f32')}, {ttype(ws, 'f32')})"
                 f" outs(%init : {ttype(out.shape, 'f32')}) -> {ttype(out.shape, 'f32')}")
        p.func(name, [(x, "f32"), (w, "f32")], body, out, "f32", almost=True)
    x, w = ints((1, 5, 6, 4), -128, 128), ints((3, 3, 4, 3), -128, 128)
    out = conv_ref(x, w, (1, 1), (1, 1))
    p.func("conv_i8_i32", [(x, "i8"), (w, "i8")],
           fill("init", out.shape, "i32", "0") +
           f"%r = linalg.conv_2d_nhwc_hwcf {attrs((1, 1), (1, 1))}"
           f" ins(%a0, %a1 : tensor<1x5x6x4xi8>, tensor<3x3x4x3xi8>)"
           f" outs(%init : {ttype(out.shape, 'i32')}) -> {ttype(out.shape, 'i32')}", out, "i32")
    for name, xs, ws, stride, dil in [
        ("depthwise_3x3_s1", (1, 6, 6, 3), (3, 3, 3), (1, 1), (1, 1)),
        ("depthwise_3x3_s2_d1", (2, 7, 8, 5), (3, 3, 5), (2, 2), (1, 1)),
        ("depthwise_2x2_d2", (1, 6, 6, 16), (2, 2, 16), (1, 1), (2, 2)),
    ]:
        x, w = floats(xs), floats(ws)
        out = dw_ref(x, w, stride, dil)
        p.func(name, [(x, "f32"), (w, "f32")],
               fill("init", out.shape, "f32", "0.0") +
               f"%r = linalg.depthwise_conv_2d_nhwc_hwc {attrs(stride, dil)}"
               f" ins(%a0, %a1 : {ttype(xs, 'f32')}, {ttype(ws, 'f32')})"
               f" outs(%init : {ttype(out.shape, 'f32')}) -> {ttype(out.shape, 'f32')}",
               out, "f32", almost=True)


def pool_ref(x, k, stride, op):
    n, h, w, c = x.shape
    oh, ow = (h - k[0]) // stride[0] + 1, (w - k[1]) // stride[1] + 1
    out = np.zeros((n, oh, ow, c), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            win = x[:, i * stride[0]:i * stride[0] + k[0], j * stride[1]:j * stride[1] + k[1], :]
            out[:, i, j, :] = op(win, axis=(1, 2))
    return out


def pools(p: Program) -> None:
    for name, op, ety, init, ref in [
        ("pool_max_f32", "pooling_nhwc_max", "f32", "-3.0e+38", np.max),
        ("pool_sum_f32", "pooling_nhwc_sum", "f32", "0.0", np.sum),
        ("pool_max_i32", "pooling_nhwc_max", "i32", "-2147483648", np.max),
        ("pool_min_f32", "pooling_nhwc_min", "f32", "3.0e+38", np.min),
    ]:
        for k, stride in [((2, 2), (2, 2)), ((3, 2), (1, 2))]:
            xs = (1, 6, 7, 3)
            x = floats(xs) if ety == "f32" else ints(xs, -1000, 1000)
            out = pool_ref(x, k, stride, ref)
            p.func(f"{name}_{k[0]}x{k[1]}_s{stride[0]}x{stride[1]}", [(x, ety)],
                   fill("init", out.shape, ety, init) +
                   f"%win = tensor.empty() : tensor<{k[0]}x{k[1]}x{ety}>\n"
                   f"%r = linalg.{op} {attrs(stride, (1, 1))}"
                   f" ins(%a0, %win : {ttype(xs, ety)}, tensor<{k[0]}x{k[1]}x{ety}>)"
                   f" outs(%init : {ttype(out.shape, ety)}) -> {ttype(out.shape, ety)}",
                   out, ety, almost=ety == "f32")


RED_MAPS = ("indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ({o})>], "
            "iterator_types = [{it}]")


def reductions(p: Program) -> None:
    x = floats((5, 37))
    for name, axis, comb, init, ref in [
        ("reduce_sum_rows_f32", 1, "arith.addf", "0.0", np.sum),
        ("reduce_sum_cols_f32", 0, "arith.addf", "0.0", np.sum),
        ("reduce_max_rows_f32", 1, "arith.maximumf", "-3.0e+38", np.max),
        ("reduce_min_cols_f32", 0, "arith.minimumf", "3.0e+38", np.min),
    ]:
        out = ref(x, axis=axis)
        o = "d0" if axis == 1 else "d1"
        it = '"parallel", "reduction"' if axis == 1 else '"reduction", "parallel"'
        p.func(name, [(x, "f32")],
               fill("init", out.shape, "f32", init) +
               f"%r = linalg.generic {{{RED_MAPS.format(o=o, it=it)}}}"
               f" ins(%a0 : tensor<5x37xf32>) outs(%init : {ttype(out.shape, 'f32')}) {{\n"
               f"^bb0(%x: f32, %acc: f32):\n"
               f"%s = {comb} %x, %acc : f32\n"
               f"linalg.yield %s : f32\n"
               f"}} -> {ttype(out.shape, 'f32')}", out, "f32", almost=True)
    xi = ints((4, 300), -100000, 100000)
    p.func("reduce_sum_rows_i32", [(xi, "i32")],
           fill("init", (4,), "i32", "0") +
           f"%r = linalg.generic {{{RED_MAPS.format(o='d0', it=chr(34) + 'parallel' + chr(34) + ', ' + chr(34) + 'reduction' + chr(34))}}}"
           " ins(%a0 : tensor<4x300xi32>) outs(%init : tensor<4xi32>) {\n"
           "^bb0(%x: i32, %acc: i32):\n%s = arith.addi %x, %acc : i32\nlinalg.yield %s : i32\n"
           "} -> tensor<4xi32>", xi.sum(axis=1), "i32")
    # full reduction to a scalar tensor (i64 accumulator from i32)
    xi = ints((1000,), -2**31, 2**31)
    p.func("reduce_sum_all_i32_to_i64", [(xi, "i32")],
           fill("init", (), "i64", "0") +
           "%r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],"
           " iterator_types = [\"reduction\"]} ins(%a0 : tensor<1000xi32>) outs(%init : tensor<i64>) {\n"
           "^bb0(%x: i32, %acc: i64):\n%w = arith.extsi %x : i32 to i64\n"
           "%s = arith.addi %w, %acc : i64\nlinalg.yield %s : i64\n} -> tensor<i64>",
           np.array(xi.sum()), "i64")
    # argmax: two outputs (value, index); ties keep the first
    x = floats((4, 11))
    x[2, 3] = x[2, 7] = 9.0
    p.func("argmax_rows_f32", [(x, "f32")],
           fill("vinit", (4,), "f32", "-3.0e+38") + fill("iinit", (4,), "i32", "0") +
           "%v, %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,"
           " affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],"
           " iterator_types = [\"parallel\", \"reduction\"]}"
           " ins(%a0 : tensor<4x11xf32>) outs(%vinit, %iinit : tensor<4xf32>, tensor<4xi32>) {\n"
           "^bb0(%x: f32, %bv: f32, %bi: i32):\n"
           "%j = linalg.index 1 : index\n%ji = arith.index_cast %j : index to i32\n"
           "%gt = arith.cmpf ogt, %x, %bv : f32\n"
           "%nv = arith.select %gt, %x, %bv : f32\n%ni = arith.select %gt, %ji, %bi : i32\n"
           "linalg.yield %nv, %ni : f32, i32\n} -> (tensor<4xf32>, tensor<4xi32>)",
           np.argmax(x, axis=1), "i32")


def layout(p: Program) -> None:
    x = floats((3, 5))
    p.func("transpose_2d", [(x, "f32")],
           "%e = tensor.empty() : tensor<5x3xf32>\n"
           "%r = linalg.transpose ins(%a0 : tensor<3x5xf32>) outs(%e : tensor<5x3xf32>)"
           " permutation = [1, 0]", x.T, "f32")
    x = ints((2, 3, 4, 5), -100, 100)
    p.func("transpose_4d_i16", [(x, "i16")],
           "%e = tensor.empty() : tensor<4x2x5x3xi16>\n"
           "%r = linalg.transpose ins(%a0 : tensor<2x3x4x5xi16>) outs(%e : tensor<4x2x5x3xi16>)"
           " permutation = [2, 0, 3, 1]", x.transpose(2, 0, 3, 1), "i16")
    x = ints((33, 17), -128, 128)
    p.func("transpose_i8_33x17", [(x, "i8")],
           "%e = tensor.empty() : tensor<17x33xi8>\n"
           "%r = linalg.transpose ins(%a0 : tensor<33x17xi8>) outs(%e : tensor<17x33xi8>)"
           " permutation = [1, 0]", x.T, "i8")
    v = floats((5,))
    p.func("broadcast_rows", [(v, "f32")],
           "%e = tensor.empty() : tensor<3x5xf32>\n"
           "%r = linalg.broadcast ins(%a0 : tensor<5xf32>) outs(%e : tensor<3x5xf32>)"
           " dimensions = [0]", np.broadcast_to(v, (3, 5)), "f32")
    v = ints((2, 3), -1000, 1000)
    p.func("broadcast_middle_i64", [(v, "i64")],
           "%e = tensor.empty() : tensor<2x4x3xi64>\n"
           "%r = linalg.broadcast ins(%a0 : tensor<2x3xi64>) outs(%e : tensor<2x4x3xi64>)"
           " dimensions = [1]", np.broadcast_to(v[:, None, :], (2, 4, 3)), "i64")
    # fills of several element types
    for ety, val in [("i8", -7), ("i16", 1234), ("i64", -(2**40) - 3), ("f32", -2.25)]:
        # a runtime value so the fill is not a constant
        p.func(f"fill_{ety}", [(np.array([val]), ety)],
               "%c0 = arith.constant 0 : index\n"
               f"%v = tensor.extract %a0[%c0] : tensor<1x{ety}>\n"
               f"%e = tensor.empty() : tensor<3x17x{ety}>\n"
               f"%r = linalg.fill ins(%v : {ety}) outs(%e : tensor<3x17x{ety}>) -> tensor<3x17x{ety}>",
               np.full((3, 17), val), ety)


def generics(p: Program) -> None:
    a, b, c = floats((4, 6)), floats((4, 6)), floats((6,))
    d = ints((4, 6), -5, 6)
    m = R.integers(0, 2, size=(4, 6)).astype(bool)
    s = floats((4, 1))
    # r = m ? (a*b + c[j]) : (float(d) - s[i])
    exp = np.where(m, a * b + c[None, :], d - s)
    p.func("generic_five_inputs", [(a, "f32"), (b, "f32"), (c, "f32"), (d, "i32"), (m, "i1"),
                                   (s, "f32")],
           "%e = tensor.empty() : tensor<4x6xf32>\n"
           "%r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,"
           " affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>,"
           " affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (i, j)>],"
           " iterator_types = [\"parallel\", \"parallel\"]}"
           " ins(%a0, %a1, %a2, %a3, %a4, %a5 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<6xf32>,"
           " tensor<4x6xi32>, tensor<4x6xi1>, tensor<4x1xf32>) outs(%e : tensor<4x6xf32>) {\n"
           "^bb0(%x: f32, %y: f32, %z: f32, %w: i32, %k: i1, %t: f32, %o: f32):\n"
           "%p = arith.mulf %x, %y : f32\n%q = arith.addf %p, %z : f32\n"
           "%wf = arith.sitofp %w : i32 to f32\n%u = arith.subf %wf, %t : f32\n"
           "%v = arith.select %k, %q, %u : f32\nlinalg.yield %v : f32\n} -> tensor<4x6xf32>",
           exp, "f32", almost=True)
    # two results from one generic, mixed types, using linalg.index
    x = ints((3, 9), -50, 50)
    p.func("generic_index_two_results", [(x, "i32")],
           "%e0 = tensor.empty() : tensor<3x9xi32>\n%e1 = tensor.empty() : tensor<3x9xi16>\n"
           "%r, %r1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,"
           " affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],"
           " iterator_types = [\"parallel\", \"parallel\"]}"
           " ins(%a0 : tensor<3x9xi32>) outs(%e0, %e1 : tensor<3x9xi32>, tensor<3x9xi16>) {\n"
           "^bb0(%x: i32, %o0: i32, %o1: i16):\n"
           "%i = linalg.index 0 : index\n%j = linalg.index 1 : index\n"
           "%ii = arith.index_cast %i : index to i32\n%ji = arith.index_cast %j : index to i32\n"
           "%c10 = arith.constant 10 : i32\n%t = arith.muli %ii, %c10 : i32\n"
           "%u = arith.addi %t, %ji : i32\n%v = arith.muli %u, %x : i32\n"
           "%h = arith.trunci %v : i32 to i16\nlinalg.yield %v, %h : i32, i16\n"
           "} -> (tensor<3x9xi32>, tensor<3x9xi16>)",
           (np.arange(3)[:, None] * 10 + np.arange(9)[None, :]) * x, "i32")
    # elementwise chain fused with a reduction (softmax-free "mean of squares")
    x = floats((6, 10))
    p.func("generic_square_then_mean", [(x, "f32")],
           fill("init", (6,), "f32", "0.0") +
           "%sq = arith.mulf %a0, %a0 : tensor<6x10xf32>\n"
           "%s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,"
           " affine_map<(d0, d1) -> (d0)>], iterator_types = [\"parallel\", \"reduction\"]}"
           " ins(%sq : tensor<6x10xf32>) outs(%init : tensor<6xf32>) {\n"
           "^bb0(%x: f32, %acc: f32):\n%t = arith.addf %x, %acc : f32\nlinalg.yield %t : f32\n"
           "} -> tensor<6xf32>\n"
           "%ten = arith.constant dense<10.0> : tensor<6xf32>\n"
           "%r = arith.divf %s, %ten : tensor<6xf32>", (x * x).mean(axis=1), "f32", almost=True)


def f16_linalg(p: Program) -> None:
    """linalg on f16 (in arith/f16.mlir: iree-compile cannot link f16 code for arm)."""
    a, b = floats((3, 6)), floats((6, 5))
    p.func("matmul_f16", [(a, "f16"), (b, "f16")],
           fill("init", (3, 5), "f16", "0.0") +
           "%r = linalg.matmul ins(%a0, %a1 : tensor<3x6xf16>, tensor<6x5xf16>)"
           " outs(%init : tensor<3x5xf16>) -> tensor<3x5xf16>", a @ b, "f16", almost=True)
    p.func("fill_f16", [(np.array([1.5]), "f16")],
           "%c0 = arith.constant 0 : index\n"
           "%v = tensor.extract %a0[%c0] : tensor<1xf16>\n"
           "%e = tensor.empty() : tensor<3x17xf16>\n"
           "%r = linalg.fill ins(%v : f16) outs(%e : tensor<3x17xf16>) -> tensor<3x17xf16>",
           np.full((3, 17), 1.5), "f16")


def main() -> None:
    p = Program("// linalg named ops and generics; expected values computed with NumPy\n"
                "// (tests/vmrt/conformance/gen_linalg.py writes this file)")
    matmuls(p)
    convs(p)
    pools(p)
    reductions(p)
    layout(p)
    generics(p)
    p.write(PROGRAMS / "linalg" / "linalg.mlir")
    print(len(p.funcs), "functions")


if __name__ == "__main__":
    main()
