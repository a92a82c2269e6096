// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lib/hmap.h"
#include "symbols/cfi.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "symbols/unwind.h"

/* Why an unwind stopped. */
enum stop {
	STOP_END,  /* the outermost frame: nothing above it */
	STOP_COPY, /* a saved register or frame lay past the copy's end */
	STOP_LOST, /* a rule it cannot evaluate, no progress, or frames to the limit */
};

/* A copy unwound, waiting for its call's record. */
struct held {
	int32_t fp_id;
	uint16_t nr;
	uint16_t bad_from; /* the first frame a frame-pointer step from code without frame
			    * pointers found (nr: none) */
	enum stop stop;
	uint64_t frames[STACK_MAX_FRAMES];
};

struct unwind {
	struct symbolizer *sym;
	struct cfi *cfi;
	unsigned int depth;
	struct hmap held;     /* (pid, tid << 3 | depth) -> struct held * */
	struct hmap interned; /* (pid, hash of a stack) -> its id */
	int32_t next_id;
	struct unwind_stats st;
};

int unwind__new(struct symbolizer *sym, unsigned int depth, struct unwind **out)
{
	struct unwind *u = calloc(1, sizeof(*u));

	if (!u || cfi__new(&u->cfi)) {
		free(u);
		return -ENOMEM;
	}
	u->sym = sym;
	u->depth = depth;
	u->next_id = GL_STACK_UNWOUND;
	*out = u;
	return 0;
}

void unwind__free(struct unwind *u)
{
	const struct hmap_slot *sl;
	size_t i = 0;

	if (!u)
		return;
	while (hmap__next(&u->held, &i, &sl))
		free((void *)(uintptr_t)sl->val);
	hmap__free(&u->held);
	hmap__free(&u->interned);
	cfi__free(u->cfi);
	free(u);
}

struct copy {
	uint64_t sp;
	const uint8_t *data;
	size_t len;
	const struct gl_ustack_rec *r; /* the open calls' return addresses */
	unsigned int nr_ret;
};

static int copy_read(void *ctx, uint64_t addr, uint64_t *val)
{
	const struct copy *c = ctx;
	unsigned int k;

	if (addr < c->sp || addr - c->sp > c->len || c->len - (addr - c->sp) < 8)
		return -EFAULT;
	/* An open traced call's return address, where the kernel's trampoline now is. */
	for (k = 0; k < c->nr_ret; k++)
		if (c->r->ret_at[k] == addr && c->r->ret[k]) {
			*val = c->r->ret[k];
			return 0;
		}
	memcpy(val, c->data + (addr - c->sp), 8);
	return 0;
}

/*
 * A frame-pointer step, for code no CFI covers: at the probed function's first instruction
 * the return address is at the stack pointer; in a caller, the frame pointer leads to the
 * saved frame pointer and the return address above it. 0, -ENODATA at the end of the
 * chain, -EFAULT past the copy, -EINVAL for a frame pointer that cannot be one.
 */
static int fp_step(struct cfi_regs *r, bool exact, const struct copy *c)
{
	uint64_t bp = r->v[CFI_RBP], ra, next_bp;
	int err;

	if (exact) {
		err = copy_read((void *)c, r->v[CFI_RSP], &ra);
		if (err)
			return err;
		r->v[CFI_RIP] = ra;
		r->v[CFI_RSP] += 8;
		return 0;
	}
	if (!(r->known & 1u << CFI_RBP))
		return -EINVAL;
	/* The outermost frame of a frame-pointer chain has none before it. */
	if (!bp)
		return -ENODATA;
	if (bp < r->v[CFI_RSP])
		return -EINVAL;
	err = copy_read((void *)c, bp, &next_bp);
	if (!err)
		err = copy_read((void *)c, bp + 8, &ra);
	if (err)
		return err;
	r->v[CFI_RIP] = ra;
	r->v[CFI_RSP] = bp + 16;
	r->v[CFI_RBP] = next_bp;
	r->known = 1u << CFI_RIP | 1u << CFI_RSP | 1u << CFI_RBP;
	return 0;
}

