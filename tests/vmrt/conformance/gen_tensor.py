"""Writes programs/tensor/tensor.mlir: tensor dialect ops (slices, concat,
pad, reshapes, reverse, gathers, dynamic shapes), expected values from NumPy.
Run ``python -m tests.vmrt.conformance.gen_tensor``."""
from __future__ import annotations

import numpy as np

from tests.vmrt.conformance.harness import PROGRAMS
from tests.vmrt.conformance.mlirgen import Program, dense

R = np.random.default_rng(1414)


def ints(shape, lo=-100, hi=100):
    return R.integers(lo, hi, size=shape)


def slices(p: Program) -> None:
    x = ints((4, 8))
    p.func("extract_slice_strided", [(x, "i32")],
           "%r = tensor.extract_slice %a0[1, 2] [2, 3] [1, 2] : tensor<4x8xi32> to tensor<2x3xi32>",
           x[1:3, 2:8:2], "i32")
    x = ints((3, 5, 7))
    p.func("extract_slice_rank_reducing", [(x, "i32")],
           "%r = tensor.extract_slice %a0[1, 0, 2] [1, 5, 4] [1, 1, 1] : tensor<3x5x7xi32> to tensor<5x4xi32>",
           x[1, :, 2:6], "i32")
    x, s = ints((5, 6)), ints((2, 3))
    c = ints((5, 6))
    out = c.copy()
    out[1:3, 2:5] = s
    p.func("insert_slice_into_constant", [(s, "i32")],
           f"%c = arith.constant {dense(c, 'i32')}\n"
           "%r = tensor.insert_slice %a0 into %c[1, 2] [2, 3] [1, 1] : tensor<2x3xi32> into tensor<5x6xi32>",
           out, "i32")
    out = x.astype(float).copy()
    out[0:4:2, 1:6:2] = s
    # (the destination is computed: inserting into the unfoldable constant
    # itself makes IREE's runtime write its read-only rodata)
    p.func("insert_slice_strided_f32", [(-x, "f32"), (s, "f32")],
           "%d = arith.negf %a0 : tensor<5x6xf32>\n"
           "%r = tensor.insert_slice %a1 into %d[0, 1] [2, 3] [2, 2] : tensor<2x3xf32> into tensor<5x6xf32>",
           out, "f32")
    # two inserts into a fresh tensor (a "pack" of two tensors)
    a, b = ints((3,)), ints((4,))
    p.func("insert_two_slices", [(a, "i16"), (b, "i16")],
           "%e = tensor.empty() : tensor<2x4xi16>\n%z = arith.constant 0 : i16\n"
           "%f = linalg.fill ins(%z : i16) outs(%e : tensor<2x4xi16>) -> tensor<2x4xi16>\n"
           "%t = tensor.insert_slice %a0 into %f[0, 1] [1, 3] [1, 1] : tensor<3xi16> into tensor<2x4xi16>\n"
           "%r = tensor.insert_slice %a1 into %t[1, 0] [1, 4] [1, 1] : tensor<4xi16> into tensor<2x4xi16>",
           np.array([[0, *a], b]), "i16")
    x = ints((6,))
    out = x.copy()
    out[2] = 777
    p.func("tensor_insert_scalar", [(x - 1, "i32")],
           "%one = arith.constant dense<1> : tensor<6xi32>\n%d = arith.addi %a0, %one : tensor<6xi32>\n"
           "%c2 = arith.constant 2 : index\n%v = arith.constant 777 : i32\n"
           "%r = tensor.insert %v into %d[%c2] : tensor<6xi32>", out, "i32")


