"""The native workgroup loop of :mod:`~vmrt.hal.local.workgroup_loop`
(its ``u64 loop(u64 *p, u64 k, u64 end, const volatile i32 *cancel)``) for
aarch64 hosts (AAPCS64), written in assembly and encoded once.  x18 (the
platform register) is not touched.
"""
from __future__ import annotations

import struct

CODE = struct.pack(
    "<27I",
    0xA9BD7BFD,     # stp x29, x30, [sp, #-48]!
    0x910003FD,     # mov x29, sp
    0xA90153F3,     # stp x19, x20, [sp, #16]
    0xA9025BF5,     # stp x21, x22, [sp, #32]
    0xAA0003F3,     # mov x19, x0              p
    0xAA0103F4,     # mov x20, x1              k
    0xAA0203F5,     # mov x21, x2              end
    0xAA0303F6,     # mov x22, x3              cancel
    0x52800000,     # mov w0, #0
    # top:
    0xEB15029F,     # cmp x20, x21
    0x54000162,     # b.hs done
    0xB94002C8,     # ldr w8, [x22]
    0x35000128,     # cbnz w8, done            (w0 is 0)
    0xA941AA69,     # ldp x9, x10, [x19, #24]
    0x9B142542,     # madd x2, x10, x20, x9    ws = p[3] + k * p[4]
    0xA9408660,     # ldp x0, x1, [x19, #8]
    0xF9400268,     # ldr x8, [x19]
    0xD63F0100,     # blr x8
    0x35000060,     # cbnz w0, done
    0x91000694,     # add x20, x20, #1
    0x17FFFFF5,     # b top
    # done:
    0xB9002A60,     # str w0, [x19, #40]
    0xAA1403E0,     # mov x0, x20
    0xA9425BF5,     # ldp x21, x22, [sp, #32]
    0xA94153F3,     # ldp x19, x20, [sp, #16]
    0xA8C37BFD,     # ldp x29, x30, [sp], #48
    0xD65F03C0)     # ret

__all__ = ["CODE"]
