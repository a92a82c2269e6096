// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "gpuleak.h"
#include "gpuleak.skel.h"
#include "lib/log.h"
#include "live/bpf_setup.h"
#include "live/links.h"
#include "live/premake.h"
#include "live/kernel.h"
#include "live/live.h"
#include "live/process.h"
#include "probe/catalog.h"

struct bpf_setup {
	struct gpuleak_bpf *skel;
	struct kernel_features kf;
	bool multi; /* uprobe_multi links; else one classic uprobe link per probe */
	/* --verifier: each program's log (BPF_LOG_STATS) and what was read from it */
	char (*logs)[16384]; /* one per program */
	struct bpf_setup_prog_stats st[BPF_SETUP_MAX_PROGS];
	size_t nr_prog;
	struct bpf_link *task_links[3]; /* exit, fork, exec tracepoints */
	struct bpf_link *oom_link;	/* the OOM killer's mark_victim */
	struct bpf_link *fork_hold;	/* fexit/schedule_tail: --follow before 6.13 */
	bool follow;
	bool oom_kill; /* gl_oom_victim is loaded */
	bool python;   /* --python-depth > 0: execs drop a process's Python configuration */
	/*
	 * The Python walk loaded when the first Python process is configured, not at start:
	 * skel's programs are built without it (py_later), py_skel's gl_enter and gl_usdt with
	 * it, on skel's maps, reached by tail call (gpuleak_python.frag.h).
	 */
	bool py_lazy;
	bool py_failed; /* its load failed (said): no Python frames in this session */
	unsigned int py_depth;
	struct gpuleak_bpf *py_skel;
	uint64_t features_ns; /* the kernel's features, probed or from the cache */
	bool features_cached;
	struct premake_stats maps; /* the maps made ahead of the load */
	/* One stack map value: stacks2's starts with the probed function's address. */
	uint64_t stack_buf[GL_STACK_DEPTH_MAX + 2];
};

/* probes --kernel --verifier reports each refusal itself, from the program's own log. */
static bool libbpf_quiet;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (libbpf_quiet && level != LIBBPF_DEBUG)
		return 0;
	if (level == LIBBPF_DEBUG && gl_verbosity < 2)
		return 0;
	if (level == LIBBPF_INFO && gl_verbosity < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/*
 * What this kernel lacks, said once each in one line with what is lost, and the options it
 * turns off; below the floor, the one-line refusal (-EOPNOTSUPP). A kernel that could not be
 * test-loaded (no privileges) is let through: the load then says what is wrong.
 */
static int degrade(struct bpf_setup *b, const struct bpf_setup_opts *o, unsigned int *py_depth,
		   unsigned int *unwind)
{
	enum kfeat below;

	uint64_t t0 = live_now_ns();
	char path[320];

	if (o->kf) {
		b->kf = *o->kf;
	} else if (kernel__probe_cached(&b->kf, path, sizeof(path))) {
		pr_info("kernel features from %s (probed once per boot)\n", path);
		b->features_cached = true;
	} else if (path[0]) {
		pr_info("kernel features probed, kept in %s\n", path);
	}
	b->features_ns = live_now_ns() - t0;
	b->multi = !b->kf.probed || b->kf.have[KF_UPROBE_MULTI];
	if (o->links == BPF_SETUP_LINKS_CLASSIC)
		b->multi = false;
	else if (o->links == BPF_SETUP_LINKS_MULTI)
		b->multi = true;
	if (!b->kf.probed)
		return 0;
	below = kernel__below_floor(&b->kf);
	if (below != KF_MAX) {
		pr_err("%s\n", kernel__refusal(below));
		return -EOPNOTSUPP;
	}
	if (!b->multi && o->links == BPF_SETUP_LINKS_AUTO && !o->quiet)
		pr_warn("this kernel has no %s (Linux %s): %s\n", kernel__name(KF_UPROBE_MULTI),
			kernel__since(KF_UPROBE_MULTI), kernel__degradation(KF_UPROBE_MULTI));
	if (*py_depth && !b->kf.have[KF_LOOP]) {
		if (!o->quiet)
			pr_warn("this kernel has no %s (Linux %s): %s\n", kernel__name(KF_LOOP),
				kernel__since(KF_LOOP), kernel__degradation(KF_LOOP));
		*py_depth = 0;
	}
	if (*unwind && !b->kf.have[KF_FIND_VMA]) {
		if (!o->quiet)
			pr_warn("this kernel has no %s (Linux %s): %s\n", kernel__name(KF_FIND_VMA),
				kernel__since(KF_FIND_VMA), kernel__degradation(KF_FIND_VMA));
		*unwind = 0;
	}
	if (o->follow && kernel__degrades(&b->kf, KF_FORK_FEXIT) && !o->quiet)
		pr_warn("this kernel has no %s (Linux %s) and no %s: %s\n",
			kernel__name(KF_SIGNAL_TASK), kernel__since(KF_SIGNAL_TASK),
			kernel__name(KF_FORK_FEXIT), kernel__degradation(KF_FORK_FEXIT));
	return 0;
}

/* Where the data section sec has its variable called name: false when it has none. */
static bool var_at(const struct btf *btf, const struct btf_type *sec, const char *name, __u32 *off)
{
	const struct btf_var_secinfo *vs = btf_var_secinfos(sec);
	__u16 i;

	for (i = 0; i < btf_vlen(sec); i++, vs++)
		if (!strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, vs->type)->name_off),
			    name)) {
			*off = vs->offset;
			return true;
		}
	return false;
}