static void unwind_copy(struct unwind *u, pid_t pid, const struct gl_ustack_rec *r, struct held *h)
{
	struct copy c = {.sp = r->sp,
			 .data = r->data,
			 .len = r->len,
			 .r = r,
			 .nr_ret = r->hdr.depth < GL_MAX_DEPTH ? r->hdr.depth : GL_MAX_DEPTH - 1};
	struct cfi_regs regs = {.known = 1u << CFI_RIP | 1u << CFI_RSP | 1u << CFI_RBP};
	bool exact = true, at_ip = r->hdr.flags & GL_USTACK_AT_IP;

	regs.v[CFI_RIP] = r->ip;
	regs.v[CFI_RSP] = r->sp;
	regs.v[CFI_RBP] = r->bp;
	h->nr = 0;
	h->bad_from = STACK_MAX_FRAMES;
	h->stop = STOP_LOST;
	/* A USDT inside a function: its address is the stack's first frame (the call site its
	 * record names), and only CFI knows where that function keeps its return address. */
	if (at_ip)
		h->frames[h->nr++] = r->ip;
	while (h->nr < STACK_MAX_FRAMES) {
		uint64_t pc = regs.v[CFI_RIP], sp = regs.v[CFI_RSP], bias;
		struct elf_obj *elf = symbolizer__object(u->sym, pid, pc, &bias);
		int err = elf ? cfi__step(u->cfi, elf, bias, exact, &regs, copy_read, &c) : -ENOENT;
		bool by_fp = err == -ENOENT;

		if (by_fp)
			err = fp_step(&regs, exact && !at_ip, &c);
		if (err == -ENODATA) {
			h->stop = STOP_END;
			return;
		}
		if (err == -EFAULT) {
			h->stop = STOP_COPY;
			return;
		}
		/* A frame above is at a higher address: anything else is a walk gone astray. */
		if (err || regs.v[CFI_RSP] <= sp)
			return;
		if (!regs.v[CFI_RIP]) {
			h->stop = STOP_END;
			return;
		}
		/* A frame pointer from code that keeps none leads anywhere. */
		if (by_fp && !exact && h->bad_from == STACK_MAX_FRAMES &&
		    !symbolizer__frame_fp(u->sym, pid, pc))
			h->bad_from = h->nr;
		h->frames[h->nr++] = regs.v[CFI_RIP];
		exact = false;
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t held_key(const struct gl_hdr *h)
{
	return (uint64_t)h->tid << 3 | (h->depth & 7);
}

int unwind__copy(struct unwind *u, const struct gl_hdr *h, size_t len)
{
	const struct gl_ustack_rec *r = (const struct gl_ustack_rec *)h;
	struct held *hd;
	uint64_t *at, t0;

	if (len < sizeof(*r) || h->size < sizeof(*r) || r->len > h->size - sizeof(*r))
		return -EINVAL;
	u->st.copies++;
	at = hmap__get(&u->held, h->pid, held_key(h));
	hd = at ? (struct held *)(uintptr_t)*at : malloc(sizeof(*hd));
	if (!hd)
		return -ENOMEM;
	if (!at && hmap__put(&u->held, h->pid, held_key(h), (uintptr_t)hd)) {
		free(hd);
		return -ENOMEM;
	}
	hd->fp_id = r->stack_id;
	t0 = now_ns();
	unwind_copy(u, (pid_t)h->pid, r, hd);
	u->st.unwind_ns += now_ns() - t0;
	return 0;
}

/*
 * The frames a copy's unwind did not reach, from the frame-pointer walk: where it shows the
 * last unwound frame, what it found above it follows, judged as the kernel's walk is.
 */
static void join_fp(struct unwind *u, pid_t pid, const struct ustack *fp, uint64_t *v, size_t *n,
		    unsigned int *flags, unsigned int *nofp)
{
	size_t j, k;

	for (j = fp->nr; j-- > 0;)
		if (fp->frames[j] == v[*n - 1])
			break;
	if (j == (size_t)-1 || j + 1 >= fp->nr) {
		*flags |= STACK_TRUNCATED;
		return;
	}
	for (k = j; k + 1 < fp->nr && *n < STACK_MAX_FRAMES; k++) {
		if (!(*flags & STACK_NO_FP) && !symbolizer__frame_fp(u->sym, pid, fp->frames[k])) {
			*flags |= STACK_NO_FP;
			*nofp = (unsigned int)*n;
		}
		v[(*n)++] = fp->frames[k + 1];
	}
	*flags |= fp->flags & STACK_TRUNCATED;
}

/* One id per distinct stack of a process. */
static int intern(struct unwind *u, pid_t pid, uint64_t caller, const uint64_t *v, size_t n,
		  unsigned int flags, unsigned int nofp, int32_t *id)
{
	uint64_t h = hmap_hash2(caller, flags | (uint64_t)nofp << 16), *at;
	const struct ustack *first;
	size_t i;
	int err;

	for (i = 0; i < n; i++)
		h = hmap_hash2(h, v[i]);
	for (;; h++) {
		at = hmap__get(&u->interned, (uint32_t)pid, h);
		if (!at)
			break;
		first = symbolizer__stack(u->sym, pid, (int32_t)*at, caller);
		if (first && first->nr == n && first->flags == flags && first->nofp_from == nofp &&
		    !memcmp(first->frames, v, n * sizeof(v[0]))) {
			*id = (int32_t)*at;
			return 0;
		}
	}
	if (u->next_id == GL_STACK_PY)
		return -ENOSPC;
	*id = u->next_id;
	err = symbolizer__set_stack(u->sym, pid, *id, caller, v, n, flags, nofp);
	if (!err)
		err = hmap__put(&u->interned, (uint32_t)pid, h, (uint32_t)*id);
	if (!err)
		err = symbolizer__resolve(u->sym, pid, v, n);
	if (!err)
		u->next_id++;
	return err;
}

int unwind__call(struct unwind *u, const struct gl_call_rec *r, int32_t *stack_id)
{
	uint64_t *at = hmap__get(&u->held, r->hdr.pid, held_key(&r->hdr)), v[STACK_MAX_FRAMES];
	pid_t pid = (pid_t)r->hdr.pid;
	const struct ustack *fp = NULL;
	unsigned int flags = 0, nofp = 0;
	struct held *h;
	size_t n;
	int err;

	*stack_id = r->stack_id;
	if (!at) {
		u->st.missing += r->stack_id >= 0;
		return 0;
	}
	h = (struct held *)(uintptr_t)*at;
	hmap__del(&u->held, r->hdr.pid, held_key(&r->hdr));
	/* Another call's copy (its record lost), or one with no frame at all. */
	if (h->fp_id != r->stack_id || !h->nr || h->frames[0] != r->caller)
		goto out;
	/*
	 * An unwind that reached the outermost frame is the stack. One the copy's end stopped
	 * yields to a frame-pointer walk judged sound that went further: that walk is not
	 * bounded by the copy, and a sound walk finds what CFI does.
	 */
	if (r->stack_id >= 0)
		fp = symbolizer__stack(u->sym, pid, r->stack_id, r->caller);
	if (h->stop != STOP_END && fp && !(fp->flags & STACK_NO_FP) && fp->nr > h->nr)
		goto out;
	n = h->nr;
	memcpy(v, h->frames, n * sizeof(v[0]));
	if (h->bad_from < n) {
		flags |= STACK_NO_FP;
		nofp = h->bad_from;
	}
	if (h->stop != STOP_END) {
		u->st.copy_ended++;
		if (fp)
			join_fp(u, pid, fp, v, &n, &flags, &nofp);
		else
			flags |= STACK_TRUNCATED;
	}
	if (n > u->depth) {
		n = u->depth;
		flags |= STACK_TRUNCATED;
		if (nofp >= n)
			flags &= ~STACK_NO_FP;
	}
	if (!(flags & STACK_NO_FP))
		nofp = 0;
	err = intern(u, pid, r->caller, v, n, flags, nofp, stack_id);
	if (err) {
		*stack_id = r->stack_id;
		free(h);
		return err == -ENOSPC ? 0 : err;
	}
	u->st.used++;
out:
	free(h);
	return 0;
}

void unwind__stats(const struct unwind *u, struct unwind_stats *st)
{
	*st = u->st;
}
