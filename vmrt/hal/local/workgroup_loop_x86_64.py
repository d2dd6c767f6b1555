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


#: where the batch loop starts in the page the workgroup loop is written to
#: (:func:`~vmrt.hal.local.workgroup_loop.loop_code` pads :data:`CODE` to it)
BATCH_OFFSET = 0x80
#: the batch loop of :mod:`~vmrt.hal.local.batch`: ``u64 batch(u64 *h)``
#: (one argument: a ctypes call converts each, ~0.15 us apiece) over the
#: header ``h``: [0] the MXCSR bits to set (flush denormals), [1] and [2]
#: out, [3] the records, [4] their count, [7] the cancel word's address.
#: It sets the bits and restores the caller's MXCSR at the end; each record
#: of seven words ``{fn, a0, a1, ws, ws_size, total, mask}`` calls ``fn(a0,
#: a1, ws + k * ws_size)`` for ``k`` below ``total``, reading the cancel
#: word before each call; a call whose return ANDed with ``mask`` is nonzero
#: (or a cancel, status 0) stops it with ``k`` in ``h[1]`` and the masked
#: status in ``h[2]``.  Returns the index of the record it stopped at
#: (``count``: all ran).  Six pushes and ``sub rsp, 8`` keep the stack
#: 16-byte aligned at the call.  Assembled with GNU as from:
#
#   push rbx / push rbp / push r12 / push r13 / push r14 / push r15 / sub rsp, 8
#   mov r15, rdi / mov rbx, [r15+24] / mov r12, [r15+32] / mov r13, [r15+56]
#   stmxcsr [rsp] / mov eax, [rsp] / or eax, [r15] / mov [rsp+4], eax / ldmxcsr [rsp+4]
#   xor ebp, ebp
#   1: cmp rbp, r12 / jae 5f / xor r14d, r14d
#   2: cmp r14, [rbx+40] / jae 4f
#      xor eax, eax / cmp dword ptr [r13], 0 / jne 3f
#      mov rdx, r14 / imul rdx, [rbx+32] / add rdx, [rbx+24]
#      mov rdi, [rbx+8] / mov rsi, [rbx+16] / call [rbx]
#      and rax, [rbx+48] / jne 3f / inc r14 / jmp 2b
#   4: add rbx, 56 / inc rbp / jmp 1b
#   3: mov [r15+8], r14 / mov [r15+16], rax
#   5: ldmxcsr [rsp] / mov rax, rbp / add rsp, 8
#      pop r15 / pop r14 / pop r13 / pop r12 / pop rbp / pop rbx / ret
BATCH_CODE = bytes.fromhex(
    "5355415441554156415748 83ec08"
    "4989ff 498b5f18 4d8b6720 4d8b6f38"
    "0fae1c24 8b0424 410b07 89442404 0fae542404"
    "31ed"
    "4c39e5 7344 4531f6"
    "4c3b7328 732a"
    "31c0 41837d0000 752a"
    "4c89f2 480faf5320 48035318"
    "488b7b08 488b7310 ff13"
    "48234330 750e 49ffc6 ebd0"
    "4883c338 48ffc5 ebbf"
    "4d897708 49894710"
    "0fae1424 4889e8 4883c408"
    "415f415e415d415c5d5bc3")