/*
 * The object to load: the one built in, or (probes --kernel --verifier --bpf-object) another
 * build of the same source, laid out alike, whose programs are only loaded and measured.
 */
static struct gpuleak_bpf *open_object(const void *data, size_t size)
{
	struct gpuleak_bpf *obj;
	int err;

	if (!data)
		return gpuleak_bpf__open();
	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = gpuleak_bpf__create_skeleton(obj);
	if (!err) {
		obj->skeleton->data = data;
		obj->skeleton->data_sz = size;
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	}
	if (err) {
		gpuleak_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

/*
 * Another build's object is written through the built-in skeleton's view of its data
 * sections (rodata->python_depth, ...): every variable must sit where the built-in object
 * has it, or the settings land in the wrong bytes and the measure is of another program.
 */
int bpf_setup__check_object(const void *data, size_t size, char *why, size_t why_len)
{
	struct gpuleak_bpf *mine, *theirs;
	struct bpf_object *other;
	libbpf_print_fn_t old;
	char msg[96];
	const char *secs[] = {".rodata", ".bss"};
	size_t k;
	int err;

	/* Said here in one line, not in libbpf's words too. */
	old = libbpf_set_print(NULL);
	mine = gpuleak_bpf__open();
	theirs = mine ? open_object(data, size) : NULL;
	err = mine && theirs ? 0 : -errno;
	libbpf_set_print(old);
	other = theirs ? theirs->obj : NULL;
	if (err) {
		libbpf_strerror(err, msg, sizeof(msg));
		snprintf(why, why_len, "not a BPF object libbpf opens: %s", msg);
	}
	for (k = 0; !err && k < sizeof(secs) / sizeof(secs[0]); k++) {
		const struct btf *a = bpf_object__btf(mine->obj), *b = bpf_object__btf(other);
		__s32 ia = btf__find_by_name_kind(a, secs[k], BTF_KIND_DATASEC);
		__s32 ib = b ? btf__find_by_name_kind(b, secs[k], BTF_KIND_DATASEC) : -1;
		const struct btf_type *sa, *sb;
		const struct btf_var_secinfo *vs;
		__u32 off;
		__u16 i;

		if (ia < 0)
			continue;
		sa = btf__type_by_id(a, ia);
		sb = ib < 0 ? NULL : btf__type_by_id(b, ib);
		vs = btf_var_secinfos(sa);
		for (i = 0; i < btf_vlen(sa) && !err; i++, vs++) {
			const char *name =
			    btf__name_by_offset(a, btf__type_by_id(a, vs->type)->name_off);

			if (!sb || !var_at(b, sb, name, &off) || off != vs->offset) {
				snprintf(why, why_len,
					 "%s's %s is not where the built-in object has it (offset "
					 "%u): another layout of the source",
					 secs[k], name, vs->offset);
				err = -EINVAL;
			}
		}
	}
	gpuleak_bpf__destroy(mine);
	gpuleak_bpf__destroy(theirs);
	return err;
}

/* Every program logs its verifier statistics (and, failing, why) into its own buffer. */
static int stats_begin(struct bpf_setup *b, int only_prog)
{
	struct bpf_program *p;
	int i = 0;

	b->logs = calloc(BPF_SETUP_MAX_PROGS, sizeof(b->logs[0]));
	if (!b->logs)
		return -ENOMEM;
	bpf_object__for_each_program(p, b->skel->obj)
	{
		if (b->nr_prog >= BPF_SETUP_MAX_PROGS)
			break;
		if (only_prog > 0 && i++ != only_prog - 1)
			bpf_program__set_autoload(p, false);
		b->logs[b->nr_prog][0] = 0;
		bpf_program__set_log_buf(p, b->logs[b->nr_prog], sizeof(b->logs[0]));
		bpf_program__set_log_level(p, bpf_program__log_level(p) | 4 /* BPF_LOG_STATS */);
		b->nr_prog++;
	}
	return 0;
}

#define STACK_SUBPROGS_MAX 64

/* The deepest chain of frames from subprogram k (calls: an adjacency matrix). */
static int chain_depth(int k, int n, const int *frame,
		       const unsigned char (*calls)[STACK_SUBPROGS_MAX], int *memo, int level)
{
	int j, d, best = 0;

	if (memo[k] >= 0)
		return memo[k];
	if (level > n)
		return -1; /* a cycle: the verifier refuses recursion, so never a loaded program */
	for (j = 0; j < n; j++) {
		if (!calls[k][j])
			continue;
		d = chain_depth(j, n, frame, calls, memo, level + 1);
		if (d < 0)
			return -1;
		if (d > best)
			best = d;
	}
	memo[k] = frame[k] + best;
	return memo[k];
}

/*
 * The deepest chain of calls of loaded program fd, frames frame[0..n) (the log's order: by
 * first instruction, as the kernel numbers subprograms), from the instructions as the kernel
 * keeps them: a call to a subprogram (a global one, or a callback bpf_loop's inlining calls)
 * or a callback handed to a helper (bpf_find_vma) is an edge. A JITed program's call keeps its
 * relative target in `off` (the kernel moved imm's to there), a callback's load in imm.
 * -1 when the kernel does not say.
 */
static int stack_chain(int fd, const int *frame, int n)
{
	unsigned char calls[STACK_SUBPROGS_MAX][STACK_SUBPROGS_MAX] = {{0}};
	struct bpf_func_info fi[STACK_SUBPROGS_MAX];
	struct bpf_prog_info info = {0};
	int memo[STACK_SUBPROGS_MAX];
	__u32 len = sizeof(info), nr, i;
	struct bpf_insn *insns = NULL;
	int k, target, owner, ret = -1;

	if (fd < 0 || n < 1 || n > STACK_SUBPROGS_MAX || bpf_prog_get_info_by_fd(fd, &info, &len) ||
	    info.nr_func_info != (__u32)n || !info.xlated_prog_len)
		return -1;
	nr = info.xlated_prog_len / sizeof(*insns);
	insns = calloc(nr, sizeof(*insns));
	if (!insns)
		return -1;
	memset(&info, 0, sizeof(info));
	info.xlated_prog_len = nr * sizeof(*insns);
	info.xlated_prog_insns = (__u64)(unsigned long)insns;
	info.nr_func_info = n;
	info.func_info_rec_size = sizeof(fi[0]);
	info.func_info = (__u64)(unsigned long)fi;
	len = sizeof(info);
	if (bpf_prog_get_info_by_fd(fd, &info, &len) || info.nr_func_info != (__u32)n)
		goto out;
	owner = 0;
	for (i = 0; i < nr; i++) {
		const struct bpf_insn *in = &insns[i];

		while (owner + 1 < n && fi[owner + 1].insn_off <= i)
			owner++;
		if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL)
			target = (int)i + in->off + 1;
		else if (in->code == (BPF_LD | BPF_IMM | BPF_DW) && in->src_reg == BPF_PSEUDO_FUNC)
			target = (int)i + in->imm + 1;
		else
			continue;
		for (k = 0; k < n; k++)
			if (fi[k].insn_off == (__u32)target)
				break;
		if (k == n)
			goto out; /* not a subprogram's start: a layout this does not know */
		calls[owner][k] = 1;
		if (in->code == (BPF_LD | BPF_IMM | BPF_DW))
			i++;
	}
	for (k = 0; k < n; k++)
		memo[k] = -1;
	ret = chain_depth(0, n, frame, (const unsigned char(*)[STACK_SUBPROGS_MAX])calls, memo, 0);
out:
	free(insns);
	return ret;
}

/*
 * The stack a program and the subprograms it calls need together, as the verifier counts it
 * without private stacks: each frame rounded up to 32 bytes, along the deepest chain of calls
 * (global subprograms, and the callbacks of bpf_loop and bpf_find_vma). The log's "stack
 * depth A+B+C" lists each subprogram's own frame, the program's first; which calls which
 * comes from the loaded program (stack_chain), or where the kernel does not say, the program
 * and its deepest subprogram. A refusal for size reports its own sum.
 */
static void stats_read(struct bpf_setup_prog_stats *st, const char *log, int fd)
{
	const char *p = strstr(log, "stack depth ");
	unsigned long v, main_depth = 0, deepest = 0;
	int i = 0, frame[STACK_SUBPROGS_MAX], chain;
	char *end;

	st->combined = -1;
	st->insns = -1;
	if ((p = strstr(log, "combined stack size of ")) && (p = strstr(p, " is ")) &&
	    (v = strtoul(p + 4, &end, 10)) > 0) {
		st->combined = (int)v;
		st->too_large = true;
	} else if ((p = strstr(log, "stack depth "))) {
		p += strlen("stack depth ");
		for (;;) {
			v = strtoul(p, &end, 10);
			if (end == p)
				break;
			v = v ? (v + 31) / 32 * 32 : 32;
			if (i < STACK_SUBPROGS_MAX)
				frame[i] = (int)v;
			if (i++ == 0)
				main_depth = v;
			else if (v > deepest)
				deepest = v;
			if (*end != '+')
				break;
			p = end + 1;
		}
		st->frames = i;
		if (i)
			st->combined = (int)(main_depth + deepest);
		chain = i <= STACK_SUBPROGS_MAX ? stack_chain(fd, frame, i) : -1;
		if (chain > 0)
			st->combined = chain;
	}
	if ((p = strstr(log, "processed ")))
		st->insns = (int)strtol(p + strlen("processed "), NULL, 10);
}

static void stats_end(struct bpf_setup *b)
{
	struct bpf_program *p;
	size_t i = 0;

	bpf_object__for_each_program(p, b->skel->obj)
	{
		struct bpf_setup_prog_stats *st;

		if (i >= b->nr_prog)
			break;
		st = &b->st[i];
		memset(st, 0, sizeof(*st));
		snprintf(st->name, sizeof(st->name), "%s", bpf_program__name(p));
		st->loaded = bpf_program__autoload(p);
		st->ok = bpf_program__fd(p) >= 0;
		st->tried = st->ok || b->logs[i][0];
		if (st->loaded)
			stats_read(st, b->logs[i], bpf_program__fd(p));
		i++;
	}
}

size_t bpf_setup__prog_stats(const struct bpf_setup *b, const struct bpf_setup_prog_stats **st)
{
	*st = b->st;
	return b->nr_prog;
}

uint64_t bpf_setup__features_ns(const struct bpf_setup *b, bool *cached)
{
	*cached = b->features_cached;
	return b->features_ns;
}

uint64_t bpf_setup__maps_ns(const struct bpf_setup *b, size_t *threads)
{
	*threads = b->maps.threads;
	return b->maps.wall_ns;
}

bool bpf_setup__libbpf_older(unsigned int major, unsigned int minor)
{
	return libbpf_major_version() < major ||
	       (libbpf_major_version() == major && libbpf_minor_version() < minor);
}

bool bpf_setup__uprobe_multi(const struct bpf_setup *b)
{
	return b->multi;
}

/* Classic uprobe links: a plain kprobe-type program, the cookie per link. */
static void set_classic(struct gpuleak_bpf *skel)
{
	bpf_program__set_expected_attach_type(skel->progs.gl_enter, 0);
	bpf_program__set_expected_attach_type(skel->progs.gl_exit, 0);
	bpf_program__set_expected_attach_type(skel->progs.gl_calib_enter, 0);
	bpf_program__set_expected_attach_type(skel->progs.gl_calib_exit, 0);
}

/* The maps only the Python walk uses: its own load has them (load_python). */
static bool python_only(const struct gpuleak_bpf *skel, const struct bpf_map *m)
{
	return m == skel->maps.pystacks || m == skel->maps.pycode_seen || m == skel->maps.pyfp ||
	       m == skel->maps.pyscratch;
}

/* Programs without the walk never touch them: one entry each, not 130 000 preallocated. */
static int shrink_python_maps(struct gpuleak_bpf *skel)
{
	struct bpf_map *m;
	int err = 0;

	bpf_object__for_each_map(m, skel->obj)
	{
		if (python_only(skel, m))
			err = bpf_map__set_max_entries(m, 1);
		if (err)
			break;
	}
	return err;
}

/*
 * The Python walk, when the first Python process is configured (py_lazy): the object again,
 * configured as skel was but with --python-depth, only gl_enter and gl_usdt, on skel's maps
 * but for the walk's own; then put where skel's programs tail-call them for a Python process.
 */
static int load_python(struct bpf_setup *b)
{
	uint64_t t0 = live_now_ns();
	struct gpuleak_bpf *py;
	struct bpf_program *p;
	struct bpf_map *m;
	__u32 k = 0;
	int err = 0, fd;

	py = gpuleak_bpf__open();
	if (!py)
		return -errno;
	memcpy(py->rodata, b->skel->rodata, sizeof(*py->rodata));
	py->rodata->python_depth = b->py_depth;
	py->rodata->py_later = false;
	if (!b->multi)
		set_classic(py);
	bpf_object__for_each_program(p, py->obj)
	    bpf_program__set_autoload(p, p == py->progs.gl_enter || p == py->progs.gl_usdt);
	bpf_object__for_each_map(m, py->obj)
	{
		struct bpf_map *own;

		if (m == py->maps.rodata || m == py->maps.kconfig || python_only(py, m))
			continue;
		own = bpf_object__find_map_by_name(b->skel->obj, bpf_map__name(m));
		err = own ? bpf_map__reuse_fd(m, bpf_map__fd(own)) : -ENOENT;
		if (err)
			goto cleanup;
	}
	err = gpuleak_bpf__load(py);
	if (err)
		goto cleanup;
	fd = bpf_program__fd(py->progs.gl_enter);
	err = bpf_map__update_elem(b->skel->maps.py_enter_prog, &k, sizeof(k), &fd, sizeof(fd), 0);
	if (err)
		goto cleanup;
	fd = bpf_program__fd(py->progs.gl_usdt);
	err = bpf_map__update_elem(b->skel->maps.py_usdt_prog, &k, sizeof(k), &fd, sizeof(fd), 0);
	if (err)
		goto cleanup;
	b->py_skel = py;
	pr_info("the Python frame walk loaded in %.1f ms\n", (live_now_ns() - t0) / 1e6);
	return 0;
cleanup:
	gpuleak_bpf__destroy(py);
	return err;
}

/* Each API's call shape, from the catalog: the programs are generic, the cookie says which. */
static void set_specs(struct gpuleak_bpf *skel)
{
	unsigned int i;

	for (i = 0; i < cat_nr_apis; i++) {
		const struct cat_api *a = &cat_apis[i];

		skel->rodata->specs[a->api] = a->spec;
		/* allocations of memory: what they allocate underneath is their layers */
		if (a->op == OP_ALLOC && cat_mem_counts(a->mem))
			skel->rodata->specs[a->api].flags |= GL_SPEC_LAYERS;
	}
}

/*
 * Hash tables whose elements the kernel allocates as they fill, where tracing programs may
 * (bpf_mem_alloc, 6.1): not preallocating them is a few ms less of every start. Before 6.1
 * the verifier would load them but WARN (taint the kernel) for a tracing program: there they
 * stay preallocated. Per-CPU and LRU tables are always preallocated.
 */
static void hash_maps_grow(struct gpuleak_bpf *skel)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, skel->obj)
	{
		if (bpf_map__type(m) == BPF_MAP_TYPE_HASH)
			bpf_map__set_map_flags(m, bpf_map__map_flags(m) | BPF_F_NO_PREALLOC);
	}
}

