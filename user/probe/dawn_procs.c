// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/vec.h"
#include "probe/dawn_procs.h"
#include "probe/elf_image.h"
#include "probe/elf_obj.h"

/* Longest entry-point name taken: Dawn's longest is ~60 bytes. */
#define NAME_MAX_LEN 120
/* Instructions run from one start; the initializer of a 271-entry table runs ~1400. */
#define EMU_MAX_INSNS 200000
/*
 * Instructions run in all: starts may sit inside one long straight line (a crafted object),
 * and the work must stay linear in the object, not in starts x code.
 */
#define EMU_TOTAL_INSNS (16 * EMU_MAX_INSNS)
/* A table has at least this many entries (Dawn's have 150-300). */
#define TABLE_MIN 8

/*
 * ---- capstone, opened on first use ----
 * Linked, its 77,000 relocations and the pages they write cost every gpuleak process ~7 ms
 * before main() on a VM (`make bench`, attach: command start to tracing), report and
 * watch included; only a Dawn object without symbols needs it. The soname is the one this
 * build's headers describe.
 */
#define CS_STR_(x) #x
#define CS_STR(x)  CS_STR_(x)
#define CS_SONAME  "libcapstone.so." CS_STR(CS_API_MAJOR)

static struct {
	cs_err (*open)(cs_arch arch, cs_mode mode, csh *handle);
	cs_err (*option)(csh handle, cs_opt_type type, size_t value);
	cs_insn *(*malloc)(csh handle);
	bool (*disasm_iter)(csh handle, const uint8_t **code, size_t *size, uint64_t *address,
			    cs_insn *insn);
	cs_err (*regs_access)(csh handle, const cs_insn *insn, cs_regs regs_read,
			      uint8_t *regs_read_count, cs_regs regs_write,
			      uint8_t *regs_write_count);
	void (*free)(cs_insn *insn, size_t count);
	cs_err (*close)(csh *handle);
	char why[160]; /* "": loaded */
} capstone;
static pthread_once_t capstone_once = PTHREAD_ONCE_INIT;

