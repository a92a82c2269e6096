/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A library of BENCH_SYMS (100000) small functions f0 ... f99999, 16 bytes apart, each with a
 * frame pointer: the ELF symbol table `glbench symbols` names frames from, beside a perf map
 * of as many entries.
 */
#ifndef BENCH_SYMS
#define BENCH_SYMS 100000
#endif
	.text
	.altmacro
	.macro fn i
	.globl f\i
	.type f\i, @function
	.p2align 4
f\i:
	push %rbp
	mov %rsp, %rbp
	pop %rbp
	ret
	.size f\i, . - f\i
	.endm
	.set i, 0
	.rept BENCH_SYMS
	fn %i
	.set i, i + 1
	.endr
	.section .note.GNU-stack, "", @progbits