/*
 * The kernel's BTF, parsed now rather than by the load: libbpf needs it for the BTF
 * tracepoints' targets and the CO-RE relocations, and parsing it (126 000 types on 6.18,
 * ~10 ms here) can run while the maps are being made. Asking for the first BTF tracepoint's
 * target is libbpf's way to have it loaded; it answers as the load would.
 */
static void kernel_btf_early(struct gpuleak_bpf *skel)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, skel->obj)
	{
		const char *sec = bpf_program__section_name(p);

		if (bpf_program__autoload(p) && !strncmp(sec, "tp_btf/", 7)) {
			/* An error is the load's to report, with the rest. */
			bpf_program__set_attach_target(p, 0, sec + 7);
			return;
		}
	}
}

static int set_maps(struct gpuleak_bpf *skel, const struct bpf_setup_opts *o)
{
	int err;

	/* A small ring buffer must wake us before it is full, not at the default threshold. */
	if (skel->rodata->wakeup_bytes > o->ringbuf_bytes / 4)
		skel->rodata->wakeup_bytes = o->ringbuf_bytes / 4;
	err = bpf_map__set_max_entries(skel->maps.events, o->ringbuf_bytes);
	/*
	 * libbpf's USDT argument specs: one per distinct argument string per attach (USDT link),
	 * from a table of 256 by default; E2BIG past it. 4096 (~850 KiB) fits PyTorch's two
	 * probes in 2000 processes. With BPF cookies (Linux 5.15+) the ip table is not used.
	 */
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.__bpf_usdt_specs, BPF_SETUP_USDT_SPECS);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.__bpf_usdt_ip_to_spec_id, 1);
	if (err || !o->stack_depth)
		return err;
	/* frames after the probed function, and one more to see a cut (gpuleak.bpf.c) */
	skel->rodata->stack_depth = o->stack_depth;
	err = bpf_map__set_value_size(skel->maps.stacks, (o->stack_depth + 1) * 8);
	if (!err)
		err = bpf_map__set_value_size(skel->maps.stacks2, (o->stack_depth + 2) * 8);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.stacks, o->stack_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.stacks2, o->stack_entries);
	return err;
}

