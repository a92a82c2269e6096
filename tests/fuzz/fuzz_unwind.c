// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: what --unwind dwarf reads of a traced process (symbols/cfi.c): its
 * stack bytes and registers, unwound with real call frame information, and the DWARF
 * expressions of CFI, on arbitrary bytes. The first byte picks:
 *   - even: an expression of ops taken from the input (an atom, then its operands as 8-byte
 *     little-endian words) on registers from the input, saved values read from the rest;
 *   - odd: up to 64 steps of cfi__step from a pc inside a function of this very binary
 *     (its .eh_frame, as libdw reads it for a traced module), rsp and rbp from the input,
 *     the stack copy the rest of it.
 * Besides not crashing (ASan, UBSan), it checks what cfi.h promises: a step that succeeds
 * moves to a caller with a known return address and stack pointer; DW_OP_stack_value counts
 * only as the last op.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "probe/elf_obj.h"
#include "symbols/cfi.h"

struct copy {
	uint64_t sp;
	const uint8_t *data;
	size_t len;
};

static int copy_read(void *ctx, uint64_t addr, uint64_t *val)
{
	const struct copy *c = ctx;

	if (addr < c->sp || addr - c->sp > c->len || c->len - (addr - c->sp) < 8)
		return -EFAULT;
	memcpy(val, c->data + (addr - c->sp), 8);
	return 0;
}

static uint64_t take(const uint8_t **p, size_t *n)
{
	uint64_t v = 0;
	size_t k = *n < 8 ? *n : 8;

	memcpy(&v, *p, k);
	*p += k;
	*n -= k;
	return v;
}

static struct elf_obj *self;
static struct cfi *cfi;

struct funcs {
	uint64_t vaddr[4096], size[4096];
	size_t n;
};

static struct funcs fns;

static int add_func(const struct elf_func *f, void *ctx)
{
	(void)ctx;
	if (f->size && fns.n < 4096) {
		fns.vaddr[fns.n] = f->vaddr;
		fns.size[fns.n++] = f->size;
	}
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (elf_obj__open("/proc/self/exe", &self) || cfi__new(&cfi))
		abort();
	elf_obj__for_each_func(self, add_func, NULL);
	if (!fns.n)
		abort();
	return 0;
}

static void eval(const uint8_t *p, size_t n)
{
	struct cfi_regs regs = {.known = (uint32_t)take(&p, &n)};
	Dwarf_Op ops[32];
	size_t nops = 0, i;
	struct copy c;
	uint64_t out;
	bool is_value;

	for (i = 0; i < CFI_NREGS; i++)
		regs.v[i] = i * 0x1000 + 0x7f0000000000ULL;
	while (n && nops < 32) {
		ops[nops].atom = *p++;
		n--;
		ops[nops].number = take(&p, &n);
		ops[nops].number2 = ops[nops].atom == DW_OP_bregx ? take(&p, &n) : 0;
		ops[nops].offset = 0;
		nops++;
		if (n && *p == 0xff) /* the rest is the stack */
			break;
	}
	c = (struct copy){.sp = regs.v[CFI_RSP], .data = p, .len = n};
	if (!cfi__eval(ops, nops, &regs, nops & 1, regs.v[CFI_RSP] + 16, copy_read, &c, &out,
		       &is_value) &&
	    is_value && ops[nops - 1].atom != DW_OP_stack_value) {
		fprintf(stderr, "a value without DW_OP_stack_value last\n");
		abort();
	}
}

static void steps(const uint8_t *p, size_t n)
{
	uint64_t pick = take(&p, &n), sp = take(&p, &n) & ~7ULL, bp = take(&p, &n);
	size_t f = (size_t)(pick % fns.n);
	struct cfi_regs regs = {.known = 1u << CFI_RIP | 1u << CFI_RSP | 1u << CFI_RBP};
	struct copy c = {.sp = sp, .data = p, .len = n};

	regs.v[CFI_RIP] = fns.vaddr[f] + (pick >> 32) % fns.size[f];
	regs.v[CFI_RSP] = sp;
	regs.v[CFI_RBP] = bp;
	for (int i = 0; i < 64; i++) {
		int err = cfi__step(cfi, self, 0, i == 0, &regs, copy_read, &c);

		if (err)
			return;
		if ((regs.known & (1u << CFI_RIP | 1u << CFI_RSP)) !=
			(1u << CFI_RIP | 1u << CFI_RSP) ||
		    !regs.v[CFI_RIP]) {
			fprintf(stderr, "a step to a caller without its pc or sp\n");
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		steps(data + 1, size - 1);
	else
		eval(data + 1, size - 1);
	return 0;
}