def concat_pad(p: Program) -> None:
    a, b = ints((2, 3)), ints((2, 4))
    p.func("concat_dim1", [(a, "i32"), (b, "i32")],
           "%r = tensor.concat dim(1) %a0, %a1 : (tensor<2x3xi32>, tensor<2x4xi32>) -> tensor<2x7xi32>",
           np.concatenate([a, b], axis=1), "i32")
    a, b, c = ints((1, 3)), ints((2, 3)), ints((3, 3))
    p.func("concat_dim0_three_i8", [(a, "i8"), (b, "i8"), (c, "i8")],
           "%r = tensor.concat dim(0) %a0, %a1, %a2 : (tensor<1x3xi8>, tensor<2x3xi8>, tensor<3x3xi8>)"
           " -> tensor<6x3xi8>", np.concatenate([a, b, c]), "i8")
    x = ints((2, 3))
    p.func("pad_const", [(x, "f32")],
           "%v = arith.constant -1.5 : f32\n"
           "%r = tensor.pad %a0 low[1, 2] high[2, 0] {\n^bb0(%i: index, %j: index):\n"
           "tensor.yield %v : f32\n} : tensor<2x3xf32> to tensor<5x5xf32>",
           np.pad(x.astype(float), ((1, 2), (2, 0)), constant_values=-1.5), "f32")
    x = ints((3, 4))
    p.func("pad_i64_high_only", [(x, "i64")],
           "%v = arith.constant 9 : i64\n"
           "%r = tensor.pad %a0 low[0, 0] high[1, 3] {\n^bb0(%i: index, %j: index):\n"
           "tensor.yield %v : i64\n} : tensor<3x4xi64> to tensor<4x7xi64>",
           np.pad(x, ((0, 1), (0, 3)), constant_values=9), "i64")
    # pad then consume (fused into a reduction)
    x = ints((4, 5))
    p.func("pad_then_sum", [(x, "i32")],
           "%v = arith.constant 1 : i32\n"
           "%pd = tensor.pad %a0 low[1, 1] high[1, 1] {\n^bb0(%i: index, %j: index):\n"
           "tensor.yield %v : i32\n} : tensor<4x5xi32> to tensor<6x7xi32>\n"
           "%e = tensor.empty() : tensor<7xi32>\n%z = arith.constant 0 : i32\n"
           "%f = linalg.fill ins(%z : i32) outs(%e : tensor<7xi32>) -> tensor<7xi32>\n"
           "%r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>],"
           " iterator_types = [\"reduction\", \"parallel\"]} ins(%pd : tensor<6x7xi32>) outs(%f : tensor<7xi32>) {\n"
           "^bb0(%x: i32, %acc: i32):\n%s = arith.addi %x, %acc : i32\nlinalg.yield %s : i32\n} -> tensor<7xi32>",
           np.pad(x, 1, constant_values=1).sum(axis=0), "i32")


def reshapes(p: Program) -> None:
    x = ints((2, 3, 4))
    p.func("collapse_shape", [(x, "i32")],
           "%r = tensor.collapse_shape %a0 [[0, 1], [2]] : tensor<2x3x4xi32> into tensor<6x4xi32>",
           x.reshape(6, 4), "i32")
    x = ints((12,))
    p.func("expand_shape", [(x, "i32")],
           "%r = tensor.expand_shape %a0 [[0, 1]] output_shape [3, 4] : tensor<12xi32> into tensor<3x4xi32>",
           x.reshape(3, 4), "i32")
    x = ints((2, 6))
    p.func("reshape_then_transpose", [(x, "i32")],
           "%t = tensor.expand_shape %a0 [[0], [1, 2]] output_shape [2, 3, 2] : tensor<2x6xi32> into tensor<2x3x2xi32>\n"
           "%e = tensor.empty() : tensor<2x2x3xi32>\n"
           "%tr = linalg.transpose ins(%t : tensor<2x3x2xi32>) outs(%e : tensor<2x2x3xi32>) permutation = [2, 0, 1]\n"
           "%r = tensor.collapse_shape %tr [[0, 1, 2]] : tensor<2x2x3xi32> into tensor<12xi32>",
           x.reshape(2, 3, 2).transpose(2, 0, 1).reshape(12), "i32")
    x = ints((4, 3))
    p.func("tensor_reshape_shape_operand", [(x, "i32")],
           "%s = arith.constant dense<[2, 6]> : tensor<2xi64>\n"
           "%r = tensor.reshape %a0(%s) : (tensor<4x3xi32>, tensor<2xi64>) -> tensor<2x6xi32>",
           x.reshape(2, 6), "i32")