int bpf_setup__new(const struct bpf_setup_opts *o, struct bpf_setup **out)
{
	unsigned int py_depth = o->python_depth, unwind = o->unwind_bytes;
	uint64_t ns_dev = 0, ns_ino = 0;
	struct premake *pm;
	struct bpf_setup *b;
	bool initial = true;
	int err;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	err = degrade(b, o, &py_depth, &unwind);
	if (err)
		goto cleanup;
	libbpf_set_print(libbpf_print);
	b->follow = o->follow;
	b->python = py_depth > 0;
	b->skel = open_object(o->object, o->object_size);
	if (!b->skel) {
		err = -errno;
		pr_err("opening the BPF object failed: %s\n", strerror(-err));
		goto cleanup;
	}
	set_specs(b->skel);
	b->skel->rodata->follow_children = o->follow;
	/* The walk is a fifth of the verifier's work at start: loaded when Python is found. */
	b->py_lazy = py_depth && o->python_lazy;
	b->py_depth = py_depth;
	b->skel->rodata->python_depth = b->py_lazy ? 0 : py_depth;
	b->skel->rodata->py_later = b->py_lazy;
	b->skel->rodata->unwind_bytes = o->stack_depth ? unwind : 0;
	b->skel->rodata->unwind_adaptive = o->unwind_adaptive;
	b->skel->rodata->exit_has_group_dead = b->kf.have[KF_EXIT_GROUP_DEAD];
	b->skel->rodata->budget_on = o->budget;
	if (!b->multi)
		set_classic(b->skel);
	b->skel->rodata->unwind_ring_max = o->ringbuf_bytes / 2;
	b->skel->rodata->self_tgid = getpid();
	/* gpuleak in a container with its own pid namespace: BPF reports pids as we see them. */
	err = process__pidns(&ns_dev, &ns_ino, &initial);
	if (err) {
		pr_err("cannot tell which pid namespace gpuleak runs in: %s\n", strerror(-err));
		goto cleanup;
	}
	if (!initial) {
		b->skel->rodata->pidns_dev = ns_dev;
		b->skel->rodata->pidns_ino = ns_ino;
	}
	b->oom_kill = o->oom_kill && b->kf.have[KF_MARK_VICTIM];
	if (o->oom_kill && !b->oom_kill)
		pr_warn("this kernel's mark_victim tracepoint does not name the task (Linux "
			"5.19): the oom-kill trigger is off\n");
	bpf_program__set_autoload(b->skel->progs.gl_oom_victim, b->oom_kill);
	/*
	 * A forked child's hold on itself: --follow where the fork tracepoint cannot stop it
	 * (and in the verifier's check, which covers every program a kernel may load).
	 */
	bpf_program__set_autoload(b->skel->progs.gl_fork_hold,
				  o->follow && b->kf.probed && b->kf.have[KF_FORK_FEXIT] &&
				      (!b->kf.have[KF_SIGNAL_TASK] || o->verifier_stats));
	err = set_maps(b->skel, o);
	if (!err && b->py_lazy)
		err = shrink_python_maps(b->skel);
	if (err) {
		pr_err("configuring the BPF object failed: %s\n", strerror(-err));
		goto cleanup;
	}
	libbpf_quiet = o->verifier_stats;
	if (o->verifier_stats) {
		err = stats_begin(b, o->only_prog);
		if (err)
			goto cleanup;
	}
	if (b->kf.have[KF_HASH_ALLOC])
		hash_maps_grow(b->skel);
	pm = premake__start(b->skel->obj);
	kernel_btf_early(b->skel);
	premake__finish(pm, &b->maps);
	err = gpuleak_bpf__load(b->skel);
	if (o->verifier_stats)
		stats_end(b);
	if (err && o->verifier_stats) {
		/* The caller reports what the verifier said, program by program. */
		*out = b;
		return err;
	}
	if (err) {
		pr_err("loading the BPF programs failed: %s (a kernel with BTF, uprobes and "
		       "BPF ring buffers is needed; -vv shows the verifier log)\n",
		       strerror(-err));
		goto cleanup;
	}
	*out = b;
	return 0;
cleanup:
	bpf_setup__free(b);
	return err;
}

