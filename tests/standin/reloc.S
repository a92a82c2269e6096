/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libcudart.so.13 for the probe-placement tests: four entries whose first instruction the
 * kernel single-steps under a uprobe (~20 us per hit on a nested VM), written in assembly so
 * no compiler can change them:
 *   cudaMalloc      endbr64, then push %rbp: the probe can move 4 bytes, onto the push
 *   cudaFree        movabs $imm64, %rax (as NVIDIA's libnccl.so.2 starts ncclCommRegister):
 *                   it can move 10 bytes
 *   cudaMallocHost  sub $8, %rsp: moves the stack pointer, the return probe's return address
 *                   would be wrong past it: the probe stays at the entry
 *   cudaFreeHost    xor %eax, %eax could be skipped, but a jump further down lands on the
 *                   push after it (each call passes there twice): the probe stays
 * The work is done by hidden C functions (reloc_impl.c) with host memory.
 */
	.text

	.globl	cudaMalloc
	.type	cudaMalloc, @function
cudaMalloc:
	endbr64
	push	%rbp
	mov	%rsp, %rbp
	call	reloc_malloc
	pop	%rbp
	ret
	.size	cudaMalloc, . - cudaMalloc

	.globl	cudaFree
	.type	cudaFree, @function
cudaFree:
	movabs	$0x5919cafebeef, %rax
	push	%rbp
	mov	%rsp, %rbp
	call	reloc_free
	pop	%rbp
	ret
	.size	cudaFree, . - cudaFree

	.globl	cudaMallocHost
	.type	cudaMallocHost, @function
cudaMallocHost:
	sub	$8, %rsp
	call	reloc_malloc
	add	$8, %rsp
	ret
	.size	cudaMallocHost, . - cudaMallocHost

	.globl	cudaFreeHost
	.type	cudaFreeHost, @function
cudaFreeHost:
	xor	%eax, %eax
1:	push	%rbp
	mov	%rsp, %rbp
	test	%eax, %eax
	jnz	2f
	inc	%eax		/* first pass: round once more, through the push */
	pop	%rbp
	jmp	1b
2:	call	reloc_free
	pop	%rbp
	ret
	.size	cudaFreeHost, . - cudaFreeHost

	.section .note.GNU-stack, "", @progbits
