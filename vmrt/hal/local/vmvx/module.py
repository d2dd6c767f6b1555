"""IREE's ``vmvx`` VM module in Python: the fixed set of operations VM
bytecode executables compiled for the vmvx target may import (``iree-compile
--iree-hal-local-target-device-backends=vmvx``, with microkernels when
``--iree-vmvx-enable-microkernels`` is given).  Names and cconvs are the ones
the pip compiler (3.13) emits; the numerics are in :mod:`.kernels`.

* binary x32 over strided 2-D tiles (``0rIIIrIIIrIIIII_v``: lhs, rhs, out
  each as buffer, offset, stride0, stride1; then size0, size1): ``add``,
  ``sub``, ``mul``, ``div`` (f32); ``add``, ``sub``, ``mul``, ``divs``,
  ``divu``, ``and``, ``or``, ``xor``, ``shl``, ``shrs``, ``shru`` (i32);
* unary (``0rIIIrIIIII_v``): ``abs``, ``neg``, ``ceil``, ``floor``, ``exp``,
  ``log``, ``rsqrt`` (f32), ``ctlz`` (i32), ``copy.2d.x8/x16/x32/x64``;
* ``fill.2d.x32`` (``0irIIII_v``), ``mmt4d``, ``pack``, ``unpack`` and
  ``query_tile_sizes.2d`` (the data-tiled matmul family).

The module lives in ``hal/local`` because the vmvx executable loader
(:mod:`vmrt.hal.local.vmvx_executable`) links every executable against it;
:mod:`vmrt.modules.vmvx` re-exports it as a static module for ``vmrt run``.
"""
from __future__ import annotations

from typing import Any

from ....vm.instance import Instance
from ....vm.native_module import NativeModule, NativeState, export
from . import kernels

VERSION = 0

BINARY_CCONV = "0rIIIrIIIrIIIII_v"
UNARY_CCONV = "0rIIIrIIIII_v"


class VmvxModule(NativeModule[NativeState]):
    """The ``vmvx`` module (no state, no imports)."""

    name = "vmvx"
    version = VERSION

    def __init__(self, instance: Instance | None = None):
        super().__init__()
        for op in kernels.BINARY_OPS:
            self.add_export(op, BINARY_CCONV, self._binary_impl(op))
        for op in (*kernels.UNARY_OPS, *kernels.COPY_SIZES):
            self.add_export(op, UNARY_CCONV, self._unary_impl(op))

    @staticmethod
    def _binary_impl(op: str) -> Any:
        def impl(state: NativeState, *args: Any) -> None:
            kernels.binary(op, args)
        return impl

    @staticmethod
    def _unary_impl(op: str) -> Any:
        def impl(state: NativeState, *args: Any) -> None:
            kernels.unary(op, args)
        return impl

    @export("fill.2d.x32", "0irIIII_v")
    def fill_2d_x32(self, state: NativeState, value: int, buffer: Any, offset: int,
                    row_stride: int, size0: int, size1: int) -> None:
        kernels.fill_x32(value, buffer, offset, row_stride, size0, size1)

    @export("mmt4d", "0rIIrIIrIIIIIiiii_v")
    def mmt4d(self, state: NativeState, *args: Any) -> None:
        kernels.mmt4d(args)

    @export("pack", "0rIIIrIIIIIIIIIIi_v")
    def pack(self, state: NativeState, *args: Any) -> None:
        kernels.pack(args)

    @export("unpack", "0rIIIrIIIIIIIIIi_v")
    def unpack(self, state: NativeState, *args: Any) -> None:
        kernels.unpack(args)

    @export("query_tile_sizes.2d", "0IIi_II")
    def query_tile_sizes_2d(self, state: NativeState, size0: int, size1: int,
                            flags: int) -> tuple[int, int]:
        return kernels.query_tile_sizes_2d(size0, size1, flags)


__all__ = ["VERSION", "VmvxModule"]
