// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The prologue decoder and probe placement (user/probe/insn.c), on byte sequences taken from real
 * libraries (NVIDIA's libnccl.so.2, glibc 2.36, clang/gcc prologues) and on the cases that
 * must keep a probe where it is.
 */
#include <errno.h>
#include <string.h>
#include "check.h"
#include "probe/insn.h"

#define VADDR 0x1000 /* page-aligned: a 5-byte nop here can be optimized */

struct one {
	const char *what;
	uint8_t code[16];
	size_t len;
	uint8_t len_want; /* 0: not decoded as skippable (branches, push) */
	uint8_t uprobe;
	bool skippable;
};

static void decode(void)
{
	static const struct one t[] = {
	    {"push %rbp", {0x55}, 1, 0, INSN_EMULATED, false},
	    {"push %r13", {0x41, 0x55}, 2, 0, INSN_EMULATED, false},
	    {"rex.w push %rbp (only rex 0x41 is emulated)",
	     {0x48, 0x55},
	     2,
	     0,
	     INSN_STEPPED,
	     false},
	    {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}, 4, 4, INSN_STEPPED, true},
	    {"movabs $0x8000000000000000,%rax (ncclCommRegister)",
	     {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0x80},
	     10,
	     10,
	     INSN_STEPPED,
	     true},
	    {"movabs $imm,%rdi: an argument",
	     {0x48, 0xbf, 1, 2, 3, 4, 5, 6, 7, 8},
	     10,
	     10,
	     INSN_STEPPED,
	     false},
	    {"test %rdi,%rdi (glibc free)", {0x48, 0x85, 0xff}, 3, 3, INSN_STEPPED, true},
	    {"cmpb $0x2f,(%rdi)", {0x80, 0x3f, 0x2f}, 3, 3, INSN_STEPPED, true},
	    {"mov %rdi,%r10", {0x49, 0x89, 0xfa}, 3, 3, INSN_STEPPED, true},
	    {"mov %rdi,%rbx: callee-saved", {0x48, 0x89, 0xfb}, 3, 3, INSN_STEPPED, false},
	    {"mov %rsi,%rdx: an argument", {0x48, 0x89, 0xf2}, 3, 3, INSN_STEPPED, false},
	    {"mov %rax,(%rdi): a store", {0x48, 0x89, 0x07}, 3, 3, INSN_STEPPED, false},
	    {"sub $0x18,%rsp", {0x48, 0x83, 0xec, 0x18}, 4, 4, INSN_STEPPED, false},
	    {"xor %eax,%eax", {0x31, 0xc0}, 2, 2, INSN_STEPPED, true},
	    {"xor %esi,%esi: an argument", {0x31, 0xf6}, 2, 2, INSN_STEPPED, false},
	    {"mov %fs:0x28,%rax (stack protector)",
	     {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0},
	     9,
	     9,
	     INSN_STEPPED,
	     true},
	    {"lea 0x7d38(%rip),%rax",
	     {0x48, 0x8d, 0x05, 0x38, 0x7d, 0, 0},
	     7,
	     7,
	     INSN_STEPPED,
	     true},
	    {"mov $0xffffffff,%eax", {0xb8, 0xff, 0xff, 0xff, 0xff}, 5, 5, INSN_STEPPED, true},
	    {"nop", {0x90}, 1, 1, INSN_EMULATED, true},
	    {"nopl 0x0(%rax)", {0x0f, 0x1f, 0x40, 0x00}, 4, 4, INSN_EMULATED, true},
	    {"nopl 0x0(%rax,%rax,1): 5 bytes, optimized",
	     {0x0f, 0x1f, 0x44, 0x00, 0x00},
	     5,
	     5,
	     INSN_OPTIMIZED,
	     true},
	    {"cs nopw (a cs prefix: refused)",
	     {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0},
	     10,
	     10,
	     INSN_REFUSED,
	     false},
	    {"lock decl (%rdi)", {0xf0, 0xff, 0x0f}, 3, 0, INSN_REFUSED, false},
	    {"je rel8", {0x74, 0x10}, 2, 0, INSN_EMULATED, false},
	    {"jne rel32", {0x0f, 0x85, 1, 0, 0, 0}, 6, 0, INSN_EMULATED, false},
	    {"data16 jmp (66 prefix: refused)", {0x66, 0xeb, 0x00}, 3, 0, INSN_REFUSED, false},
	    {"call rel32", {0xe8, 0, 0, 0, 0}, 5, 0, INSN_EMULATED, false},
	    {"ret", {0xc3}, 1, 0, INSN_STEPPED, false},
	    {"pxor %xmm0,%xmm0: not decoded", {0x66, 0x0f, 0xef, 0xc0}, 4, 0, INSN_STEPPED, false},
	    {"truncated movabs", {0x48, 0xb8, 0, 0}, 4, 0, INSN_STEPPED, false},
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct insn in;
		int err = insn__decode(t[i].code, t[i].len, VADDR, &in);

		CHECK(t[i].len_want ? !err : err == -EINVAL, "%s: decoded %d", t[i].what, err);
		CHECK_U64(in.len, t[i].len_want, t[i].what);
		CHECK_U64(in.uprobe, t[i].uprobe, t[i].what);
		CHECK_U64(in.skippable, t[i].skippable, t[i].what);
	}
}

