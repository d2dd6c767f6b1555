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
func.func @insert_into_constant() -> tensor<6xi32> {
  %a = util.unfoldable_constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %c2 = arith.constant 2 : index
  %v = arith.constant 777 : i32
  %r = tensor.insert %v into %a[%c2] : tensor<6xi32>
  return %r : tensor<6xi32>
}
"""


@pytest.mark.parametrize("mode", ["preload", "mmap"])
def test_insert_into_imported_constant(tmp_path, mode):
    """The compiler fills into the imported constant itself (binding-table
    slot 0).  IREE's runtime does that with --module_mode=preload (module
    data in writable memory) and refuses it with mmap (a read-only mapping):
    PERMISSION_DENIED at queue.execute.indirect.  vmrt does the same."""
    import subprocess

    from tests.vmrt.conformance.harness import compile_for
    from tests.vmrt.vmrt_testutil import status_head, vmrt_run
    src = tmp_path / "insert_into_constant.mlir"
    src.write_text(_INSERT_INTO_CONSTANT)
    args = ["--device=local-sync", f"--module={compile_for(src, 'x86_64')}",
            "--function=insert_into_constant", f"--module_mode={mode}"]
    ref = subprocess.run(["iree-run-module", *args], capture_output=True, text=True,
                         timeout=120)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (ref.returncode, ref.stdout)
    assert status_head(err) == status_head(ref.stderr)
    if mode == "mmap":
        assert status_head(err) == ("PERMISSION_DENIED; buffer does not support the requested "
                                    "access type")
        assert "binding table slot 0" in err
    else:
        assert out.endswith("6xi32=1 2 777 4 5 6\n")