static void capstone_open(void)
{
	void *h = dlopen(CS_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *miss = NULL;

	if (!h) {
		snprintf(capstone.why, sizeof(capstone.why), "%s", dlerror());
		return;
	}
#define CS_SYM(f)                                                                                  \
	do {                                                                                       \
		*(void **)&capstone.f = dlsym(h, "cs_" #f);                                        \
		if (!capstone.f && !miss)                                                          \
			miss = "cs_" #f;                                                           \
	} while (0)
	CS_SYM(open);
	CS_SYM(option);
	CS_SYM(malloc);
	CS_SYM(disasm_iter);
	CS_SYM(regs_access);
	CS_SYM(free);
	CS_SYM(close);
#undef CS_SYM
	if (miss)
		snprintf(capstone.why, sizeof(capstone.why), "%s has no %s", CS_SONAME, miss);
}

/* ---- the names ---- */

struct name {
	uint64_t vaddr;
	const char *s;
	uint32_t len;
};

struct rec {
	const struct elf_image *im;
	struct name *names; /* sorted by vaddr */
	size_t nr_names, cap_names;
	struct store *st; /* what initializers stored, in order */
	size_t nr_st, cap_st;
	unsigned int nr_starts;
	unsigned long nr_insns;
	int err;
};

static bool name_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/*
 * The next "wgpu[A-Z][A-Za-z0-9_]*\0" in [q, end), also inside a longer string (a linker may
 * merge a name into the tail of another): its start, *e at its NUL; NULL when none.
 */
static const uint8_t *next_name(const uint8_t *q, const uint8_t *end, const uint8_t **e)
{
	/* memchr then a compare: several times glibc's memmem on a 4-byte needle, and this scan
	 * is what every large object without Dawn pays. */
	for (; (q = memchr(q, 'w', end - q)); q = *e) {
		*e = q + 1;
		if (end - q < 6 || memcmp(q + 1, "gpu", 3) || q[4] < 'A' || q[4] > 'Z')
			continue;
		*e = q + 4;
		while (*e < end && name_char(**e) && *e - q <= NAME_MAX_LEN)
			(*e)++;
		if (*e < end && !**e)
			return q;
	}
	return NULL;
}

/* Every name of a read-only segment. */
static void scan_names(uint64_t vaddr, const uint8_t *p, size_t len, void *ctx)
{
	struct rec *r = ctx;
	const uint8_t *q = p, *end = p + len, *e;

	while (!r->err && (q = next_name(q, end, &e))) {
		if (vec_grow((void **)&r->names, &r->cap_names, r->nr_names, sizeof(*r->names))) {
			r->err = -ENOMEM;
			return;
		}
		r->names[r->nr_names++] =
		    (struct name){vaddr + (q - p), (const char *)q, (uint32_t)(e - q)};
		q = e;
	}
}

/*
 * The pre-filter: whether the object's read-only data has a table's worth of names, read a
 * window at a time (elf_obj.h). What every object without wgpu* symbols pays (a 540 MB
 * libcublasLt: its 46 MB .rodata, not the whole file); only one that passes is read whole.
 */
static int count_names(uint64_t off, const uint8_t *p, size_t len, size_t own, void *ctx)
{
	unsigned int *n = ctx;
	const uint8_t *q = p, *e;

	(void)off;
	while ((q = next_name(q, p + len, &e)) && q < p + own) {
		if (++*n >= TABLE_MIN)
			return 1;
		q = e;
	}
	return 0;
}

static const struct name *name_at(const struct rec *r, uint64_t vaddr)
{
	size_t lo = VEC_BOUND(r->names, r->nr_names, vaddr, vaddr, false);

	return lo < r->nr_names && r->names[lo].vaddr == vaddr ? &r->names[lo] : NULL;
}

/* ---- a straight-line emulator for initializer code ---- */

enum val_how {
	VAL_IMM = 0,
	VAL_LEA,
	VAL_LOAD, /* a relocated word loaded from memory: a GOT slot */
};

struct val {
	bool known;
	uint8_t how; /* enum val_how */
	uint64_t v;
};

struct store {
	uint64_t addr;
	struct val v;
	uint8_t width;
	size_t seq; /* program order: the last store to an address wins */
};

struct emu {
	struct rec *r;
	struct val gpr[16];
	struct val xmm[16][2]; /* the two 64-bit lanes */
};

static const x86_reg gpr64[16] = {
    X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX, X86_REG_RSP, X86_REG_RBP,
    X86_REG_RSI, X86_REG_RDI, X86_REG_R8,  X86_REG_R9,	X86_REG_R10, X86_REG_R11,
    X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15,
};
static const x86_reg gpr32[16] = {
    X86_REG_EAX,  X86_REG_ECX,	X86_REG_EDX,  X86_REG_EBX,  X86_REG_ESP,  X86_REG_EBP,
    X86_REG_ESI,  X86_REG_EDI,	X86_REG_R8D,  X86_REG_R9D,  X86_REG_R10D, X86_REG_R11D,
    X86_REG_R12D, X86_REG_R13D, X86_REG_R14D, X86_REG_R15D,
};

/* A general register's index, its width in *bytes (8 or 4); -1 for any other register. */
static int gpr(x86_reg reg, unsigned int *bytes)
{
	int i;

	for (i = 0; i < 16; i++) {
		if (reg == gpr64[i] || reg == gpr32[i]) {
			*bytes = reg == gpr64[i] ? 8 : 4;
			return i;
		}
	}
	return -1;
}

static int xmm(x86_reg reg)
{
	return reg >= X86_REG_XMM0 && reg <= X86_REG_XMM15 ? (int)(reg - X86_REG_XMM0) : -1;
}

static const struct val unknown;

static struct val known(uint64_t v, enum val_how how)
{
	return (struct val){.known = true, .how = how, .v = v};
}

/* What a register write leaves: a 32-bit write zero-extends. */
static void set_gpr(struct emu *e, x86_reg reg, struct val v)
{
	unsigned int bytes = 0;
	int i = gpr(reg, &bytes);

	if (i < 0)
		return;
	if (bytes == 4 && v.known)
		v.v &= 0xffffffffu;
	e->gpr[i] = v;
}

static struct val get_gpr(const struct emu *e, x86_reg reg)
{
	unsigned int bytes = 0;
	int i = gpr(reg, &bytes);
	struct val v;

	if (i < 0)
		return unknown;
	v = e->gpr[i];
	if (bytes == 4 && v.known)
		v.v &= 0xffffffffu;
	return v;
}

/* The address a memory operand names, when known: rip-relative, or a known base. */
static bool mem_addr(const struct emu *e, const cs_insn *in, const cs_x86_op *op, uint64_t *addr)
{
	struct val b;

	if (op->mem.index != X86_REG_INVALID || op->mem.segment != X86_REG_INVALID)
		return false;
	if (op->mem.base == X86_REG_RIP) {
		*addr = in->address + in->size + op->mem.disp;
		return true;
	}
	b = get_gpr(e, op->mem.base);
	if (!b.known || op->mem.base == X86_REG_RSP || op->mem.base == X86_REG_RBP)
		return false;
	*addr = b.v + op->mem.disp;
	return true;
}

static struct val load64(const struct emu *e, uint64_t addr)
{
	enum elf_word_src src;
	uint64_t v;

	if (!elf_image__word(e->r->im, addr, &v, &src))
		return unknown;
	return known(v, VAL_LOAD);
}

static void store(struct emu *e, uint64_t addr, struct val v, unsigned int width)
{
	struct rec *r = e->r;

	/* An unknown value is stored too: it hides what an earlier store put there. */
	if (vec_grow((void **)&r->st, &r->cap_st, r->nr_st, sizeof(*r->st))) {
		r->err = -ENOMEM;
		return;
	}
	r->st[r->nr_st] =
	    (struct store){.addr = addr, .v = v, .width = (uint8_t)width, .seq = r->nr_st};
	r->nr_st++;
}

/* A call: the registers the System V ABI lets the callee change. */
static void clobber(struct emu *e)
{
	static const int caller_saved[] = {0, 1, 2, 6, 7, 8, 9, 10, 11};
	size_t i;

	for (i = 0; i < sizeof(caller_saved) / sizeof(caller_saved[0]); i++)
		e->gpr[caller_saved[i]] = unknown;
	memset(e->xmm, 0, sizeof(e->xmm));
}

/* Registers an instruction not modelled writes become unknown; stores it makes too. */
static void forget(struct emu *e, csh cs, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd, nwr, i;
	const cs_x86 *x = &in->detail->x86;
	uint64_t a;

	if (!capstone.regs_access(cs, in, rd, &nrd, wr, &nwr)) {
		for (i = 0; i < nwr; i++) {
			int k = xmm(wr[i]);

			if (k >= 0)
				e->xmm[k][0] = e->xmm[k][1] = unknown;
			else
				set_gpr(e, wr[i], unknown);
		}
	} else {
		memset(e->gpr, 0, sizeof(e->gpr));
		memset(e->xmm, 0, sizeof(e->xmm));
	}
	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && (x->operands[i].access & CS_AC_WRITE) &&
		    mem_addr(e, in, &x->operands[i], &a))
			store(e, a, unknown, x->operands[i].size);
}

/* mov and movabs: register and immediate moves, loads and stores. */
static void emu_mov(struct emu *e, const cs_insn *in)
{
	const cs_x86_op *d = &in->detail->x86.operands[0], *s = &in->detail->x86.operands[1];
	struct val v = unknown;
	uint64_t a;

	if (s->type == X86_OP_IMM)
		v = known((uint64_t)s->imm, VAL_IMM);
	else if (s->type == X86_OP_REG)
		v = get_gpr(e, s->reg);
	else if (s->type == X86_OP_MEM && s->size == 8 && mem_addr(e, in, s, &a))
		v = load64(e, a);
	if (d->type == X86_OP_REG) {
		set_gpr(e, d->reg, d->size >= 4 ? v : unknown);
	} else if (d->type == X86_OP_MEM && mem_addr(e, in, d, &a)) {
		if (v.known && d->size < 8)
			v.v &= (1ULL << (8 * d->size)) - 1;
		store(e, a, v, d->size);
	}
}

/* SSE moves a vectorized initializer pairs its stores with: movq/movd, punpcklqdq, movups. */
static bool emu_sse(struct emu *e, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *d = &x->operands[0], *s = &x->operands[1];
	int dx = x->op_count == 2 && d->type == X86_OP_REG ? xmm(d->reg) : -1;
	int sx = x->op_count == 2 && s->type == X86_OP_REG ? xmm(s->reg) : -1;
	uint64_t a;

	if (x->op_count != 2)
		return false;
	switch (in->id) {
	case X86_INS_MOVQ:
	case X86_INS_MOVD:
		if (dx >= 0) {
			if (s->type == X86_OP_REG && sx < 0)
				e->xmm[dx][0] = get_gpr(e, s->reg);
			else if (sx >= 0)
				e->xmm[dx][0] = e->xmm[sx][0];
			else if (s->type == X86_OP_MEM && s->size == 8 && mem_addr(e, in, s, &a))
				e->xmm[dx][0] = load64(e, a);
			else
				e->xmm[dx][0] = unknown;
			if (in->id == X86_INS_MOVD && e->xmm[dx][0].known)
				e->xmm[dx][0].v &= 0xffffffffu;
			e->xmm[dx][1] = known(0, VAL_IMM);
		} else if (sx >= 0 && d->type == X86_OP_MEM && mem_addr(e, in, d, &a)) {
			store(e, a, e->xmm[sx][0], d->size);
		} else if (sx >= 0 && d->type == X86_OP_REG) {
			set_gpr(e, d->reg, e->xmm[sx][0]);
		} else {
			return false;
		}
		return true;
	case X86_INS_PUNPCKLQDQ:
		if (dx < 0)
			return false;
		if (sx >= 0)
			e->xmm[dx][1] = e->xmm[sx][0];
		else if (s->type == X86_OP_MEM && mem_addr(e, in, s, &a))
			e->xmm[dx][1] = load64(e, a);
		else
			e->xmm[dx][1] = unknown;
		return true;
	case X86_INS_PXOR:
	case X86_INS_XORPS:
		if (dx < 0)
			return false;
		e->xmm[dx][0] = e->xmm[dx][1] = sx == dx ? known(0, VAL_IMM) : unknown;
		return true;
	case X86_INS_MOVUPS:
	case X86_INS_MOVAPS:
	case X86_INS_MOVDQA:
	case X86_INS_MOVDQU:
		if (dx >= 0 && sx >= 0) {
			e->xmm[dx][0] = e->xmm[sx][0];
			e->xmm[dx][1] = e->xmm[sx][1];
		} else if (dx >= 0) {
			bool ok = s->type == X86_OP_MEM && mem_addr(e, in, s, &a);

			e->xmm[dx][0] = ok ? load64(e, a) : unknown;
			e->xmm[dx][1] = ok ? load64(e, a + 8) : unknown;
		} else if (sx >= 0 && d->type == X86_OP_MEM && mem_addr(e, in, d, &a)) {
			store(e, a, e->xmm[sx][0], 8);
			store(e, a + 8, e->xmm[sx][1], 8);
		} else {
			return false;
		}
		return true;
	default:
		return false;
	}
}

/* One instruction; false at the end of the straight line (a branch, a return). */
static bool emu_step(struct emu *e, csh cs, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *op = x->operands;
	uint64_t a;
	uint8_t g;

	switch (in->id) {
	case X86_INS_ENDBR64:
	case X86_INS_NOP:
	case X86_INS_PUSH:
		return true;
	case X86_INS_LEA:
		if (op[0].type == X86_OP_REG && op[0].size == 8 && mem_addr(e, in, &op[1], &a))
			set_gpr(e, op[0].reg, known(a, VAL_LEA));
		else
			set_gpr(e, op[0].reg, unknown);
		return true;
	case X86_INS_MOV:
	case X86_INS_MOVABS:
		if (x->op_count != 2)
			break;
		emu_mov(e, in);
		return true;
	case X86_INS_XOR:
		if (x->op_count == 2 && op[0].type == X86_OP_REG && op[1].type == X86_OP_REG &&
		    op[0].reg == op[1].reg) {
			set_gpr(e, op[0].reg, known(0, VAL_IMM));
			return true;
		}
		break;
	case X86_INS_CALL:
		clobber(e);
		return true;
	default:
		if (emu_sse(e, in))
			return true;
		break;
	}
	/* Anything that may change the flow of control ends the straight line. */
	for (g = 0; g < in->detail->groups_count; g++)
		if (in->detail->groups[g] == CS_GRP_JUMP || in->detail->groups[g] == CS_GRP_RET ||
		    in->detail->groups[g] == CS_GRP_INT || in->detail->groups[g] == CS_GRP_IRET ||
		    in->detail->groups[g] == CS_GRP_CALL)
			return false;
	if (in->id == X86_INS_UD2 || in->id == X86_INS_HLT || in->id == X86_INS_INT3)
		return false;
	forget(e, cs, in);
	return true;
}

static void emulate(struct rec *r, csh cs, cs_insn *in, uint64_t start)
{
	struct emu e = {.r = r};
	size_t avail = elf_image__avail(r->im, start);
	const uint8_t *code = elf_image__ptr(r->im, start, avail);
	uint64_t addr = start;
	unsigned long n = 0;

	r->nr_starts++;
	while (code && n < EMU_MAX_INSNS && r->nr_insns + n < EMU_TOTAL_INSNS && !r->err &&
	       capstone.disasm_iter(cs, &code, &avail, &addr, in)) {
		n++;
		if (!emu_step(&e, cs, in))
			break;
	}
	r->nr_insns += n;
}

/* ---- the two memories, and the table in them ---- */

struct slot {
	uint64_t addr; /* where the pointer to the name is */
	const struct name *name;
};

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int store_cmp(const void *a, const void *b)
{
	const struct store *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The stores by address, the last one to each address kept: what memory holds after. */
static void stores_settle(struct rec *r)
{
	size_t i, o = 0;

	if (!r->nr_st)
		return;
	qsort(r->st, r->nr_st, sizeof(*r->st), store_cmp);
	for (i = 0; i < r->nr_st; i++) {
		if (o && r->st[o - 1].addr == r->st[i].addr)
			r->st[o - 1] = r->st[i];
		else
			r->st[o++] = r->st[i];
	}
	r->nr_st = o;
}

static const struct store *store_at(const struct rec *r, uint64_t addr)
{
	size_t lo = VEC_BOUND(r->st, r->nr_st, addr, addr, false);

	return lo < r->nr_st && r->st[lo].addr == addr ? &r->st[lo] : NULL;
}

/* A word of one memory: relocated data, or what the initializers stored. */
static bool mem_word(const struct rec *r, bool init, uint64_t addr, uint64_t *v, uint8_t *how)
{
	enum elf_word_src src;
	const struct store *s;

	if (!init) {
		*how = DAWN_PROC_DATA;
		return elf_image__word(r->im, addr, v, &src);
	}
	s = store_at(r, addr);
	if (!s || !s->v.known || s->width != 8)
		return false;
	*v = s->v.v;
	*how = s->v.how == VAL_LOAD ? DAWN_PROC_INIT_GOT : DAWN_PROC_INIT_LEA;
	return true;
}

struct table {
	bool init;
	struct slot *slots; /* the run */
	size_t n;
	unsigned int stride;
	int proc_off, len_off; /* from the name slot */
};

/* The longest run of name slots at one stride, and its proc (and length) field. */
static bool find_table(const struct rec *r, bool init, struct slot *sl, size_t n, struct table *t)
{
	size_t i, best = 0, at = 0, j, cnt, lens, most = 0;
	unsigned int stride = 0;
	int k, proc = 0, len = -1;

	if (n < TABLE_MIN)
		return false;
	qsort(sl, n, sizeof(*sl), slot_cmp);
	for (i = 0; i + 1 < n; i = j) {
		uint64_t d = sl[i + 1].addr - sl[i].addr;

		j = i + 1;
		if (d < 16 || d > 64 || d % 8)
			continue;
		while (j + 1 < n && sl[j + 1].addr - sl[j].addr == d)
			j++;
		if (j - i + 1 > best) {
			best = j - i + 1;
			at = i;
			stride = (unsigned int)d;
		}
	}
	if (best < TABLE_MIN)
		return false;
	for (k = 8 - (int)stride; k <= (int)stride - 8; k += 8) {
		if (!k)
			continue;
		cnt = lens = 0;
		for (i = at; i < at + best; i++) {
			uint64_t v;
			uint8_t how;

			if (!mem_word(r, init, sl[i].addr + k, &v, &how))
				continue;
			if (elf_image__is_code(r->im, v))
				cnt++;
			if (v == sl[i].name->len)
				lens++;
		}
		if (cnt > most) {
			most = cnt;
			proc = k;
		}
		if (lens * 10 >= best * 9)
			len = k;
	}
	if (most * 10 < best * 9)
		return false;
	*t = (struct table){.init = init,
			    .slots = sl + at,
			    .n = best,
			    .stride = stride,
			    .proc_off = proc,
			    .len_off = len};
	return true;
}

static int name_cmp(const void *a, const void *b)
{
	const struct name *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int data_slot(uint64_t where, uint64_t value, enum elf_word_src src, void *ctx)
{
	struct {
		struct rec *r;
		struct slot *v;
		size_t n, cap;
	} *d = ctx;
	const struct name *nm = name_at(d->r, value);

	(void)src;
	if (!nm)
		return 0;
	if (vec_grow((void **)&d->v, &d->cap, d->n, sizeof(*d->v)))
		return -ENOMEM;
	d->v[d->n++] = (struct slot){where, nm};
	return 0;
}

struct starts {
	uint64_t *v;
	size_t n, cap;
	struct rec *r;
	int err;
};

/* Duplicates are dropped once all are in (starts_settle): one pass, not one per start. */
static void add_start(struct starts *s, uint64_t a)
{
	if (vec_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v))) {
		s->err = -ENOMEM;
		return;
	}
	s->v[s->n++] = a;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void starts_settle(struct starts *s)
{
	size_t i, o = 0;

	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), u64_cmp);
	for (i = 0; i < s->n; i++)
		if (!o || s->v[o - 1] != s->v[i])
			s->v[o++] = s->v[i];
	s->n = o;
}

