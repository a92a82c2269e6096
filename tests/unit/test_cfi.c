// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Call frame information (symbols/cfi.c): DWARF expressions of CFI as compilers and linkers
 * write them (the PLT's CFA, a register saved at an offset from the CFA, a value rule), what
 * is refused, and steps through this test's own frames: registers and a copy of the stack
 * taken inside a chain of calls, unwound with this binary's .eh_frame to the return
 * addresses the calls themselves saw.
 */
#include <dwarf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "check.h"
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

static struct cfi_regs regs_at(uint64_t rip, uint64_t rsp, uint64_t rbp)
{
	struct cfi_regs r = {.known = 1u << CFI_RIP | 1u << CFI_RSP | 1u << CFI_RBP};

	r.v[CFI_RIP] = rip;
	r.v[CFI_RSP] = rsp;
	r.v[CFI_RBP] = rbp;
	return r;
}

static void expressions(void)
{
	/* ld's PLT: rsp + 8 + ((rip & 15) >= 11) * 8 */
	Dwarf_Op plt[] = {{.atom = DW_OP_breg7, .number = 8},
			  {.atom = DW_OP_breg16},
			  {.atom = DW_OP_lit15},
			  {.atom = DW_OP_and},
			  {.atom = DW_OP_lit11},
			  {.atom = DW_OP_ge},
			  {.atom = DW_OP_lit3},
			  {.atom = DW_OP_shl},
			  {.atom = DW_OP_plus}};
	/* offset(-16) from the CFA, as libdw gives it: an address */
	Dwarf_Op saved[] = {{.atom = DW_OP_call_frame_cfa},
			    {.atom = DW_OP_consts, .number = (Dwarf_Word)-16},
			    {.atom = DW_OP_plus}};
	Dwarf_Op val[] = {{.atom = DW_OP_breg6, .number = 16}, {.atom = DW_OP_stack_value}};
	Dwarf_Op early[] = {{.atom = DW_OP_stack_value}, {.atom = DW_OP_lit1}};
	Dwarf_Op r12[] = {{.atom = DW_OP_breg12, .number = 8}};
	Dwarf_Op deref[] = {{.atom = DW_OP_breg7, .number = 4096}, {.atom = DW_OP_deref}};
	uint64_t stack[4] = {1, 2, 3, 4}, out = 0;
	struct copy c = {
	    .sp = 0x7f0000001000, .data = (const uint8_t *)stack, .len = sizeof(stack)};
	struct cfi_regs r = regs_at(0x401000 + 12, c.sp, 0x7f0000002000);
	bool is_value = true;

	CHECK(!cfi__eval(plt, 9, &r, false, 0, copy_read, &c, &out, &is_value), "plt");
	CHECK_U64(out, c.sp + 16, "PLT CFA at rip & 15 = 12");
	CHECK(!is_value, "an expression, not a value rule");
	r.v[CFI_RIP] = 0x401000 + 5;
	CHECK(!cfi__eval(plt, 9, &r, false, 0, copy_read, &c, &out, &is_value), "plt");
	CHECK_U64(out, c.sp + 8, "PLT CFA at rip & 15 = 5");
	CHECK(!cfi__eval(saved, 3, &r, true, c.sp + 32, copy_read, &c, &out, &is_value), "saved");
	CHECK_U64(out, c.sp + 16, "saved at CFA - 16");
	CHECK(!cfi__eval(val, 2, &r, false, 0, copy_read, &c, &out, &is_value) && is_value,
	      "value rule");
	CHECK_U64(out, 0x7f0000002010, "rbp + 16");
	CHECK(cfi__eval(saved, 3, &r, false, 0, copy_read, &c, &out, &is_value) == -EINVAL,
	      "no CFA yet");
	CHECK(cfi__eval(early, 2, &r, false, 0, copy_read, &c, &out, &is_value) == -EINVAL,
	      "DW_OP_stack_value before the end");
	CHECK(cfi__eval(r12, 1, &r, false, 0, copy_read, &c, &out, &is_value) == -EINVAL,
	      "a register BPF does not send");
	CHECK(cfi__eval(deref, 2, &r, false, 0, copy_read, &c, &out, &is_value) == -EFAULT,
	      "a read past the copy");
	CHECK(cfi__eval(plt, 0, &r, false, 0, copy_read, &c, &out, &is_value) == -EINVAL, "empty");
}

/* What the chain's calls saw: the registers inside leaf and the return addresses. */
static struct {
	uint64_t rip, rsp, rbp;
	uint64_t ra[3];
	uint8_t stack[16384];
	size_t len;
} seen;

static uint64_t stack_top;

/* As BPF copies it: redzones and all, which ASan would refuse a memcpy of. */
__attribute__((no_sanitize_address)) static void copy_stack(uint64_t from, size_t len)
{
	const volatile uint8_t *p = (const volatile uint8_t *)from;
	size_t i;

	for (i = 0; i < len; i++)
		seen.stack[i] = p[i];
}

__attribute__((noinline)) static void leaf(void)
{
	uint64_t rip, rsp, rbp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp));
	seen.rip = rip;
	seen.rsp = rsp;
	seen.rbp = rbp;
	seen.ra[0] = (uint64_t)__builtin_return_address(0);
	seen.len = stack_top - rsp < sizeof(seen.stack) ? stack_top - rsp : sizeof(seen.stack);
	copy_stack(rsp, seen.len);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void middle(void)
{
	leaf();
	seen.ra[1] = (uint64_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void outer(void)
{
	middle();
	seen.ra[2] = (uint64_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static void *chain(void *arg)
{
	pthread_attr_t a;
	void *base;
	size_t size;

	(void)arg;
	pthread_getattr_np(pthread_self(), &a);
	pthread_attr_getstack(&a, &base, &size);
	pthread_attr_destroy(&a);
	stack_top = (uint64_t)base + size;
	outer();
	return NULL;
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	*(uint64_t *)ctx = info->dlpi_addr;
	return 1;
}

static void steps_through_own_frames(void)
{
	struct elf_obj *self = NULL;
	struct cfi *cfi = NULL;
	struct cfi_regs r;
	struct copy c;
	uint64_t bias = 0;
	pthread_t t;
	int i;

	if (!CHECK(!elf_obj__open("/proc/self/exe", &self) && !cfi__new(&cfi), "open"))
		goto out;
	dl_iterate_phdr(first_bias, &bias);
	pthread_create(&t, NULL, chain, NULL);
	pthread_join(t, NULL);
	r = regs_at(seen.rip, seen.rsp, seen.rbp);
	c = (struct copy){.sp = seen.rsp, .data = seen.stack, .len = seen.len};
	for (i = 0; i < 3; i++) {
		int err = cfi__step(cfi, self, bias, i == 0, &r, copy_read, &c);

		if (!CHECK(!err, "step %d: %d", i, err))
			break;
		CHECK(r.v[CFI_RIP] == seen.ra[i], "step %d: 0x%" PRIx64 ", the call saw 0x%" PRIx64,
		      i, r.v[CFI_RIP], seen.ra[i]);
		CHECK(r.known & 1u << CFI_RSP, "the caller's stack pointer");
	}
	/* code of no object's CFI */
	r = regs_at(8, seen.rsp, 0);
	CHECK(cfi__step(cfi, self, bias, true, &r, copy_read, &c) == -ENOENT, "no CFI there");
	/* a copy that ends before the return address */
	r = regs_at(seen.rip, seen.rsp, seen.rbp);
	c.len = 8;
	CHECK(cfi__step(cfi, self, bias, true, &r, copy_read, &c) == -EFAULT, "past the copy");
out:
	cfi__free(cfi);
	elf_obj__free(self);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"expressions", expressions},
	    {"steps_through_own_frames", steps_through_own_frames},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
