/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where a uprobe goes in a function, decided from its first instructions (x86-64).
 *
 * Under a uprobe the kernel emulates a few instructions (push of a register, nop, direct
 * jumps, calls and conditional jumps; a 5-byte nop is even patched into a call, no trap)
 * and single-steps every other one out of line: a second trap, ~20 us per hit on a nested
 * VM instead of ~0.6 us (arch/x86/kernel/uprobes.c: branch_setup_xol_ops,
 * push_setup_xol_ops, can_optimize; uprobe_init_insn refuses a few outright).
 *
 * An entry probe may move forward past instructions that provably do not matter to it: no
 * jump, no store to memory, no write to an argument register, the stack pointer or the frame
 * pointer (the return probe takes the return address at the stack pointer, the entry probe
 * reads arguments and [sp], stack capture walks frame pointers), and no direct branch in the
 * function lands between the entry and the new place. Anything not positively decoded as
 * such keeps the probe at the entry.
 */
#ifndef GPULEAK_PROBE_INSN_H
#define GPULEAK_PROBE_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the kernel does with an instruction under a uprobe. */
enum insn_uprobe {
	INSN_EMULATED = 0,  /* push reg, nop, jmp/call/jcc rel: no single-step */
	INSN_OPTIMIZED = 1, /* a 5-byte nop: patched into a call, no trap at all */
	INSN_STEPPED = 2,   /* single-stepped out of line: slow */
	INSN_REFUSED = 3,   /* the kernel will not probe it (lock/segment prefixes, ...) */
};

struct insn {
	uint8_t len;	/* bytes; 0 when not decoded */
	uint8_t uprobe; /* enum insn_uprobe */
	bool skippable; /* decoded, and provably irrelevant to the probes (above) */
	char name[12];	/* mnemonic, for messages ("endbr64", "movabs", ...) */
};

/*
 * Decode the instruction at code[0 .. len) at virtual address vaddr (the 5-byte nop
 * optimization depends on page boundaries). Returns 0, or -EINVAL when it cannot be decoded
 * (then ->uprobe is still set from the opcode, ->len is 0 and ->skippable false).
 */
int insn__decode(const uint8_t *code, size_t len, uint64_t vaddr, struct insn *out);

/* Where a function's entry probe goes. */
enum probe_place {
	PLACE_ENTRY = 0,   /* at the entry, on an instruction the kernel emulates */
	PLACE_MOVED = 1,   /* moved past `moved` bytes of single-stepped instructions */
	PLACE_SLOW = 2,	   /* at the entry, single-stepped: it could not be moved */
	PLACE_REFUSED = 3, /* at the entry, which the kernel refuses to probe */
};

struct probe_placement {
	uint8_t place;	/* enum probe_place */
	uint8_t moved;	/* bytes past the entry */
	char first[12]; /* the entry's first instruction (what moved or slow refers to) */
	char why[48];	/* PLACE_SLOW, PLACE_REFUSED: why it stayed */
};

/*
 * code: the function's bytes from its entry, len of them, all of it unless fixed is given;
 * vaddr: the entry's virtual address. Returns the offset from the entry where the probe goes.
 * fixed: the probe must stay at the entry, for this reason (said when it is slow there).
 */
uint64_t insn__place_probe(const uint8_t *code, size_t len, uint64_t vaddr, const char *fixed,
			   struct probe_placement *out);

#endif