void bpf_setup__free(struct bpf_setup *b)
{
	if (!b)
		return;
	bpf_setup__detach_tracepoints(b);
	gpuleak_bpf__destroy(b->py_skel);
	gpuleak_bpf__destroy(b->skel);
	free(b->logs);
	free(b);
}

int bpf_setup__attach_tracepoints(struct bpf_setup *b)
{
	/* exit, fork, exec (task_links' order), the OOM killer's, the fork hold's */
	struct bpf_program *progs[5] = {
	    b->skel->progs.gl_task_exit, b->skel->progs.gl_fork, b->skel->progs.gl_exec,
	    b->oom_kill ? b->skel->progs.gl_oom_victim : NULL,
	    bpf_program__autoload(b->skel->progs.gl_fork_hold) ? b->skel->progs.gl_fork_hold
							       : NULL};
	struct bpf_link *links[5];
	int errs[5], i, n = 3;

	/* Each rewrites kernel text (~2-3 ms on a VM); from threads they took as long (the
	 * kernel serializes the patching), so one after the other. */
	for (i = 0; i < 5; i++) {
		links[i] = progs[i] ? bpf_program__attach(progs[i]) : NULL;
		errs[i] = links[i] ? 0 : -errno;
	}
	for (i = 0; i < n; i++)
		b->task_links[i] = links[i];
	b->oom_link = links[3];
	b->fork_hold = links[4];
	if (b->oom_kill && !b->oom_link) {
		pr_warn("cannot attach to the OOM killer's mark_victim tracepoint (%s): the "
			"oom-kill trigger is off\n",
			strerror(-errs[3]));
		b->oom_kill = false;
	}
	/* All three with or without --follow: exits, forks (followed, or said) and execs. */
	for (i = 0; i < n; i++) {
		if (!b->task_links[i]) {
			int err = errs[i];

			/* Without them gpuleak still sees exits through pidfds. */
			if (!b->follow) {
				pr_info("no %s tracepoint (%s): %s\n",
					i == 2	 ? "exec"
					: i == 1 ? "fork"
						 : "exit",
					strerror(-err),
					i == 2	 ? "a target that execs keeps its old program's "
						   "memory"
					: i == 1 ? "memory NCCL's init threads make is "
						   "not its communicators'"
						 : "exit status of attached "
						   "processes unknown");
				return 0;
			}
			pr_err("cannot attach to the scheduler's fork/exec/exit tracepoints: %s "
			       "(--follow needs BTF tracepoints, Linux 5.5+)\n",
			       strerror(-err));
			return err;
		}
	}
	if (progs[4]) {
		/* ftrace may refuse a trampoline there (a notrace build): then said, not fatal. */
		if (b->fork_hold)
			b->skel->bss->fork_hold_armed = true;
		else
			pr_warn("cannot attach fexit to schedule_tail (%s), and this kernel has no "
				"%s (Linux %s): %s\n",
				strerror(-errs[4]), kernel__name(KF_SIGNAL_TASK),
				kernel__since(KF_SIGNAL_TASK), kernel__degradation(KF_FORK_FEXIT));
	}
	return 0;
}

