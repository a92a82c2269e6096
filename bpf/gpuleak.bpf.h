/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* BPF-only helpers: the per-architecture parts of reading a call's arguments and caller. */
#ifndef GPULEAK_BPF_H
#define GPULEAK_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#if defined(__TARGET_ARCH_x86)
/*
 * x86-64 SysV: the call instruction pushed the return address, so at the first instruction
 * of the callee it sits at [sp]; `ret` pops it, so the return probe sees sp + 8. Arguments
 * 7 and 8 are on the stack above the return address.
 */
#define GL_RET_SP_TO_ENTRY_SP(sp) ((sp)-8)
#define GL_NR_REG_ARGS		  6

static __always_inline __u64 gl_entry_caller(struct pt_regs *ctx)
{
	__u64 ra = 0;

	bpf_probe_read_user(&ra, sizeof(ra), (void *)PT_REGS_SP(ctx));
	return ra;
}

static __always_inline __u64 gl_stack_arg(struct pt_regs *ctx, int n)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8 * (n - GL_NR_REG_ARGS)));
	return v;
}

/*
 * Address of struct argument n passed by value. A struct larger than 16 bytes goes in memory,
 * in the stack-argument area above the return address: this assumes it is the first memory
 * argument, true of every webgpu.h function taking a callback-info struct (all their other
 * arguments fit in registers).
 */
static __always_inline __u64 gl_byval_addr(struct pt_regs *ctx, int n)
{
	(void)n;
	return PT_REGS_SP(ctx) + 8;
}

/* struct pt_regs's words: r15 ... ss, 21 of them */
// clang-format off
#define GL_CTX_CASES \
	GL_CTX_CASE(0) GL_CTX_CASE(1) GL_CTX_CASE(2) GL_CTX_CASE(3) GL_CTX_CASE(4) GL_CTX_CASE(5) \
	GL_CTX_CASE(6) GL_CTX_CASE(7) GL_CTX_CASE(8) GL_CTX_CASE(9) GL_CTX_CASE(10) GL_CTX_CASE(11) \
	GL_CTX_CASE(12) GL_CTX_CASE(13) GL_CTX_CASE(14) GL_CTX_CASE(15) GL_CTX_CASE(16) GL_CTX_CASE(17) \
	GL_CTX_CASE(18) GL_CTX_CASE(19) GL_CTX_CASE(20)
// clang-format on
#elif defined(__TARGET_ARCH_arm64)
/* AAPCS64: the return address is in x30 and sp does not move across `ret`. */
#define GL_RET_SP_TO_ENTRY_SP(sp) (sp)
#define GL_NR_REG_ARGS		  8

static __always_inline __u64 gl_entry_caller(struct pt_regs *ctx)
{
	return PT_REGS_RET(ctx);
}

static __always_inline __u64 gl_stack_arg(struct pt_regs *ctx, int n)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v),
			    (void *)(PT_REGS_SP(ctx) + 8 * (n - GL_NR_REG_ARGS - 1)));
	return v;
}

static __always_inline __u64 gl_arg(struct pt_regs *ctx, int n);

/* AAPCS64: a composite larger than 16 bytes is copied by the caller and passed by address. */
static __always_inline __u64 gl_byval_addr(struct pt_regs *ctx, int n)
{
	return gl_arg(ctx, n);
}

/* struct pt_regs's words: regs[31], sp, pc, pstate */
// clang-format off
#define GL_CTX_CASES \
	GL_CTX_CASE(0) GL_CTX_CASE(1) GL_CTX_CASE(2) GL_CTX_CASE(3) GL_CTX_CASE(4) GL_CTX_CASE(5) \
	GL_CTX_CASE(6) GL_CTX_CASE(7) GL_CTX_CASE(8) GL_CTX_CASE(9) GL_CTX_CASE(10) GL_CTX_CASE(11) \
	GL_CTX_CASE(12) GL_CTX_CASE(13) GL_CTX_CASE(14) GL_CTX_CASE(15) GL_CTX_CASE(16) GL_CTX_CASE(17) \
	GL_CTX_CASE(18) GL_CTX_CASE(19) GL_CTX_CASE(20) GL_CTX_CASE(21) GL_CTX_CASE(22) GL_CTX_CASE(23) \
	GL_CTX_CASE(24) GL_CTX_CASE(25) GL_CTX_CASE(26) GL_CTX_CASE(27) GL_CTX_CASE(28) GL_CTX_CASE(29) \
	GL_CTX_CASE(30) GL_CTX_CASE(31) GL_CTX_CASE(32) GL_CTX_CASE(33)
// clang-format on
#else
#error "gpuleak: unsupported BPF target architecture"
#endif

/*
 * The call site, in a return probe: before running return handlers the kernel puts the
 * caller's return address back into the instruction pointer (uprobes' handle_trampoline), so
 * it costs no read of the stack at entry. Also right for a call made as a tail call from
 * another probed function, where the stack at entry holds the return trampoline instead.
 */
static __always_inline __u64 gl_return_caller(struct pt_regs *ctx)
{
	return PT_REGS_IP(ctx);
}

/* Argument n (1-based) at function entry; 0 when the position is unused. */
static __always_inline __u64 gl_arg(struct pt_regs *ctx, int n)
{
	switch (n) {
	case 0:
		return 0;
	case 1:
		return PT_REGS_PARM1(ctx);
	case 2:
		return PT_REGS_PARM2(ctx);
	case 3:
		return PT_REGS_PARM3(ctx);
	case 4:
		return PT_REGS_PARM4(ctx);
	case 5:
		return PT_REGS_PARM5(ctx);
	case 6:
		return PT_REGS_PARM6(ctx);
	default:
		return gl_stack_arg(ctx, n);
	}
}

/*
 * Argument n (1-based, its place in the C prototype) of a call whose spec may pass a struct
 * by value (GL_SPEC_DESC_BYVAL, at arg_desc). On x86-64 a struct over 16 bytes goes in
 * memory and takes no register, so every later argument sits one register earlier
 * (cudaIpcOpenMemHandle's flags are in %rsi); AAPCS64 passes it by address in its own
 * register, where the C place is the register's.
 */
static __always_inline __u64 gl_spec_arg(struct pt_regs *ctx, const struct gl_api_spec *s, int n)
{
#if defined(__TARGET_ARCH_x86)
	if ((s->flags & GL_SPEC_DESC_BYVAL) && s->arg_desc && n > s->arg_desc)
		n--;
#endif
	return gl_arg(ctx, n);
}

/*
 * The word at byte off of the trap's registers (struct pt_regs; a USDT argument's reg_off)
 * into *v: 0, or -1 past them. One load at a constant offset a case: the verifier refuses a
 * load at a variable offset into the context, and bpf_probe_read_kernel, libbpf's way, is a
 * helper call (~30 ns on this project's VM). Each load is asm because the compiler would
 * otherwise merge the cases into one load at a computed offset, which the verifier refuses.
 */
#define GL_CTX_CASE(i)                                                                             \
	case (i)*8:                                                                                \
		asm volatile("%0 = *(u64 *)(%1 + %2)" : "=r"(w) : "r"(ctx), "i"((i)*8));           \
		break;

static __always_inline int gl_ctx_word(void *ctx, int off, unsigned long *v)
{
	unsigned long w;

	switch (off) {
		GL_CTX_CASES
	default:
		return -1;
	}
	*v = w;
	return 0;
}

#endif /* GPULEAK_BPF_H */