/* Functions that take a name's address: REX.W lea reg, [rip + disp32] of a name. */
static void scan_leas(uint64_t vaddr, const uint8_t *p, size_t len, void *ctx)
{
	struct starts *s = ctx;
	size_t k;

	for (k = 0; k + 7 <= len && !s->err; k++) {
		uint64_t target, fsize, f;
		int32_t disp;

		if ((p[k] & 0xf8) != 0x48 || p[k + 1] != 0x8d || (p[k + 2] & 0xc7) != 0x05)
			continue;
		memcpy(&disp, p + k + 3, 4);
		target = vaddr + k + 7 + (int64_t)disp;
		if (!name_at(s->r, target))
			continue;
		f = elf_image__func_start(s->r->im, vaddr + k, &fsize);
		if (f)
			add_start(s, f);
	}
}

struct by_addr {
	uint64_t vaddr;
	size_t i;
};

static int by_addr_cmp(const void *a, const void *b)
{
	const struct by_addr *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The table, with its entries' addresses checked against the unwind table. */
static int build(const struct rec *r, const struct table *t, struct dawn_procs *p)
{
	struct by_addr *by;
	size_t i, j;

	p->v = calloc(t->n, sizeof(*p->v));
	if (!p->v)
		return -ENOMEM;
	p->sorted = true;
	for (i = 0; i < t->n; i++) {
		const struct slot *s = &t->slots[i];
		struct dawn_proc *e = &p->v[p->n];
		uint64_t v, size, start;
		uint8_t how;

		if (!mem_word(r, t->init, s->addr + t->proc_off, &v, &how) ||
		    !elf_image__is_code(r->im, v))
			continue;
		e->name = s->name->s;
		e->vaddr = v;
		e->how = how;
		start = elf_image__func_start(r->im, v, &size);
		e->fde = start == v;
		e->size = e->fde ? size : 0;
		p->nr_fde += e->fde;
		if (p->n && strcmp(p->v[p->n - 1].name, e->name) >= 0)
			p->sorted = false;
		p->n++;
	}
	/* Identical code folding gives several names one address: each probe hit is then any
	 * of them. Counted on the entries sorted by address (a crafted table may be long). */
	by = calloc(p->n + 1, sizeof(*by));
	if (!by)
		return -ENOMEM;
	for (i = 0; i < p->n; i++)
		by[i] = (struct by_addr){p->v[i].vaddr, i};
	qsort(by, p->n, sizeof(*by), by_addr_cmp);
	for (i = 0; i < p->n; i = j) {
		size_t k;

		for (j = i; j < p->n && by[j].vaddr == by[i].vaddr; j++)
			;
		for (k = i; k < j; k++)
			p->v[by[k].i].shared = (uint16_t)(j - i > UINT16_MAX ? UINT16_MAX : j - i);
		p->nr_folded += j - i > 1 ? (unsigned int)(j - i) : 0;
	}
	free(by);
	p->table_vaddr = t->slots[0].addr + t->proc_off;
	p->stride = t->stride;
	p->name_off = -t->proc_off;
	p->len_off = t->len_off == -1 ? -1 : t->len_off - t->proc_off;
	p->from_init = t->init;
	snprintf(p->why, sizeof(p->why), "Dawn's proc table at 0x%llx: %zu entries of %u bytes, %s",
		 (unsigned long long)p->table_vaddr, p->n, p->stride,
		 t->init ? "written by its initializer" : "static data");
	return 0;
}

/* ---- error objects by their class (RTTI) ---- */

/*
 * Itanium C++ ABI: a class's type_info is {vptr, const char *name}; its vtable is
 * {offset-to-top, type_info *, virtual functions...}, objects point at the first function
 * (vtable + 16). The name of a class with internal linkage starts with '*'. Dawn's error
 * buffer is an ErrorBuffer in an anonymous namespace; an error texture is a bare TextureBase
 * (no backend texture is one). Namespaces as Dawn spelled them since 2021 and before.
 */
static const char *const error_classes[] = {
    "N4dawn6native12_GLOBAL__N_111ErrorBufferE",
    "N4dawn6native11TextureBaseE",
    "N11dawn_native12_GLOBAL__N_111ErrorBufferE",
    "N11dawn_native11TextureBaseE",
    NULL,
};

struct rtti {
	struct rec *r;
	uint64_t want[16]; /* addresses a type_info's name or a vtable's type_info may have */
	const char *want_name[16]; /* the class name (in the object) each is evidence of */
	unsigned int nr_want;
	uint64_t found[16]; /* where a relocated word with such a value is */
	const char *found_name[16];
	unsigned int nr_found;
};

static void scan_class_names(uint64_t vaddr, const uint8_t *p, size_t len, void *ctx)
{
	struct rtti *x = ctx;
	size_t i;

	for (i = 0; error_classes[i]; i++) {
		size_t n = strlen(error_classes[i]) + 1; /* with its NUL */
		const uint8_t *q = p, *end = p + len;

		while ((q = memmem(q, end - q, error_classes[i], n)) && x->nr_want + 2 <= 16) {
			x->want_name[x->nr_want] = (const char *)q;
			x->want[x->nr_want++] = vaddr + (q - p);
			if (q > p && q[-1] == '*') {
				x->want_name[x->nr_want] = (const char *)q;
				x->want[x->nr_want++] = vaddr + (q - p) - 1;
			}
			q += n;
		}
	}
}

static int rtti_ref(uint64_t where, uint64_t value, enum elf_word_src src, void *ctx)
{
	struct rtti *x = ctx;
	unsigned int i;

	(void)src;
	for (i = 0; i < x->nr_want; i++)
		if (value == x->want[i] && x->nr_found < 16) {
			x->found_name[x->nr_found] = x->want_name[i];
			x->found[x->nr_found++] = where;
		}
	return 0;
}

/* The error classes' vtable address points: name -> type_info -> primary vtable. */
static void find_error_classes(struct rec *r, struct dawn_procs *p)
{
	struct rtti x = {.r = r};
	unsigned int i;

	elf_image__for_each_ro(r->im, false, scan_class_names, &x);
	if (!x.nr_want)
		return; /* built without RTTI, or not these classes */
	elf_image__for_each_reloc(r->im, rtti_ref, &x);
	/* The name pointer is type_info + 8. */
	for (i = 0; i < x.nr_found; i++) {
		x.want[i] = x.found[i] - 8;
		x.want_name[i] = x.found_name[i];
	}
	x.nr_want = x.nr_found;
	x.nr_found = 0;
	elf_image__for_each_reloc(r->im, rtti_ref, &x);
	for (i = 0; i < x.nr_found && p->nr_error_vptr < DAWN_ERROR_CLASSES; i++) {
		enum elf_word_src src;
		uint64_t top, fn;

		/* The type_info pointer is vtable + 8; a primary vtable has offset-to-top 0 and
		 * code in its first slot (a secondary one, for a second base, does not). */
		if (!elf_image__word(r->im, x.found[i] - 8, &top, &src) || top ||
		    !elf_image__word(r->im, x.found[i] + 8, &fn, &src) ||
		    !elf_image__is_code(r->im, fn))
			continue;
		p->error_class[p->nr_error_vptr] = x.found_name[i];
		p->error_vptr[p->nr_error_vptr++] = x.found[i] + 8;
	}
}

static int recover(struct rec *r, struct dawn_procs *p)
{
	struct {
		struct rec *r;
		struct slot *v;
		size_t n, cap;
	} data = {.r = r};
	struct starts starts = {.r = r};
	struct slot *init = NULL;
	struct table td = {0}, ti = {0};
	bool have_d, have_i;
	size_t i, ni = 0;
	cs_insn *in = NULL;
	csh cs = 0;
	int err;

	elf_image__for_each_ro(r->im, false, scan_names, r);
	if (r->err)
		return r->err;
	p->nr_names = (unsigned int)r->nr_names;
	if (r->nr_names < TABLE_MIN)
		return -ENOENT;
	qsort(r->names, r->nr_names, sizeof(*r->names), name_cmp);

	err = elf_image__for_each_reloc(r->im, data_slot, &data);
	if (err)
		goto cleanup;

	for (i = 0; i < elf_image__nr_init(r->im); i++) {
		uint64_t f = elf_image__init(r->im, i);

		if (f && elf_image__is_code(r->im, f))
			add_start(&starts, f);
	}
	if (elf_image__has_fde_table(r->im))
		elf_image__for_each_ro(r->im, true, scan_leas, &starts);
	if ((err = starts.err))
		goto cleanup;
	starts_settle(&starts);
	if (capstone.open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		err = -ENOMEM;
		goto cleanup;
	}
	capstone.option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	in = capstone.malloc(cs);
	if (!in) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < starts.n && !r->err; i++)
		emulate(r, cs, in, starts.v[i]);
	if ((err = r->err))
		goto cleanup;
	p->nr_starts = r->nr_starts;
	p->nr_insns = r->nr_insns;
	stores_settle(r);
	if ((err = r->err))
		goto cleanup;
	init = calloc(r->nr_st + 1, sizeof(*init));
	if (!init) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < r->nr_st; i++) {
		const struct name *nm =
		    r->st[i].width == 8 && r->st[i].v.known ? name_at(r, r->st[i].v.v) : NULL;

		if (nm)
			init[ni++] = (struct slot){r->st[i].addr, nm};
	}
	have_d = find_table(r, false, data.v, data.n, &td);
	have_i = find_table(r, true, init, ni, &ti);
	if (!have_d && !have_i)
		err = -ENOENT;
	else
		err = build(r, have_i && (!have_d || ti.n >= td.n) ? &ti : &td, p);
	if (!err)
		find_error_classes(r, p);