bool bpf_setup__fork_hold_late(const struct bpf_setup *b)
{
	return b->fork_hold != NULL;
}

void bpf_setup__fork_unhold(struct bpf_setup *b, pid_t pid)
{
	uint32_t tid = pid;

	if (b->fork_hold)
		bpf_map__delete_elem(b->skel->maps.fork_holds, &tid, sizeof(tid), 0);
}

bool bpf_setup__oom_kill(const struct bpf_setup *b)
{
	return b->oom_kill;
}

void bpf_setup__detach_tracepoints(struct bpf_setup *b)
{
	struct bpf_link *links[2 + sizeof(b->task_links) / sizeof(b->task_links[0])];
	size_t i, n = 0;

	/* No new hold from here: a child stopped by one now would wait for nobody. */
	if (b->fork_hold)
		b->skel->bss->fork_hold_armed = false;
	links[n++] = b->oom_link;
	links[n++] = b->fork_hold;
	for (i = 0; i < sizeof(b->task_links) / sizeof(b->task_links[0]); i++) {
		links[n++] = b->task_links[i];
		b->task_links[i] = NULL;
	}
	b->oom_link = NULL;
	b->fork_hold = NULL;
	links__destroy(links, n);
}

struct bpf_program *bpf_setup__enter_prog(const struct bpf_setup *b)
{
	return b->skel->progs.gl_enter;
}

