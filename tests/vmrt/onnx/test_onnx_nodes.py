"""ONNX's backend node tests on vmrt: a fixed sample of the corpus
(tests/vmrt/onnx/corpus.py), one or two cases per op family.

Each case is imported with iree-import-onnx, compiled by iree-compile for
the CPU (cached under build/onnx_conformance/), and run by ``vmrt.load``;
its outputs must match ONNX's expected outputs at ONNX's tolerances.  On
x86_64 the same ``.vmfb`` runs on ``iree.runtime`` first: IREE must pass the
case, and vmrt's outputs must equal IREE's byte for byte.  The emulated CPUs
run a smaller sample (every case is some ms of unicorn per dispatch).
``python -m tests.vmrt.onnx.corpus`` runs the whole corpus
(docs/onnx-conformance.md has its figures)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("onnx", reason="pip install onnx (the test extra has it)")
if shutil.which("iree-import-onnx") is None or shutil.which("iree-compile") is None:
    pytest.skip("iree-import-onnx / iree-compile are not installed (pip install "
                "iree-base-compiler)", allow_module_level=True)

from tests.vmrt.onnx.corpus import (
    ARCHES,
    StageError,
    compile_case,
    family,
    index,
    load_case,
    mismatch,
    run_case,
    same_bits,
)
from tests.vmrt.onnx.foreign_iree import bench_runtime, elf_arch, foreign_iree, tool_in


def _tests(text: str) -> tuple[str, ...]:
    return tuple(f"test_{n}" for n in text.split())


#: x86_64 (native, and IREE's runtime as the second oracle): one case per
#: op family, across f32, f64, f16, bf16, i8/u8, i32, i64 and bool, 0-d and
#: zero-sized tensors, several outputs
NATIVE = _tests("""
abs acos add_bcast and_bcast3v1d relu argmax_keepdims_example argmin_default_axis_example
averagepool_2d_default batchnorm_example bitshift_left_uint8 cast_FLOAT_to_BFLOAT16
cast_FLOAT_to_DOUBLE cast_FLOAT_to_FLOAT16 ceil clip concat_2d_axis_0
conv_with_strides_padding depthtospace_example div_bcast einsum_batch_matmul elu
equal_bcast erf expand_dim_changed flatten_axis1 gather_0 gather_elements_0
gemm_default_no_bias globalaveragepool gru_defaults hardmax_example instancenorm_example
isnan layer_normalization_2d_axis0 logsoftmax_axis_1 lstm_defaults matmul_2d matmulinteger
max_example maxpool_2d_default mod_mixed_sign_int64 not_2d onehot_with_axis constant_pad pow
prelu_broadcast quantizelinear range_float_type_positive_delta
reduce_max_default_axes_keepdim_example reduce_sum_empty_set reshape_reordered_all_dims
resize_upsample_scales_nearest shape size softmax_axis_1
split_equal_parts_1d_opset13 tile top_k transpose_default tril where_example
""")

#: each emulated CPU (aarch64, riscv64, arm, i386, riscv32) but those in IREE_FAILS
EMULATED = _tests("""
add_bcast argmax_keepdims_example cast_FLOAT_to_DOUBLE conv_with_strides_padding where_example
erf gather_0 matmul_2d mod_mixed_sign_int64 reduce_sum_empty_set softmax_axis_1
split_equal_parts_1d_opset13 top_k relu transpose_default
""")

#: (case, CPU) pairs IREE's own compiler gets wrong for a 32-bit CPU: iree-lld
#: refuses a libgcc/compiler-rt call it has no definition of (i64 division,
#: f32->f64 without the D extension), or, on a CPU without FMA (arm, i386),
#: calls the ``fmaf`` of IREE's bundled libm, whose body there is LLVM's
#: ``unreachable`` (zero bytes of code; vmrt reports the jump into them)
IREE_FAILS = {
    ("test_mod_mixed_sign_int64", "arm"): "iree-lld: undefined symbol: __aeabi_ldivmod",
    ("test_mod_mixed_sign_int64", "i386"): "iree-lld: undefined symbol: __moddi3",
    ("test_mod_mixed_sign_int64", "riscv32"): "iree-lld: undefined symbol: __moddi3",
    ("test_cast_FLOAT_to_DOUBLE", "riscv32"): "iree-lld: undefined symbol: __extendsfdf2",
    ("test_erf", "arm"): "fmaf has zero bytes of code", ("test_erf", "i386"): "fmaf has zero bytes of code",
    ("test_softmax_axis_1", "arm"): "fmaf has zero bytes of code",
    ("test_softmax_axis_1", "i386"): "fmaf has zero bytes of code",
}


#: aarch64 cases run against IREE's own aarch64 runtime (its wheel's
#: iree-run-module under qemu-user), with the stage each must end in: vmrt's
#: outputs equal IREE's bytes in all of them
AGAINST_IREE_AARCH64 = {
    "test_add_bcast": "pass", "test_softmax_axis_1": "pass", "test_erf": "pass",
    "test_conv_with_strides_padding": "pass", "test_top_k": "pass",
    # IREE's aarch64 code shifts by a negative amount with NEON's USHL/SSHL
    # (a negative amount shifts the other way): not ONNX's 0 / -1, the same
    # bytes in vmrt
    "test_bitshift_left_int32_negative_shift": "iree-mismatch",
    "test_bitshift_right_int8_negative_shift": "iree-mismatch",
    # float8 results (IREE's .npy writer has no float8): read back as raw bytes
    "test_castlike_FLOAT_to_FLOAT8E4M3FN": "iree-mismatch",
}


def _params() -> list:
    out = []
    for arch in ARCHES:
        for name in NATIVE if arch == "x86_64" else EMULATED:
            if (name, arch) not in IREE_FAILS:
                out.append(pytest.param(name, arch, id=f"{name[5:]}-{arch}"))
    return out


@pytest.fixture(scope="module", autouse=True)
def _compiled(request):
    """Compile the selected cases first, on every core (iree-compile is most
    of a cold run's time; the runs themselves then hit the cache)."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    pairs = [(it.callspec.params["name"], it.callspec.params["arch"])
             for it in request.session.items
             if it.module is request.module and hasattr(it, "callspec")
             and "arch" in it.callspec.params]
    index()                             # generates the cases once, before the threads

    def build(pair: tuple[str, str]) -> None:
        try:
            compile_case(load_case(pair[0]), pair[1])
        except StageError:
            pass                        # the test says so

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(build, pairs))


