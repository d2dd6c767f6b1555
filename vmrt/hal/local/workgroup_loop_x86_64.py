"""The native workgroup loop of :mod:`~vmrt.hal.local.workgroup_loop`
(its ``u64 loop(u64 *p, u64 k, u64 end, const volatile i32 *cancel)``) for
x86_64 hosts (System V ABI), written in assembly and encoded once.  Five
pushes keep the stack 16-byte aligned at the call.
"""
from __future__ import annotations

CODE = bytes.fromhex(
    "53"            # push rbx
    "55"            # push rbp
    "4154"          # push r12
    "4155"          # push r13
    "4156"          # push r14
    "4889fb"        # mov rbx, rdi             p
    "4889f5"        # mov rbp, rsi             k
    "4989d4"        # mov r12, rdx             end
    "4989cd"        # mov r13, rcx             cancel
    "4c8b7320"      # mov r14, [rbx+32]
    "4c0faff5"      # imul r14, rbp
    "4c037318"      # add r14, [rbx+24]        ws = p[3] + k * p[4]
    "31c0"          # xor eax, eax
    # top:
    "4c39e5"        # cmp rbp, r12
    "7322"          # jae done
    "41837d0000"    # cmp dword [r13], 0
    "751b"          # jne done                 (eax is 0)
    "488b7b08"      # mov rdi, [rbx+8]
    "488b7310"      # mov rsi, [rbx+16]
    "4c89f2"        # mov rdx, r14
    "ff13"          # call [rbx]
    "85c0"          # test eax, eax
    "750a"          # jne done
    "4883c501"      # add rbp, 1
    "4c037320"      # add r14, [rbx+32]
    "ebd9"          # jmp top
    # done:
    "894328"        # mov [rbx+40], eax
    "4889e8"        # mov rax, rbp
    "415e"          # pop r14
    "415d"          # pop r13
    "415c"          # pop r12
    "5d"            # pop rbp
    "5b"            # pop rbx
    "c3")           # ret

__all__ = ["CODE"]