#: the work-sharing team of :mod:`~vmrt.hal.local.workgroup_loop_team`: four
#: functions, at :data:`TEAM_WORKER`, :data:`TEAM_RUN`, :data:`TEAM_TSC` and
#: :data:`TEAM_OPEN` of this code (position independent: relative jumps
#: only, the workgroup loop called through the control block; syscall 24 is
#: sched_yield, made every 64 ``pause`` of a worker watching and every 2048
#: of a caller waiting, so a busy machine's other threads get the core).
#: A worker that stops watching clears its awake word with ``xchg`` and
#: then reads the generation once more, and a caller opens a grid with
#: ``xchg`` before it reads the awake words: one of the two sees the other
#: (a grid opened as a worker stops is joined, or the worker is woken).
#: Assembled with GNU as from:
#
#   .intel_syntax noprefix
#   .set O_FIN, 64
#   .set O_LOOP, 128
#   .set O_FN, 136
#   .set O_ENV, 144
#   .set O_DS, 152
#   .set O_WS, 160
#   .set O_SIZE, 168
#   .set O_TOTAL, 176
#   .set O_CHUNK, 184
#   .set O_CANCEL, 192
#   .set O_FAIL, 256
#   .set O_STOP, 264
#   .set O_QUIT, 320
#   .set O_WAIT, 272
#
#   .macro CLAIMS
#   1:  mov rax, [r12]
#       cmp qword ptr [r12+O_STOP], 0
#       jne 9f
#       mov rcx, rax
#       shr rcx, 32
#       cmp ecx, r14d
#       jne 9f
#       mov ebx, eax
#       cmp rbx, [r12+O_TOTAL]
#       jae 9f
#       mov rdx, rax
#       add rdx, [r12+O_CHUNK]
#       lock cmpxchg [r12], rdx
#       jne 1b
#       mov rbp, rbx
#       add rbp, [r12+O_CHUNK]
#       cmp rbp, [r12+O_TOTAL]
#       jbe 2f
#       mov rbp, [r12+O_TOTAL]
#   2:  mov rax, [r12+O_FN]
#       mov [rsp], rax
#       mov rax, [r12+O_ENV]
#       mov [rsp+8], rax
#       mov rax, [r12+O_DS]
#       mov [rsp+16], rax
#       mov rax, [r12+O_WS]
#       mov [rsp+24], rax
#       mov rax, [r12+O_SIZE]
#       mov [rsp+32], rax
#       mov qword ptr [rsp+40], 0
#       mov rdi, rsp
#       mov rsi, rbx
#       mov rdx, rbp
#       mov rcx, [r12+O_CANCEL]
#       call [r12+O_LOOP]
#       cmp rax, rbp
#       jae 4f
#       mov qword ptr [r12+O_STOP], 1
#       mov ecx, dword ptr [rsp+40]
#       test ecx, ecx
#       jz 4f
#       shl rax, 32
#       or rax, rcx
#       mov rdx, rax
#       mov rax, [r12+O_FAIL]
#   3:  cmp rdx, rax
#       jae 4f
#       lock cmpxchg [r12+O_FAIL], rdx
#       jne 3b
#   4:  sub rbp, rbx
#       lock add [r12+O_FIN], rbp
#       jmp 1b
#   9:
#   .endm
#
#   .text
#   .globl team_worker
#   team_worker:
#       push rbx
#       push rbp
#       push r12
#       push r13
#       push r14
#       push r15
#       sub rsp, 56
#       mov r12, rdi
#       mov r13, rsi
#       mov r14, rdx
#       mov r15, rcx
#   5:  rdtsc
#       shl rdx, 32
#       or rax, rdx
#       add rax, r13
#       mov [rsp+48], rax
#   6:  cmp qword ptr [r12+O_QUIT], 0
#       jne 8f
#       mov rax, [r12]
#       shr rax, 32
#       cmp eax, r14d
#       jne 7f
#       pause
#       add ebx, 1
#       test ebx, 63
#       jnz 10f
#       mov eax, 24
#       syscall
#   10: rdtsc
#       shl rdx, 32
#       or rax, rdx
#       cmp rax, [rsp+48]
#       jb 6b
#       jmp 8f
#   7:  mov r14d, eax
#       CLAIMS
#       jmp 5b
#   8:  xor eax, eax
#       xchg [r15], rax
#       cmp qword ptr [r12+O_QUIT], 0
#       jne 11f
#       mov rax, [r12]
#       shr rax, 32
#       cmp eax, r14d
#       je 11f
#       mov qword ptr [r15], 1
#       jmp 7b
#   11: mov eax, r14d
#       add rsp, 56
#       pop r15
#       pop r14
#       pop r13
#       pop r12
#       pop rbp
#       pop rbx
#       ret
#
#   .globl team_run
#   team_run:
#       push rbx
#       push rbp
#       push r12
#       push r13
#       push r14
#       push r15
#       sub rsp, 56
#       mov r12, rdi
#       mov r14, rsi
#       CLAIMS
#       mov rax, r14
#       shl rax, 32
#       mov ecx, 0xFFFFFFFF
#       or rax, rcx
#       xchg [r12], rax
#       mov eax, eax
#       cmp rax, [r12+O_TOTAL]
#       jbe 5f
#       mov rax, [r12+O_TOTAL]
#   5:  mov rbx, rax
#       rdtsc
#       shl rdx, 32
#       or rax, rdx
#       mov r13, rax
#       xor ebp, ebp
#   6:  cmp [r12+O_FIN], rbx
#       jae 8f
#       pause
#       add ebp, 1
#       cmp ebp, 2048
#       jb 6b
#       mov eax, 24
#       syscall
#       xor ebp, ebp
#       jmp 6b
#   8:  rdtsc
#       shl rdx, 32
#       or rax, rdx
#       sub rax, r13
#       mov [r12+O_WAIT], rax
#       mov rax, rbx
#       add rsp, 56
#       pop r15
#       pop r14
#       pop r13
#       pop r12
#       pop rbp
#       pop rbx
#       ret
#
#   .globl team_tsc
#   team_tsc:
#       rdtsc
#       shl rdx, 32
#       or rax, rdx
#       ret
#
#   .globl team_open
#   team_open:
#       xchg [rdi], rsi
#       ret
TEAM_CODE = bytes.fromhex(
    "535541544155415641574883ec384989fc4989f54989d64989cf0f3148c1e2204809d04c01e848894424304983bc2440"
    "010000000f854d010000498b042448c1e8204439f07529f39083c301f7c33f0000007507b8180000000f050f3148c1e2"
    "204809d0483b44243072c0e9170100004189c6498b04244983bc2408010000000f85fc0000004889c148c1e9204439f1"
    "0f85ec00000089c3493b9c24b00000000f83dc0000004889c249039424b8000000f0490fb1142475ba4889dd4903ac24"
    "b8000000493bac24b00000007608498bac24b0000000498b84248800000048890424498b842490000000488944240849"
    "8b8424980000004889442410498b8424a00000004889442418498b8424a8000000488944242048c74424280000000048"
    "89e74889de4889ea498b8c24c000000041ff9424800000004839e8733749c7842408010000010000008b4c242885c974"
    "2348c1e0204809c84889c2498b8424000100004839c2730cf0490fb194240001000075ef4829ddf049016c2440e9f1fe"
    "ffffe993feffff31c04987074983bc2440010000007519498b042448c1e8204439f0740c49c70701000000e9c0feffff"
    "4489f04883c438415f415e415d415c5d5bc3535541544155415641574883ec384989fc4989f6498b04244983bc240801"
    "0000000f85fc0000004889c148c1e9204439f10f85ec00000089c3493b9c24b00000000f83dc0000004889c249039424"
    "b8000000f0490fb1142475ba4889dd4903ac24b8000000493bac24b00000007608498bac24b0000000498b8424880000"
    "0048890424498b8424900000004889442408498b8424980000004889442410498b8424a00000004889442418498b8424"
    "a8000000488944242048c7442428000000004889e74889de4889ea498b8c24c000000041ff9424800000004839e87337"
    "49c7842408010000010000008b4c242885c9742348c1e0204809c84889c2498b8424000100004839c2730cf0490fb194"
    "240001000075ef4829ddf049016c2440e9f1feffff4c89f048c1e020b9ffffffff4809c84987042489c0493b8424b000"
    "00007608498b8424b00000004889c30f3148c1e2204809d04989c531ed49395c24407318f39083c50181fd0008000072"
    "ecb8180000000f0531edebe10f3148c1e2204809d04c29e849898424100100004889d84883c438415f415e415d415c5d"
    "5bc30f3148c1e2204809d0c3488737c3")
#: ``u64 team_worker(u64 *ctl, u64 spin_ticks, u64 last_gen, u64 *awake)``
TEAM_WORKER = 0x0
#: ``u64 team_run(u64 *ctl, u64 gen)``
TEAM_RUN = 0x1c2
#: ``u64 team_tsc(void)``: the time-stamp counter
TEAM_TSC = 0x362
#: ``u64 team_open(u64 *word, u64 value)``: ``xchg`` (a full barrier)
TEAM_OPEN = 0x36c

__all__ = ["CODE", "TEAM_CODE", "TEAM_OPEN", "TEAM_RUN", "TEAM_TSC", "TEAM_WORKER"]