static void optimized_only_within_a_page(void)
{
	static const uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	struct insn in;

	insn__decode(nop5, sizeof(nop5), 0x1ffc, &in);
	CHECK_U64(in.uprobe, INSN_EMULATED, "a 5-byte nop across a page is only emulated");
}

static void place(void)
{
	/* ncclCommRegister: movabs $imm64,%rax; push %r13; mov %rdi,%r13 */
	static const uint8_t nccl[] = {0x48, 0xb8, 0,	 0,    0,    0,	   0,	 0,
				       0,    0x80, 0x41, 0x55, 0x49, 0x89, 0xfd, 0xc3};
	/* endbr64; push %rbp; mov %rsp,%rbp; pop %rbp; ret */
	static const uint8_t cet[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
	/* glibc free: test %rdi,%rdi; je +0x10; ... */
	static const uint8_t free_[] = {0x48, 0x85, 0xff, 0x74, 0x10, 0xc3};
	/* sub $8,%rsp first */
	static const uint8_t sub[] = {0x48, 0x83, 0xec, 0x08, 0xc3};
	/* xor %eax,%eax; 1: push %rbp; pop %rbp; jmp 1b: the jump lands after the entry */
	static const uint8_t loop[] = {0x31, 0xc0, 0x55, 0x5d, 0xeb, 0xfc, 0xc3};
	/* xor %eax,%eax; push %rbp; ...; jmp to the entry itself: fine */
	static const uint8_t to_entry[] = {0x31, 0xc0, 0x55, 0x5d, 0xeb, 0xfa, 0xc3};
	/* five skippable instructions before the first emulated one: too far */
	static const uint8_t far[] = {0x31, 0xc0, 0x31, 0xc0, 0x31, 0xc0,
				      0x31, 0xc0, 0x31, 0xc0, 0x55, 0xc3};
	/* the function ends before an emulated instruction */
	static const uint8_t ends[] = {0xf3, 0x0f, 0x1e, 0xfa};
	struct probe_placement p;

	CHECK_U64(insn__place_probe(nccl, sizeof(nccl), VADDR, NULL, &p), 10, "nccl moved");
	CHECK(p.place == PLACE_MOVED && p.moved == 10 && !strcmp(p.first, "movabs"), "nccl %s",
	      p.first);
	CHECK_U64(insn__place_probe(cet, sizeof(cet), VADDR, NULL, &p), 4, "endbr64");
	CHECK_U64(insn__place_probe(free_, sizeof(free_), VADDR, NULL, &p), 3, "onto the je");
	CHECK_U64(insn__place_probe(sub, sizeof(sub), VADDR, NULL, &p), 0, "sub rsp");
	CHECK(p.place == PLACE_SLOW && !strcmp(p.why, "sub cannot be skipped"), "%s", p.why);
	CHECK_U64(insn__place_probe(loop, sizeof(loop), VADDR, NULL, &p), 0, "loop");
	CHECK(p.place == PLACE_SLOW && strstr(p.why, "branch"), "%s", p.why);
	CHECK_U64(insn__place_probe(to_entry, sizeof(to_entry), VADDR, NULL, &p), 2, "to entry");
	CHECK_U64(insn__place_probe(far, sizeof(far), VADDR, NULL, &p), 0, "too far");
	CHECK_U64(p.place, PLACE_SLOW, "too far: slow");
	CHECK_U64(insn__place_probe(ends, sizeof(ends), VADDR, NULL, &p), 0, "ends");
	CHECK_U64(insn__place_probe(nccl, sizeof(nccl), VADDR, "--probe-at-entry", &p), 0, "fixed");
	CHECK(p.place == PLACE_SLOW && !strcmp(p.why, "--probe-at-entry"), "%s", p.why);
	CHECK_U64(insn__place_probe((const uint8_t[]){0x55}, 1, VADDR, NULL, &p), 0, "push");
	CHECK_U64(p.place, PLACE_ENTRY, "push: at entry");
	CHECK_U64(insn__place_probe((const uint8_t[]){0xf0, 0xff, 0x0f}, 3, VADDR, NULL, &p), 0,
		  "lock");
	CHECK_U64(p.place, PLACE_REFUSED, "lock: refused");
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"decode", decode},
	    {"optimized_only_within_a_page", optimized_only_within_a_page},
	    {"place", place},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
