# abs16.s - a relocatable-object test: a 16-bit absolute address of the
# object's own data (R_X86_64_16), which fits only an image below 64 KiB:
# no machine places one there, so the load is refused naming it.
	.text
	.globl	get16
	.type	get16,@function
get16:
	movzwl	tab16(%rip), %eax
	ret
	.data
tab16:
	.word	target
target:
	.byte	7