cleanup:
	if (in)
		capstone.free(in, 1);
	if (cs)
		capstone.close(&cs);
	free(init);
	free(data.v);
	free(starts.v);
	return err;
}

int dawn_procs__recover(struct elf_obj *o, struct dawn_procs **out, char *why, size_t why_len)
{
	struct rec r = {0};
	struct dawn_procs *p;
	unsigned int names = 0;
	struct elf_image *im;
	int err;

	*out = NULL;
	if (why_len)
		why[0] = 0;
	err = elf_obj__for_each_rodata_window(o, NAME_MAX_LEN + 8, count_names, &names);
	if (err < 0)
		return err;
	if (names < TABLE_MIN)
		return -ENOENT;
	pthread_once(&capstone_once, capstone_open);
	if (capstone.why[0]) {
		if (why_len)
			snprintf(why, why_len, "no x86-64 decoder: %s", capstone.why);
		return -ELIBACC;
	}
	err = elf_image__new(o, &im, why, why_len);
	if (err)
		return err;
	p = calloc(1, sizeof(*p));
	if (!p) {
		elf_image__free(im);
		return -ENOMEM;
	}
	r.im = im;
	err = recover(&r, p);
	/* A malformed part met on the way (an unwind entry) makes the whole reading suspect. */
	if (!err && elf_image__bad(im)) {
		err = -EINVAL;
		if (why_len)
			snprintf(why, why_len, "%s", elf_image__bad(im));
	}
	free(r.names);
	free(r.st);
	elf_image__free(im);
	if (err) {
		dawn_procs__free(p);
		return err;
	}
	*out = p;
	return 0;
}

