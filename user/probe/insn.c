// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A deliberately small x86-64 decoder: exact about the few instructions function prologues
 * start with, and "unknown" about everything else. Unknown is always safe: the probe stays
 * where it was asked to be.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "probe/insn.h"

/* General-purpose registers by number (ModRM / opcode encoding, REX-extended). */
enum { R_AX, R_CX, R_DX, R_BX, R_SP, R_BP, R_SI, R_DI, R_R8, R_R9, R_R10, R_R11 };

/*
 * Registers a skipped instruction may write: scratch registers that carry no argument
 * (rax carries only the vector count of a variadic call, read by nobody here).
 */
#define SCRATCH ((1u << R_AX) | (1u << R_R10) | (1u << R_R11))

/* The kernel's nops (arch/x86/include/asm/nops.h, 64-bit): matched byte for byte. */
static const uint8_t kernel_nops[9][8] = {
    [1] = {0x90},
    [2] = {0x66, 0x90},
    [3] = {0x0f, 0x1f, 0x00},
    [4] = {0x0f, 0x1f, 0x40, 0x00},
    [5] = {0x0f, 0x1f, 0x44, 0x00, 0x00},
    [6] = {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
    [7] = {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
    [8] = {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
};

struct dec {
	const uint8_t *b;
	size_t len, i;
	bool p66, pf3, pf2, bad_prefix, seg; /* seg: fs/gs */
	uint8_t rex;
	bool err;
};

static uint8_t next(struct dec *d)
{
	if (d->i >= d->len || d->i >= 15) {
		d->err = true;
		return 0;
	}
	return d->b[d->i++];
}

/* ModRM (and SIB, displacement) after the opcode. *reg and *rm get REX-extended numbers;
 * *mem is whether r/m names memory. */
static void modrm(struct dec *d, unsigned int *reg, unsigned int *rm, bool *mem)
{
	uint8_t m = next(d), mod = m >> 6;

	*reg = ((m >> 3) & 7) | (d->rex & 4 ? 8 : 0);
	*rm = (m & 7) | (d->rex & 1 ? 8 : 0);
	*mem = mod != 3;
	if (mod == 3)
		return;
	if ((m & 7) == 4) {
		uint8_t sib = next(d);

		if (mod == 0 && (sib & 7) == 5)
			d->i += 4; /* no base: disp32 */
	} else if (mod == 0 && (m & 7) == 5) {
		d->i += 4; /* rip-relative disp32 */
	}
	if (mod == 1)
		d->i += 1;
	else if (mod == 2)
		d->i += 4;
}

static unsigned int imm_z(const struct dec *d)
{
	return d->p66 ? 2 : 4;
}

static void name(struct insn *in, const char *s)
{
	snprintf(in->name, sizeof(in->name), "%s", s);
}

/* The kernel's view: emulated, optimized, stepped or refused (opc: first opcode byte). */
static uint8_t kernel_class(const struct dec *d, uint8_t opc, uint8_t opc2, size_t len,
			    uint64_t vaddr)
{
	bool branch;

	/* is_prefix_bad(): es/cs/ss/ds segment overrides and lock make it refuse. */
	if (d->bad_prefix)
		return INSN_REFUSED;
	if (len && len <= 8 && !memcmp(d->b, kernel_nops[len], len))
		/* can_optimize(): a 5-byte nop that does not cross a page */
		return len == 5 && 4096 - (vaddr & 4095) >= 5 ? INSN_OPTIMIZED : INSN_EMULATED;
	if (opc == 0x90)
		return len == 5 && 4096 - (vaddr & 4095) >= 5 ? INSN_OPTIMIZED : INSN_EMULATED;
	if (opc == 0x0f && opc2 == 0x1f && len == 5 && 4096 - (vaddr & 4095) >= 5)
		return INSN_OPTIMIZED; /* nopl of 5 bytes: insn_is_nopl() */
	branch = opc == 0xeb || opc == 0xe9 || opc == 0xe8 || (opc >= 0x70 && opc <= 0x7f) ||
		 (opc == 0x0f && opc2 >= 0x80 && opc2 <= 0x8f);
	if (branch)
		return d->p66 ? INSN_REFUSED : INSN_EMULATED;
	/* push_setup_xol_ops(): 1 byte, or 2 with exactly the REX prefix 0x41 */
	if (opc >= 0x50 && opc <= 0x57 && (len == 1 || (len == 2 && d->b[0] == 0x41)))
		return INSN_EMULATED;
	/* what good_insns_64 leaves out and prologues could hold: int3, hlt, syscall, ... */
	if (opc == 0xcc || opc == 0xcd || opc == 0xf4 || opc == 0xfa || opc == 0xfb ||
	    (opc == 0x0f && (opc2 == 0x05 || opc2 == 0x0b || opc2 == 0x34)))
		return INSN_REFUSED;
	return INSN_STEPPED;
}

int insn__decode(const uint8_t *code, size_t len, uint64_t vaddr, struct insn *out)
{
	struct dec d = {.b = code, .len = len};
	unsigned int reg = 0, rm = 0, writes = 0, imm = 0;
	bool mem = false, store = false, known = true;
	uint8_t opc, opc2 = 0;

	memset(out, 0, sizeof(*out));
	/* legacy prefixes, then REX */
	for (;;) {
		uint8_t p = d.i < len ? code[d.i] : 0;

		if (p == 0x66)
			d.p66 = true;
		else if (p == 0xf3)
			d.pf3 = true;
		else if (p == 0xf2)
			d.pf2 = true;
		else if (p == 0x64 || p == 0x65)
			d.seg = true;
		else if (p == 0x26 || p == 0x2e || p == 0x36 || p == 0x3e || p == 0xf0)
			d.bad_prefix = true;
		else
			break;
		d.i++;
	}
	if (d.i < len && (code[d.i] & 0xf0) == 0x40)
		d.rex = code[d.i++];
	opc = next(&d);
	if (opc == 0x0f)
		opc2 = next(&d);
	if (d.err)
		goto undecoded;

	switch (opc) {
	case 0x0f:
		if (opc2 == 0x1e && d.pf3 && d.i < len &&
		    (code[d.i] == 0xfa || code[d.i] == 0xfb)) {
			d.i++; /* endbr64/endbr32: a nop unless IBT is on */
			name(out, code[d.i - 1] == 0xfa ? "endbr64" : "endbr32");
			break;
		}
		if (opc2 == 0x1f) { /* nopl/nopw r/m */
			modrm(&d, &reg, &rm, &mem);
			name(out, "nop");
			break;
		}
		if (opc2 == 0xb6 || opc2 == 0xb7 || opc2 == 0xbe || opc2 == 0xbf) {
			modrm(&d, &reg, &rm, &mem);
			writes = 1u << reg;
			name(out, opc2 < 0xb8 ? "movzx" : "movsx");
			break;
		}
		if (opc2 >= 0x80 && opc2 <= 0x8f) {
			d.i += 4;
			name(out, "jcc");
			known = false; /* a branch: never skipped */
			break;
		}
		known = false;
		break;
	case 0x89: /* mov r/m, r */
		modrm(&d, &reg, &rm, &mem);
		store = mem;
		writes = mem ? 0 : 1u << rm;
		name(out, "mov");
		break;
	case 0x8b: /* mov r, r/m */
	case 0x63: /* movsxd r, r/m */
	case 0x8d: /* lea r, m */
		modrm(&d, &reg, &rm, &mem);
		writes = 1u << reg;
		name(out, opc == 0x8b ? "mov" : opc == 0x63 ? "movsxd" : "lea");
		break;
	case 0xb8 ... 0xbf: /* mov r, imm32 / movabs r, imm64 */
		reg = (opc & 7) | (d.rex & 1 ? 8 : 0);
		imm = d.rex & 8 ? 8 : imm_z(&d);
		writes = 1u << reg;
		name(out, d.rex & 8 ? "movabs" : "mov");
		break;
	case 0xc7: /* mov r/m, imm32 */
		modrm(&d, &reg, &rm, &mem);
		if ((reg & 7) != 0)
			known = false;
		store = mem;
		writes = mem ? 0 : 1u << rm;
		imm = imm_z(&d);
		name(out, "mov");
		break;
	case 0x01:
	case 0x09:
	case 0x11:
	case 0x19:
	case 0x21:
	case 0x29:
	case 0x31:
		/* add/or/adc/sbb/and/sub/xor r/m, r */
		modrm(&d, &reg, &rm, &mem);
		store = mem;
		writes = mem ? 0 : 1u << rm;
		name(out, opc == 0x31 ? "xor" : opc == 0x29 ? "sub" : "alu");
		break;
	case 0x03:
	case 0x0b:
	case 0x13:
	case 0x1b:
	case 0x23:
	case 0x2b:
	case 0x33:
		/* the same, r, r/m */
		modrm(&d, &reg, &rm, &mem);
		writes = 1u << reg;
		name(out, opc == 0x33 ? "xor" : opc == 0x2b ? "sub" : "alu");
		break;
	case 0x39:
	case 0x3b:
	case 0x38:
	case 0x3a:
	case 0x84:
	case 0x85:
		/* cmp, test: flags only */
		modrm(&d, &reg, &rm, &mem);
		name(out, opc >= 0x84 ? "test" : "cmp");
		break;
	case 0x80:
	case 0x81:
	case 0x83: /* group 1 r/m, imm */
		modrm(&d, &reg, &rm, &mem);
		imm = opc == 0x81 ? imm_z(&d) : 1;
		if ((reg & 7) != 7) { /* all but cmp write r/m */
			store = mem;
			writes = mem ? 0 : 1u << rm;
		}
		name(out, (reg & 7) == 7   ? "cmp"
			  : (reg & 7) == 5 ? "sub"
			  : (reg & 7) == 0 ? "add"
					   : "alu");
		break;
	case 0x3c:
	case 0xa8: /* cmp al / test al, imm8 */
		imm = 1;
		name(out, opc == 0x3c ? "cmp" : "test");
		break;
	case 0x3d:
	case 0xa9: /* cmp / test eax, imm32 */
		imm = imm_z(&d);
		name(out, opc == 0x3d ? "cmp" : "test");
		break;
	case 0xf6:
	case 0xf7: /* group 3: only test r/m, imm */
		modrm(&d, &reg, &rm, &mem);
		if ((reg & 7) != 0)
			known = false;
		imm = opc == 0xf6 ? 1 : imm_z(&d);
		name(out, "test");
		break;
	case 0x90:
		name(out, d.pf3 ? "pause" : "nop");
		if (d.rex & 1)
			known = false; /* xchg %r8d, %eax */
		break;
	case 0x50 ... 0x57:
		name(out, "push");
		known = false; /* moves the stack pointer */
		break;
	case 0x70 ... 0x7f:
	case 0xeb:
		d.i += 1;
		name(out, opc == 0xeb ? "jmp" : "jcc");
		known = false;
		break;
	case 0xe8:
	case 0xe9:
		d.i += 4;
		name(out, opc == 0xe8 ? "call" : "jmp");
		known = false;
		break;
	case 0xc3:
		name(out, "ret");
		known = false;
		break;
	default:
		known = false;
		break;
	}
	d.i += imm;
	if (d.err || d.i > len || d.i > 15 || !known)
		goto undecoded;
	out->len = (uint8_t)d.i;
	out->uprobe = kernel_class(&d, opc, opc2, d.i, vaddr);
	/* The 66/f2/f3 prefixes change these instructions' meaning (endbr aside): unknown. */
	out->skippable =
	    !store && !(writes & ~SCRATCH) && !d.bad_prefix && !d.pf2 && (!d.pf3 || opc == 0x0f);
	return 0;
undecoded:
	/* Still classify what we can: branches and pushes by opcode alone. */
	if (!out->name[0] && opc == 0xff && d.i < len) {
		static const char *const grp5[8] = {"inc",  "dec",  "call*", "call*",
						    "jmp*", "jmp*", "push",  "ff"};

		name(out, grp5[(code[d.i] >> 3) & 7]);
	}
	if (!out->name[0])
		snprintf(out->name, sizeof(out->name), "%s%02x", opc == 0x0f ? "0f " : "",
			 opc == 0x0f ? opc2 : opc);
	out->len = 0;
	out->uprobe = kernel_class(&d, opc, opc2, d.err ? 0 : d.i, vaddr);
	out->skippable = false;
	return -EINVAL;
}

/* Whether a direct branch in code[0 .. len) lands in (entry, entry + upto]. */
static bool branch_lands_in(const uint8_t *code, size_t len, uint64_t upto)
{
	size_t p;

	/*
	 * Every byte offset, not just instruction starts: no decoder of the whole function is
	 * needed, and a false match only keeps a probe where it was.
	 */
	for (p = 0; p < len; p++) {
		int64_t target = -1;

		if ((code[p] == 0xeb || (code[p] >= 0x70 && code[p] <= 0x7f)) && p + 2 <= len)
			target = (int64_t)p + 2 + (int8_t)code[p + 1];
		else if ((code[p] == 0xe8 || code[p] == 0xe9) && p + 5 <= len)
			target = (int64_t)p + 5 +
				 (int32_t)(code[p + 1] | code[p + 2] << 8 | code[p + 3] << 16 |
					   (uint32_t)code[p + 4] << 24);
		else if (code[p] == 0x0f && p + 6 <= len && code[p + 1] >= 0x80 &&
			 code[p + 1] <= 0x8f)
			target = (int64_t)p + 6 +
				 (int32_t)(code[p + 2] | code[p + 3] << 8 | code[p + 4] << 16 |
					   (uint32_t)code[p + 5] << 24);
		if (target > 0 && (uint64_t)target <= upto)
			return true;
	}
	return false;
}

/* Skipped instructions considered at most: prologues put one or two before the first push. */
#define MAX_SKIP 4

uint64_t insn__place_probe(const uint8_t *code, size_t len, uint64_t vaddr, const char *fixed,
			   struct probe_placement *out)
{
	struct insn in;
	uint64_t off = 0;
	int k;

	memset(out, 0, sizeof(*out));
	insn__decode(code, len, vaddr, &in);
	snprintf(out->first, sizeof(out->first), "%s", in.name);
	if (in.uprobe == INSN_EMULATED || in.uprobe == INSN_OPTIMIZED) {
		out->place = PLACE_ENTRY;
		return 0;
	}
	out->place = in.uprobe == INSN_REFUSED ? PLACE_REFUSED : PLACE_SLOW;
	if (fixed) {
		snprintf(out->why, sizeof(out->why), "%s", fixed);
		return 0;
	}
	for (k = 0; k < MAX_SKIP; k++) {
		if (off && (in.uprobe == INSN_EMULATED || in.uprobe == INSN_OPTIMIZED)) {
			if (branch_lands_in(code, len, off)) {
				snprintf(out->why, sizeof(out->why),
					 "a branch in the function lands after it");
				break;
			}
			out->place = PLACE_MOVED;
			out->moved = (uint8_t)off;
			return off;
		}
		if (!in.skippable) {
			snprintf(out->why, sizeof(out->why), "%s%s cannot be skipped", in.name,
				 off ? " after it" : "");
			break;
		}
		off += in.len;
		if (off >= len) {
			snprintf(out->why, sizeof(out->why), "the function ends");
			break;
		}
		insn__decode(code + off, len - off, vaddr + off, &in);
	}
	if (k == MAX_SKIP)
		snprintf(out->why, sizeof(out->why), "no emulated instruction close after it");
	return 0;
}
