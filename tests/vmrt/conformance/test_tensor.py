"""Conformance: the tensor family (programs/tensor/*.mlir, written by gen_tensor.py)."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program_isolated

# each program runs in a child process: an emulator crash (see test_linalg.py)
# fails one case instead of the session


@pytest.mark.parametrize("path,arch", cases("tensor"))
def test_program(path, arch, emulation):
    check_program_isolated(path, arch)


_INSERT_INTO_CONSTANT = """
func.func @insert_into_constant() {
  %a = util.unfoldable_constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %c2 = arith.constant 2 : index
  %v = arith.constant 777 : i32
  %r = tensor.insert %v into %a[%c2] : tensor<6xi32>
  check.expect_eq_const(%r, dense<[1, 2, 777, 4, 5, 6]> : tensor<6xi32>) : tensor<6xi32>
  return
}
"""


@pytest.mark.xfail(strict=True, reason=(
    "vmrt differs from IREE: the compiler records hal.command_buffer.fill_buffer into "
    "binding-table slot 0 = the imported constant; IREE's queue.execute.indirect rejects "
    "it (PERMISSION_DENIED; buffer allows READ, operation requires READ|WRITE; binding "
    "table slot 0), vmrt's allocator.import makes rodata a writable copy and runs it"))
def test_insert_into_imported_constant(tmp_path):
    """IREE's runtime (mmap- or heap-loaded) fails this program; so must vmrt."""
    from tests.vmrt.conformance.harness import compile_for, run_vmrt
    src = tmp_path / "insert_into_constant.mlir"
    src.write_text(_INSERT_INTO_CONSTANT)
    got = run_vmrt(compile_for(src, "x86_64"))
    assert any("PERMISSION_DENIED" in m for m in got["insert_into_constant"]), got
