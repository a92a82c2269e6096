// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdw.h>
#include "lib/vec.h"
#include "probe/elf_obj.h"
#include "symbols/cfi.h"

/* What CFI one object has, looked up on its first frame and kept. */
struct cfi_obj {
	const struct elf_obj *elf;
	Dwarf_CFI *eh;	     /* .eh_frame (dwarf_getcfi_elf: ours to end) */
	Dwarf *dw, *dbg_dw;  /* the object's DWARF and its debug file's, for .debug_frame */
	Dwarf_CFI *df, *dbg; /* their .debug_frame (owned by dw, dbg_dw) */
};

struct cfi {
	struct cfi_obj *v;
	size_t n, cap;
};

int cfi__new(struct cfi **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void cfi__free(struct cfi *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++) {
		if (c->v[i].eh)
			dwarf_cfi_end(c->v[i].eh);
		dwarf_end(c->v[i].dw);
		dwarf_end(c->v[i].dbg_dw);
	}
	free(c->v);
	free(c);
}

static struct cfi_obj *obj_get(struct cfi *c, struct elf_obj *elf)
{
	struct elf_obj *dbg = elf_obj__debug_obj(elf);
	struct cfi_obj *o;
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].elf == elf)
			return &c->v[i];
	if (vec_grow((void **)&c->v, &c->cap, c->n, sizeof(*c->v)))
		return NULL;
	o = &c->v[c->n++];
	*o = (struct cfi_obj){.elf = elf};
	o->eh = dwarf_getcfi_elf(elf_obj__libelf(elf));
	/* No DWARF sections: NULL, not an error. */
	o->dw = dwarf_begin_elf(elf_obj__libelf(elf), DWARF_C_READ, NULL);
	if (o->dw)
		o->df = dwarf_getcfi(o->dw);
	if (dbg) {
		o->dbg_dw = dwarf_begin_elf(elf_obj__libelf(dbg), DWARF_C_READ, NULL);
		if (o->dbg_dw)
			o->dbg = dwarf_getcfi(o->dbg_dw);
	}
	return o;
}

#define EVAL_STACK 16

static bool reg_get(const struct cfi_regs *regs, uint64_t reg, uint64_t *v)
{
	if (reg >= CFI_NREGS || !(regs->known & (1u << reg)))
		return false;
	*v = regs->v[reg];
	return true;
}

int cfi__eval(const Dwarf_Op *ops, size_t n, const struct cfi_regs *regs, bool have_cfa,
	      uint64_t cfa, cfi_read_fn rd, void *ctx, uint64_t *out, bool *is_value)
{
	uint64_t st[EVAL_STACK], a, b;
	size_t sp = 0, i;
	int err;

	*is_value = false;
	for (i = 0; i < n; i++) {
		uint8_t op = ops[i].atom;
		/* pops: operands an op takes; pushes: 1 for every op below that yields one */
		unsigned int pops = 0;

		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			a = op - DW_OP_lit0;
			goto push;
		}
		if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
			if (!reg_get(regs, op - DW_OP_breg0, &a))
				return -EINVAL;
			a += ops[i].number;
			goto push;
		}
		switch (op) {
		case DW_OP_const1u:
		case DW_OP_const1s:
		case DW_OP_const2u:
		case DW_OP_const2s:
		case DW_OP_const4u:
		case DW_OP_const4s:
		case DW_OP_const8u:
		case DW_OP_const8s:
		case DW_OP_constu:
		case DW_OP_consts:
			a = ops[i].number; /* libdw sign-extends the signed forms */
			goto push;
		case DW_OP_bregx:
			if (!reg_get(regs, ops[i].number, &a))
				return -EINVAL;
			a += ops[i].number2;
			goto push;
		case DW_OP_call_frame_cfa:
			if (!have_cfa)
				return -EINVAL;
			a = cfa;
			goto push;
		case DW_OP_nop:
			continue;
		case DW_OP_stack_value:
			/* only last: what precedes it is the value */
			if (i + 1 != n)
				return -EINVAL;
			*is_value = true;
			continue;
		case DW_OP_dup:
		case DW_OP_drop:
		case DW_OP_deref:
		case DW_OP_deref_size:
		case DW_OP_plus_uconst:
		case DW_OP_neg:
		case DW_OP_not:
			pops = 1;
			break;
		case DW_OP_over:
		case DW_OP_swap:
		case DW_OP_plus:
		case DW_OP_minus:
		case DW_OP_mul:
		case DW_OP_and:
		case DW_OP_or:
		case DW_OP_xor:
		case DW_OP_shl:
		case DW_OP_shr:
		case DW_OP_shra:
		case DW_OP_ge:
		case DW_OP_gt:
		case DW_OP_le:
		case DW_OP_lt:
		case DW_OP_eq:
		case DW_OP_ne:
			pops = 2;
			break;
		default:
			return -EINVAL;
		}
		if (sp < pops)
			return -EINVAL;
		a = st[sp - 1];
		b = pops == 2 ? st[sp - 2] : 0; /* b is below a */
		switch (op) {
		case DW_OP_dup:
			goto push;
		case DW_OP_drop:
			sp--;
			continue;
		case DW_OP_over:
			a = b;
			goto push;
		case DW_OP_swap:
			st[sp - 1] = b;
			st[sp - 2] = a;
			continue;
		case DW_OP_deref:
		case DW_OP_deref_size:
			if (op == DW_OP_deref_size && (!ops[i].number || ops[i].number > 8))
				return -EINVAL;
			err = rd(ctx, a, &b);
			if (err)
				return err;
			if (op == DW_OP_deref_size && ops[i].number < 8)
				b &= (1ULL << (8 * ops[i].number)) - 1;
			st[sp - 1] = b;
			continue;
		case DW_OP_plus_uconst:
			st[sp - 1] = a + ops[i].number;
			continue;
		case DW_OP_neg:
			st[sp - 1] = -a;
			continue;
		case DW_OP_not:
			st[sp - 1] = ~a;
			continue;
		}
		sp--;
		switch (op) {
		case DW_OP_plus:
			a = b + a;
			break;
		case DW_OP_minus:
			a = b - a;
			break;
		case DW_OP_mul:
			a = b * a;
			break;
		case DW_OP_and:
			a = b & a;
			break;
		case DW_OP_or:
			a = b | a;
			break;
		case DW_OP_xor:
			a = b ^ a;
			break;
		case DW_OP_shl:
			a = a >= 64 ? 0 : b << a;
			break;
		case DW_OP_shr:
			a = a >= 64 ? 0 : b >> a;
			break;
		case DW_OP_shra:
			a = a >= 64 ? (uint64_t)((int64_t)b >> 63) : (uint64_t)((int64_t)b >> a);
			break;
		case DW_OP_ge:
			a = (int64_t)b >= (int64_t)a;
			break;
		case DW_OP_gt:
			a = (int64_t)b > (int64_t)a;
			break;
		case DW_OP_le:
			a = (int64_t)b <= (int64_t)a;
			break;
		case DW_OP_lt:
			a = (int64_t)b < (int64_t)a;
			break;
		case DW_OP_eq:
			a = b == a;
			break;
		default: /* DW_OP_ne */
			a = b != a;
			break;
		}
		st[sp - 1] = a;
		continue;
	push:
		if (sp == EVAL_STACK)
			return -EINVAL;
		st[sp++] = a;
	}
	if (!sp)
		return -EINVAL;
	*out = st[sp - 1];
	return 0;
}

