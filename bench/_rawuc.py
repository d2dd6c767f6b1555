"""The raw-unicorn peer: what a careful user of the unicorn Python binding
writes by hand to run the same guest code.

``RawMirror(module)`` copies an elfkit-loaded (emulated) module's image
page by page into a fresh ``unicorn.Uc`` at the same addresses, so that the
peer runs byte-identical, identically placed code (relocations already
applied).  A call is: write the argument registers, the return-address
register (pointing at a mapped sentinel page) and the stack pointer with
``uc.reg_write``, ``uc.emu_start(entry, sentinel)``, ``uc.reg_read`` the
result.  No hooks, except the one ranged code hook the import round trip
needs.  Buffers are mapped zero-copy once with ``mem_map_ptr``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

PAGE = 0x1000
SENTINEL = 0x10000          # the same sentinel page address elfkit uses
STACK_TOP = 0x7F000000
STACK_SIZE = 1 << 20
BUF_BASE = 0x40000000


_REGS = {
    # arch: (unicorn consts module, args, ret, link register or None (x86: pushed), sp, init)
    "riscv64": ("riscv_const", [f"UC_RISCV_REG_A{i}" for i in range(8)], "UC_RISCV_REG_A0",
                "UC_RISCV_REG_RA", "UC_RISCV_REG_SP", [("UC_RISCV_REG_MSTATUS", 0x6000)]),
    "aarch64": ("arm64_const", [f"UC_ARM64_REG_X{i}" for i in range(8)], "UC_ARM64_REG_X0",
                "UC_ARM64_REG_X30", "UC_ARM64_REG_SP", [("UC_ARM64_REG_CPACR_EL1", 3 << 20)]),
}


def new_uc(arch: Any, page_size: int | None = None):
    """A ``Uc`` for an elfkit ``Arch`` (same CPU model elfkit would pick;
    ``page_size``: the guest page size, as elfkit sets it for AArch64)."""
    import unicorn
    from unicorn import unicorn_const as C
    mode = 0
    for m in arch.uc_mode:
        mode |= getattr(C, m)
    uc = unicorn.Uc(getattr(C, arch.uc_arch), mode)
    if arch.uc_cpu:
        consts = getattr(unicorn, _REGS[arch.name][0])
        cpu = arch.uc_cpu
        if isinstance(cpu, str):
            cpu = getattr(consts, cpu if cpu.startswith("UC_CPU_") else f"UC_CPU_{cpu}")
        uc.ctl_set_cpu_model(int(cpu))
    if page_size:
        uc.ctl_set_page_size(page_size)
    return uc


class RawMirror:
    def __init__(self, module: Any, page_size: int | None = None):
        import unicorn
        from unicorn import unicorn_const as C
        arch = module.arch
        if arch.name not in _REGS:
            raise ValueError(f"raw mirror: {arch.name} not supported")
        mod, args, ret, lr, sp, init = _REGS[arch.name]
        k = getattr(unicorn, mod)
        self.arch = arch
        self.args = [getattr(k, a) for a in args]
        self.ret = getattr(k, ret)
        self.lr = getattr(k, lr)
        self.sp = getattr(k, sp)
        self.uc = uc = new_uc(arch, page_size)
        for name, value in init:
            uc.reg_write(getattr(k, name), value)
        uc.mem_map(SENTINEL, PAGE, C.UC_PROT_ALL)
        trap = arch.trap_insn or arch.ret_insn
        uc.mem_write(SENTINEL, trap * (PAGE // len(trap)))
        uc.mem_map(STACK_TOP - STACK_SIZE, STACK_SIZE, C.UC_PROT_READ | C.UC_PROT_WRITE)
        # the image, page by page (unreadable pages - guard gaps - are skipped)
        start = module.base & ~(PAGE - 1)
        end = (module.base + module.size + PAGE - 1) & ~(PAGE - 1)
        for a in range(start, end, PAGE):
            try:
                data = module.read(a, PAGE)
            except Exception:   # noqa: BLE001 - not mapped in elfkit's machine
                continue
            uc.mem_map(a, PAGE, C.UC_PROT_ALL)
            uc.mem_write(a, data)
        self._keep: list[Any] = []
        self._next_buf = BUF_BASE

    def share(self, array: Any) -> int:
        """Map a page-aligned numpy array zero-copy (once)."""
        from unicorn import unicorn_const as C
        ptr = array.__array_interface__["data"][0]
        size = (array.nbytes + PAGE - 1) & ~(PAGE - 1)
        if ptr % PAGE:
            raise ValueError("array must be page-aligned")
        addr = self._next_buf
        self.uc.mem_map_ptr(addr, size, C.UC_PROT_READ | C.UC_PROT_WRITE, ptr)
        self._next_buf += size + PAGE
        self._keep.append(array)
        return addr

    def caller(self, entry: int) -> Callable[..., int]:
        """``f(*int_args) -> int``: the plain per-call sequence."""
        uc, args, ret, lr, sp = self.uc, self.args, self.ret, self.lr, self.sp
        reg_write, reg_read, emu_start = uc.reg_write, uc.reg_read, uc.emu_start

        def call(*a: int) -> int:
            for r, v in zip(args, a):
                reg_write(r, v)
            reg_write(lr, SENTINEL)
            reg_write(sp, STACK_TOP)
            emu_start(entry, SENTINEL)
            return reg_read(ret)
        return call

    def hook_import(self, address: int, fn: Callable[[int, int], int], nargs: int = 2) -> None:
        """Make ``address`` a host function: a ``ret`` instruction there and a
        code hook on that one instruction which reads the argument registers,
        calls ``fn`` and writes the result register (signed 32-bit args)."""
        from unicorn import unicorn_const as C
        uc = self.uc
        page = address & ~(PAGE - 1)
        try:
            uc.mem_map(page, PAGE, C.UC_PROT_ALL)
        except Exception:   # noqa: BLE001 - already mapped (the sentinel page)
            pass
        uc.mem_write(address, self.arch.ret_insn)
        regs, ret = self.args[:nargs], self.ret
        reg_read, reg_write = uc.reg_read, uc.reg_write
        mask = (1 << 64) - 1

        def on_code(uc_: Any, addr: int, size: int, ud: Any) -> None:
            vals = [((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000
                    for v in (reg_read(r) for r in regs)]
            reg_write(ret, fn(*vals) & mask)
        self._keep.append(on_code)
        uc.hook_add(C.UC_HOOK_CODE, on_code, begin=address,
                    end=address + len(self.arch.ret_insn) - 1)

    def close(self) -> None:
        fin = getattr(self.uc, "_Uc__finalizer", None)
        self.uc = None
        if fin is not None:
            fin()


def page_aligned(n: int, dtype: str = "int32"):
    """A numpy array of ``n`` elements in page-aligned memory."""
    import numpy as np
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(n * itemsize + 2 * PAGE, dtype=np.uint8)
    off = (-raw.__array_interface__["data"][0]) % PAGE
    return raw[off:off + n * itemsize].view(dtype)