void dawn_procs__free(struct dawn_procs *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

const struct dawn_proc *dawn_procs__find(const struct dawn_procs *p, const char *name)
{
	size_t lo = 0, hi = p->n, i;

	if (p->sorted) {
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int c = strcmp(p->v[mid].name, name);

			if (!c)
				return &p->v[mid];
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		return NULL;
	}
	for (i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].name, name))
			return &p->v[i];
	return NULL;
}

void dawn_procs__class_name(const char *rtti, char *buf, size_t len)
{
	const char *s = rtti, *last = NULL;
	size_t n = 0, last_n = 0;

	/* Itanium nested name N <len><id>... E: the last <len><id> is the class. */
	if (*s == 'N')
		s++;
	while (*s >= '0' && *s <= '9') {
		n = strtoul(s, (char **)&s, 10);
		if (!n || strnlen(s, n) < n)
			break;
		last = s;
		last_n = n;
		s += n;
	}
	if (!last)
		snprintf(buf, len, "%s", rtti);
	else
		snprintf(buf, len, "%.*s", (int)last_n, last);
}

const char *dawn_procs__how(uint8_t how)
{
	switch (how) {
	case DAWN_PROC_INIT_LEA:
		return "initializer lea";
	case DAWN_PROC_INIT_GOT:
		return "initializer GOT load";
	default:
		return "relocated data";
	}
}