@pytest.mark.parametrize("name,arch", _params())
def test_node(name, arch, request):
    if arch != "x86_64":
        request.getfixturevalue("emulation")
    out = run_case(name, arch)
    assert out.stage == "pass", f"{name} ({family(name)}) on {arch}: {out.stage}: {out.detail}"


def test_iree_miscompile_is_reported(emulation):
    # test_erf for i386 calls IREE's fmaf, compiled to zero bytes (its body
    # is `unreachable`; see IREE_FAILS): vmrt stops the dispatch with an
    # error saying so (no crash, no garbage)
    out = run_case("test_erf", "i386")
    assert out.stage == "vmrt-error", out
    assert "the code at pc is zero bytes" in out.detail
    assert "hal.device.queue.execute" in out.detail


def test_iree_out_of_bounds_read_is_reported(emulation):
    # IREE's GridSample kernel (padding_mode="zeros") loads from outside its
    # input for the out-of-range sample points (natively, vmrt like IREE reads
    # whatever lies there: docs/onnx-conformance.md); emulated, vmrt stops
    # the dispatch at that load and says where
    out = run_case("test_gridsample_zeros_padding", "aarch64")
    assert out.stage == "vmrt-error", out
    assert "binding 0 (24 bytes) was accessed out of bounds at byte offset 168" in out.detail


def test_sample_covers_the_families():
    fams = {family(n) for n in NATIVE}
    assert len(fams) >= 55, sorted(fams)
    assert set(EMULATED) <= set(NATIVE)


def test_comparison_is_onnxs():
    # ONNX's runner: same count, shape and dtype, then allclose(rtol, atol)
    a = np.array([1.0, 2.0], np.float32)
    assert mismatch([a], [a + 1e-4], 1e-3, 1e-7) is None
    assert "output 0" in mismatch([a], [a + 1e-2], 1e-3, 1e-7)
    assert "dtype" in mismatch([a], [a.astype(np.float64)], 1e-3, 1e-7)
    assert "shape" in mismatch([a], [a[:1]], 1e-3, 1e-7)
    assert "outputs" in mismatch([a, a], [a], 1e-3, 1e-7)
    nan = np.array([np.nan], np.float32)
    assert mismatch([nan], [nan], 1e-3, 1e-7) is None
    assert same_bits([nan], [nan.copy()]) is None
    assert same_bits([a], [a + 1e-6]) is not None


@pytest.fixture(scope="module")
def iree_aarch64():
    from tests.vmrt.onnx.corpus import REPO
    iree = foreign_iree("aarch64") or foreign_iree("aarch64", bench_runtime(REPO, "aarch64"))
    if iree is None:
        pytest.skip("no IREE runtime for aarch64 under qemu-user ($VMRT_IREE_RUNTIME_AARCH64 "
                    "or python -m bench --setup-qemu; qemu-user and libc6-arm64-cross)")
    return iree


@pytest.mark.parametrize("name,stage", sorted(AGAINST_IREE_AARCH64.items()))
def test_node_against_iree_aarch64(name, stage, iree_aarch64, emulation):
    out = run_case(name, "aarch64", foreign=iree_aarch64)
    assert out.stage == stage, out
    if stage == "iree-mismatch":
        assert "vmrt's outputs equal IREE's aarch64 bytes" in out.detail, out


def test_elf_arch(iree_aarch64, tmp_path):
    assert elf_arch(iree_aarch64.tool) == "aarch64"
    (tmp_path / "iree" / "_runtime_libs").mkdir(parents=True)
    tool_in(tmp_path).write_bytes(b"#!/bin/sh\n")
    assert elf_arch(tool_in(tmp_path)) is None
    assert foreign_iree("aarch64", tmp_path) is None