struct bpf_program *bpf_setup__exit_prog(const struct bpf_setup *b)
{
	return b->skel->progs.gl_exit;
}

struct bpf_program *bpf_setup__usdt_prog(const struct bpf_setup *b)
{
	return b->skel->progs.gl_usdt;
}

int bpf_setup__level_fd(const struct bpf_setup *b)
{
	return bpf_map__fd(b->skel->maps.pid_level);
}

struct bpf_program *bpf_setup__calib_prog(const struct bpf_setup *b, bool ret)
{
	return ret ? b->skel->progs.gl_calib_exit : b->skel->progs.gl_calib_enter;
}

size_t bpf_setup__traced_progs(const struct bpf_setup *b, int *fds, size_t max)
{
	struct bpf_program *progs[] = {b->skel->progs.gl_enter, b->skel->progs.gl_exit,
				       b->skel->progs.gl_usdt};
	size_t i, n = 0;

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]) && n < max; i++)
		if (bpf_program__fd(progs[i]) >= 0)
			fds[n++] = bpf_program__fd(progs[i]);
	return n;
}

int bpf_setup__events_fd(const struct bpf_setup *b)
{
	return bpf_map__fd(b->skel->maps.events);
}

int bpf_setup__fpless_fd(const struct bpf_setup *b)
{
	return b->skel->rodata->unwind_adaptive && b->skel->rodata->unwind_bytes
		   ? bpf_map__fd(b->skel->maps.fpless)
		   : -1;
}