def gathers(p: Program) -> None:
    x = ints((3, 7))
    p.func("reverse_last_dim", [(x, "i32")],
           "%e = tensor.empty() : tensor<3x7xi32>\n"
           "%r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>],"
           " iterator_types = [\"parallel\", \"parallel\"]} outs(%e : tensor<3x7xi32>) {\n"
           "^bb0(%o: i32):\n%i = linalg.index 0 : index\n%j = linalg.index 1 : index\n"
           "%c6 = arith.constant 6 : index\n%rj = arith.subi %c6, %j : index\n"
           "%v = tensor.extract %a0[%i, %rj] : tensor<3x7xi32>\nlinalg.yield %v : i32\n} -> tensor<3x7xi32>",
           x[:, ::-1], "i32")
    data, idx = ints((5, 3)), np.array([4, 0, 2, 2])
    p.func("gather_rows", [(data, "f32"), (idx, "i32")],
           "%e = tensor.empty() : tensor<4x3xf32>\n"
           "%r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],"
           " iterator_types = [\"parallel\", \"parallel\"]} ins(%a1 : tensor<4xi32>) outs(%e : tensor<4x3xf32>) {\n"
           "^bb0(%k: i32, %o: f32):\n%ki = arith.index_cast %k : i32 to index\n%j = linalg.index 1 : index\n"
           "%v = tensor.extract %a0[%ki, %j] : tensor<5x3xf32>\nlinalg.yield %v : f32\n} -> tensor<4x3xf32>",
           data[idx], "f32")
    # a scalar loop over tensor.extract (scf.for with an iter_arg)
    x = ints((9,))
    p.func("scf_loop_extract_sum", [(x, "i32")],
           "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n%c9 = arith.constant 9 : index\n"
           "%z = arith.constant 0 : i32\n"
           "%s = scf.for %i = %c0 to %c9 step %c1 iter_args(%acc = %z) -> (i32) {\n"
           "%v = tensor.extract %a0[%i] : tensor<9xi32>\n%sq = arith.muli %v, %v : i32\n"
           "%n = arith.addi %acc, %sq : i32\nscf.yield %n : i32\n}\n"
           "%r = tensor.from_elements %s : tensor<1xi32>", np.array([(x * x).sum()]), "i32")
    # a loop that builds a tensor element by element (scf.for + tensor.insert)
    x = ints((6,))
    p.func("scf_loop_prefix_sum", [(x, "i32")],
           "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n%c6 = arith.constant 6 : index\n"
           "%z = arith.constant 0 : i32\n%e = arith.constant dense<0> : tensor<6xi32>\n"
           "%t, %s = scf.for %i = %c0 to %c6 step %c1 iter_args(%acc = %e, %run = %z) -> (tensor<6xi32>, i32) {\n"
           "%v = tensor.extract %a0[%i] : tensor<6xi32>\n%n = arith.addi %run, %v : i32\n"
           "%u = tensor.insert %n into %acc[%i] : tensor<6xi32>\nscf.yield %u, %n : tensor<6xi32>, i32\n}\n"
           "%r = util.optimization_barrier %t : tensor<6xi32>", np.cumsum(x), "i32")


