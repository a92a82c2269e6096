/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Call frame information (DWARF CFI) of the objects mapped in traced processes, read with
 * elfutils' libdw once per object and kept: .eh_frame, else .debug_frame, else that of the
 * object's separate debug file. One step of an unwind: from a frame's registers to its
 * caller's, reading saved registers through a callback (a copy of the stack, never the
 * live process). x86-64 only.
 */
#ifndef GPULEAK_SYMBOLS_CFI_H
#define GPULEAK_SYMBOLS_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdw.h>

struct elf_obj;
struct cfi;

/* DWARF register numbers of x86-64 the unwinder knows: what BPF copies (gl_ustack_rec). */
enum cfi_reg {
	CFI_RBP = 6,
	CFI_RSP = 7,
	CFI_RIP = 16, /* the return address column */
	CFI_NREGS = 17,
};

struct cfi_regs {
	uint64_t v[CFI_NREGS];
	uint32_t known; /* bit per register of v that holds a value */
};

/* 8 bytes of the stack at addr: 0, or -EFAULT outside what was copied. */
typedef int (*cfi_read_fn)(void *ctx, uint64_t addr, uint64_t *val);

int cfi__new(struct cfi **out);
void cfi__free(struct cfi *c);

/*
 * One frame up. regs are a frame's at pc, in code of elf loaded with bias (pc - bias is the
 * object's virtual address); exact: pc is the instruction about to run (the probed entry),
 * else a return address (its call is looked up, at pc - 1). On success regs are the
 * caller's: rip the return address, rsp the CFA, rbp restored or kept. 0; -ENOENT: no CFI
 * covers pc; -ENODATA: the return address is undefined (the outermost frame); -EFAULT: a
 * saved register lies outside the copy; -EINVAL: a rule this cannot evaluate.
 */
int cfi__step(struct cfi *c, struct elf_obj *elf, uint64_t bias, bool exact, struct cfi_regs *regs,
	      cfi_read_fn rd, void *ctx);

/*
 * A DWARF expression of CFI (the object's bytes, as libdw decoded them) on regs, cfa being
 * DW_OP_call_frame_cfa's value (have_cfa false: none yet). *out is its value; *is_value
 * says it ended in DW_OP_stack_value (else it is the address the value is saved at). 0,
 * -EINVAL (an op not supported, a register not known, a malformed expression) or -EFAULT.
 */
int cfi__eval(const Dwarf_Op *ops, size_t n, const struct cfi_regs *regs, bool have_cfa,
	      uint64_t cfa, cfi_read_fn rd, void *ctx, uint64_t *out, bool *is_value);

#endif