static int set_pid(struct bpf_map *map, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	return bpf_map__update_elem(map, &key, sizeof(key), &one, sizeof(one), 0);
}

static void delete_pid(struct bpf_map *map, pid_t pid)
{
	__u32 key = pid;

	bpf_map__delete_elem(map, &key, sizeof(key), 0);
}

int bpf_setup__trace(struct bpf_setup *b, pid_t pid)
{
	return set_pid(b->skel->maps.traced, pid);
}

bool bpf_setup__hold(struct bpf_setup *b, pid_t pid)
{
	return !set_pid(b->skel->maps.held, pid);
}

void bpf_setup__untrace(struct bpf_setup *b, pid_t pid)
{
	delete_pid(b->skel->maps.traced, pid);
}

int bpf_setup__python(struct bpf_setup *b, pid_t pid, const struct gl_py_cfg *cfg)
{
	__u32 key = pid;
	int err;

	if (!b->python || b->py_failed)
		return b->py_failed ? -ENOEXEC : 0;
	/* Before its first entry: from then on its allocations go to the walk. */
	if (b->py_lazy && !b->py_skel) {
		err = load_python(b);
		if (err) {
			pr_warn(
			    "loading the Python frame walk failed: %s: no Python frames in this "
			    "session\n",
			    strerror(-err));
			b->py_failed = true;
			return err;
		}
	}
	err = bpf_map__update_elem(b->skel->maps.pyprocs, &key, sizeof(key), cfg, sizeof(*cfg), 0);
	if (err)
		return err;
	/* Threads that found no configuration look again. */
	__atomic_add_fetch(&b->skel->bss->py_generation, 1, __ATOMIC_RELAXED);
	return 0;
}

bool bpf_setup__python_on(const struct bpf_setup *b)
{
	return b->python;
}

void bpf_setup__forget(struct bpf_setup *b, pid_t pid)
{
	delete_pid(b->skel->maps.pyprocs, pid);
	delete_pid(b->skel->maps.held, pid);
	delete_pid(b->skel->maps.pid_loss, pid);
	delete_pid(b->skel->maps.pid_level, pid);
	delete_pid(b->skel->maps.traced, pid);
}

int bpf_setup__pid_loss(const struct bpf_setup *b, pid_t pid, __u64 counts[GL_STAT_MAX])
{
	__u32 key = pid;

	return bpf_map__lookup_elem(b->skel->maps.pid_loss, &key, sizeof(key), counts,
				    GL_STAT_MAX * sizeof(counts[0]), 0);
}

const uint64_t *bpf_setup__stack(struct bpf_setup *b, int32_t stack_id)
{
	bool fallback = stack_id >= GL_STACK_FALLBACK;
	__u32 key = fallback ? stack_id - GL_STACK_FALLBACK : stack_id;
	struct bpf_map *map = fallback ? b->skel->maps.stacks2 : b->skel->maps.stacks;

	/* The map's value size, not the buffer's: a lookup copies what the map holds. */
	if (bpf_map_lookup_elem(bpf_map__fd(map), &key, b->stack_buf))
		return NULL;
	/* stacks2 starts with the probed function's address, stacks after it */
	return b->stack_buf + fallback;
}

uint64_t bpf_setup__map_full(const struct bpf_setup *b)
{
	int c, ncpu = libbpf_num_possible_cpus();
	uint64_t *v, sum = 0;
	__u32 k = GL_STAT_MAP_FULL;

	if (ncpu <= 0)
		return 0;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return 0;
	if (!bpf_map__lookup_elem(b->skel->maps.stats, &k, sizeof(k), v, ncpu * sizeof(*v), 0))
		for (c = 0; c < ncpu; c++)
			sum += v[c];
	free(v);
	return sum;
}
