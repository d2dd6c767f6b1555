# uleb.s - a relocatable-object test (RISC-V): the length of a relaxable
# code range as ULEB128 and 32-bit numbers, which the assembler must leave
# to the linker (R_RISCV_SET_ULEB128 / SUB_ULEB128, ADD32 / SUB32).
        .option relax
        .text
        .globl  code_len
        .type   code_len, @function
code_len:                       # returns the length of the code from here to code_end
        lla     a0, code_len_word
        lw      a0, 0(a0)
        .p2align 4
        ret
code_end:
        .size   code_len, code_end - code_len

        .section .rodata
        .globl  uleb_len
uleb_len:                       # code_end - code_len as ULEB128 (two bytes, padded)
        .uleb128 code_end - code_len
        .byte 0
        .p2align 2
code_len_word:
        .word   code_end - code_len