/*
 * A register of the caller by frame's rule: *known false when CFI says it cannot be
 * recovered. Same-value keeps the frame's own.
 */
static int caller_reg(Dwarf_Frame *fr, int reg, const struct cfi_regs *regs, uint64_t cfa,
		      cfi_read_fn rd, void *ctx, uint64_t *v, bool *known)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	bool is_value;
	uint64_t at;
	int err;

	if (dwarf_frame_register(fr, reg, mem, &ops, &nops))
		return -EINVAL;
	if (!nops) {
		*known = !ops && reg_get(regs, (uint64_t)reg, v);
		return 0;
	}
	err = cfi__eval(ops, nops, regs, true, cfa, rd, ctx, &at, &is_value);
	if (err)
		return err;
	*known = true;
	if (is_value) {
		*v = at;
		return 0;
	}
	return rd(ctx, at, v);
}

int cfi__step(struct cfi *c, struct elf_obj *elf, uint64_t bias, bool exact, struct cfi_regs *regs,
	      cfi_read_fn rd, void *ctx)
{
	uint64_t pc = regs->v[CFI_RIP], cfa, ra, bp;
	Dwarf_CFI *tries[3];
	struct cfi_obj *o = obj_get(c, elf);
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t nops, i;
	bool is_value, ra_known, bp_known;
	int ra_reg, err;

	if (!o)
		return -ENOMEM;
	tries[0] = o->eh;
	tries[1] = o->df;
	tries[2] = o->dbg;
	for (i = 0; i < 3 && !fr; i++)
		if (tries[i] && dwarf_cfi_addrframe(tries[i], pc - bias - !exact, &fr))
			fr = NULL;
	if (!fr)
		return -ENOENT;
	ra_reg = dwarf_frame_info(fr, NULL, NULL, NULL);
	err = ra_reg < 0 || dwarf_frame_cfa(fr, &ops, &nops) || !nops ? -EINVAL : 0;
	if (!err)
		err = cfi__eval(ops, nops, regs, false, 0, rd, ctx, &cfa, &is_value);
	if (!err)
		err = caller_reg(fr, ra_reg, regs, cfa, rd, ctx, &ra, &ra_known);
	if (!err)
		err = caller_reg(fr, CFI_RBP, regs, cfa, rd, ctx, &bp, &bp_known);
	free(fr);
	if (err)
		return err;
	if (!ra_known || !ra)
		return -ENODATA;
	regs->v[CFI_RIP] = ra;
	regs->v[CFI_RSP] = cfa;
	regs->v[CFI_RBP] = bp;
	regs->known = 1u << CFI_RIP | 1u << CFI_RSP | (bp_known ? 1u << CFI_RBP : 0);
	return 0;
}