def dynamic(p: Program) -> None:
    a, b = ints((3, 5), -8, 8), ints((5, 4), -8, 8)
    p.func("dynamic_matmul", [],
           f"%d0 = flow.tensor.dynamic_constant {dense(a.astype(float), 'f32')} -> tensor<?x?xf32>\n"
           f"%d1 = flow.tensor.dynamic_constant {dense(b.astype(float), 'f32')} -> tensor<?x?xf32>\n"
           "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
           "%m = tensor.dim %d0, %c0 : tensor<?x?xf32>\n%n = tensor.dim %d1, %c1 : tensor<?x?xf32>\n"
           "%e = tensor.empty(%m, %n) : tensor<?x?xf32>\n%z = arith.constant 0.0 : f32\n"
           "%f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>\n"
           "%mm = linalg.matmul ins(%d0, %d1 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>)"
           " -> tensor<?x?xf32>\n"
           "%r = tensor.cast %mm : tensor<?x?xf32> to tensor<3x4xf32>", a @ b, "f32", almost=True)
    x = ints((4, 6))
    p.func("dynamic_elementwise_and_reduce", [],
           f"%d = flow.tensor.dynamic_constant {dense(x, 'i32')} -> tensor<?x?xi32>\n"
           "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
           "%m = tensor.dim %d, %c0 : tensor<?x?xi32>\n%n = tensor.dim %d, %c1 : tensor<?x?xi32>\n"
           "%sq = arith.muli %d, %d : tensor<?x?xi32>\n"
           "%e = tensor.empty(%n) : tensor<?xi32>\n%z = arith.constant 0 : i32\n"
           "%f = linalg.fill ins(%z : i32) outs(%e : tensor<?xi32>) -> tensor<?xi32>\n"
           "%s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>],"
           " iterator_types = [\"reduction\", \"parallel\"]} ins(%sq : tensor<?x?xi32>) outs(%f : tensor<?xi32>) {\n"
           "^bb0(%v: i32, %acc: i32):\n%t = arith.addi %v, %acc : i32\nlinalg.yield %t : i32\n} -> tensor<?xi32>\n"
           "%r = tensor.cast %s : tensor<?xi32> to tensor<6xi32>", (x * x).sum(axis=0), "i32")
    x = ints((5, 7))
    p.func("dynamic_extract_slice", [(np.array([1, 2, 3, 4]), "i32")],
           f"%d = flow.tensor.dynamic_constant {dense(x, 'i32')} -> tensor<?x?xi32>\n"
           "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
           "%c2 = arith.constant 2 : index\n%c3 = arith.constant 3 : index\n"
           "%o0i = tensor.extract %a0[%c0] : tensor<4xi32>\n%o1i = tensor.extract %a0[%c1] : tensor<4xi32>\n"
           "%s0i = tensor.extract %a0[%c2] : tensor<4xi32>\n%s1i = tensor.extract %a0[%c3] : tensor<4xi32>\n"
           "%o0 = arith.index_cast %o0i : i32 to index\n%o1 = arith.index_cast %o1i : i32 to index\n"
           "%s0 = arith.index_cast %s0i : i32 to index\n%s1 = arith.index_cast %s1i : i32 to index\n"
           "%sl = tensor.extract_slice %d[%o0, %o1] [%s0, %s1] [1, 1] : tensor<?x?xi32> to tensor<?x?xi32>\n"
           "%r = tensor.cast %sl : tensor<?x?xi32> to tensor<3x4xi32>", x[1:4, 2:6], "i32")
    x = ints((2, 3, 4))
    p.func("dynamic_collapse_and_dims", [],
           f"%d = flow.tensor.dynamic_constant {dense(x, 'i32')} -> tensor<?x?x?xi32>\n"
           "%cl = tensor.collapse_shape %d [[0, 1], [2]] : tensor<?x?x?xi32> into tensor<?x?xi32>\n"
           "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
           "%m = tensor.dim %cl, %c0 : tensor<?x?xi32>\n%n = tensor.dim %cl, %c1 : tensor<?x?xi32>\n"
           "%mi = arith.index_cast %m : index to i32\n%ni = arith.index_cast %n : index to i32\n"
           "%dims = tensor.from_elements %mi, %ni : tensor<2xi32>\n"
           "%flat = tensor.cast %cl : tensor<?x?xi32> to tensor<6x4xi32>\n"
           f"check.expect_eq_const(%flat, {dense(x.reshape(6, 4), 'i32')}) : tensor<6x4xi32>\n"
           "%r = util.optimization_barrier %dims : tensor<2xi32>", np.array([6, 4]), "i32")


def main() -> None:
    p = Program("// tensor dialect ops; expected values computed with NumPy\n"
                "// (tests/vmrt/conformance/gen_tensor.py writes this file)")
    slices(p)
    concat_pad(p)
    reshapes(p)
    gathers(p)
    dynamic(p)
    p.write(PROGRAMS / "tensor" / "tensor.mlir")
    print(len(p.funcs), "functions")


if __name__ == "__main__":
    main()
