// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The running kernel's BPF and tracing features, probed the way libbpf probes its own: a test
 * load of the smallest program that needs the feature (libbpf_probe_bpf_*), or the kernel's BTF
 * where a load cannot tell (a tracepoint's arguments, a kfunc). Nothing here is keyed on the
 * version string: distribution kernels backport features (RHEL 9's 5.14) and builds differ
 * (private stacks depend on the JIT and the build), so a version is printed, never trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include "lib/json.h"
#include "lib/log.h"
#include "lib/rundir.h"
#include "live/kernel.h"

struct kfeat_info {
	const char *name;
	const char *since; /* first upstream release that has it */
	/* NULL: part of the floor (gpuleak refuses without it); else what is given up */
	const char *without;
};

static const struct kfeat_info kfeats[KF_MAX] = {
    [KF_BTF] = {"BTF (/sys/kernel/btf/vmlinux)", "5.4", NULL},
    [KF_RINGBUF] = {"BPF ring buffer", "5.8", NULL},
    [KF_TASK_STORAGE] = {"task storage maps", "5.11", NULL},
    [KF_BTF_TP] = {"BTF tracepoints (tp_btf)", "5.5", NULL},
    [KF_COOKIE] = {"uprobe attach cookies", "5.15", NULL},
    [KF_UPROBES] = {"perf uprobe PMU", "4.17", NULL},
    [KF_UPROBE_MULTI] = {"uprobe_multi links", "6.6",
			 "one classic uprobe link per probe, same cookies (slower attach and "
			 "detach)"},
    [KF_LOOP] = {"bpf_loop", "5.17", "no Python frames (--python-depth is off)"},
    [KF_FIND_VMA] = {"bpf_find_vma", "5.17", "no --unwind dwarf (frame-pointer stacks only)"},
    [KF_PRIV_STACK] = {"BPF private stacks for uprobes", "6.13",
		       "nothing: every program fits 512 bytes of stack"},
    [KF_TASK_FROM_PID] = {"bpf_task_from_pid kfunc", "6.2",
			  "a gpuleak killed by SIGKILL cannot resume processes it held "
			  "stopped"},
    [KF_SIGNAL_TASK] = {"bpf_send_signal_task kfunc", "6.13",
			"nothing: a forked child (--follow) stops itself, from fexit on "
			"schedule_tail"},
    /* Needed only without bpf_send_signal_task: the hold a forked child puts on itself. */
    [KF_FORK_FEXIT] = {"fexit on schedule_tail", "5.5",
		       "--follow before 6.13: a forked child runs before its probes are in place"},
    [KF_EXIT_GROUP_DEAD] = {"sched_process_exit group_dead argument", "6.16",
			    "nothing: the last thread is told by the group's live count"},
    [KF_MARK_VICTIM] = {"oom:mark_victim with the task", "5.19", "watch: no OOM-killer trigger"},
    [KF_BPF_STATS] = {"BPF run-time statistics", "5.8",
		      "the overhead estimate leaves out the programs' own run time"},
    [KF_HASH_ALLOC] = {"hash tables allocated as they fill (bpf_mem_alloc)", "6.1",
		       "nothing: the hash tables are preallocated (a few ms more at start)"},
};

const char *kernel__name(enum kfeat f)
{
	return f < KF_MAX ? kfeats[f].name : "?";
}

const char *kernel__since(enum kfeat f)
{
	return f < KF_MAX ? kfeats[f].since : "?";
}

const char *kernel__degradation(enum kfeat f)
{
	return f < KF_MAX ? kfeats[f].without : NULL;
}

bool kernel__degrades(const struct kernel_features *k, enum kfeat f)
{
	if (f >= KF_MAX || k->have[f] || !kfeats[f].without)
		return false;
	/* The fork hold's fallback matters only where the kfunc is missing. */
	if (f == KF_FORK_FEXIT)
		return !k->have[KF_SIGNAL_TASK];
	return strncmp(kfeats[f].without, "nothing:", 8) != 0;
}

/* ---- probes ---- */

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static bool helper_ok(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, NULL) == 1;
}

/*
 * BPF_TRACE_UPROBE_MULTI: a kernel that has it answers a link on a directory with EBADF
 * (after checking the attach type), one that lacks it EINVAL, as libbpf's own probe reads it.
 */
static bool uprobe_multi_ok(void)
{
	struct bpf_insn insns[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, popts, .expected_attach_type = BPF_TRACE_UPROBE_MULTI);
	LIBBPF_OPTS(bpf_link_create_opts, lopts);
	unsigned long offset = 0;
	int prog, link, err;

	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &popts);
	if (prog < 0)
		return false;
	lopts.uprobe_multi.path = "/";
	lopts.uprobe_multi.offsets = &offset;
	lopts.uprobe_multi.cnt = 1;
	link = bpf_link_create(prog, -1, BPF_TRACE_UPROBE_MULTI, &lopts);
	err = link < 0 ? -errno : 0;
	if (link >= 0)
		close(link);
	close(prog);
	return link < 0 && err == -EBADF;
}

/*
 * Whether an fexit program on fn loads: the function in BTF, and tracing programs allowed
 * (some builds refuse them with EPERM: no trampolines, or lockdown). Whether ftrace lets a
 * trampoline on it is known at the attach (bpf_setup__attach_tracepoints says so then).
 */
static bool fexit_ok(const struct btf *btf, const char *fn)
{
	struct bpf_insn insns[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, popts, .expected_attach_type = BPF_TRACE_FEXIT);
	int id = btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC), prog;

	if (id <= 0)
		return false;
	popts.attach_btf_id = id;
	prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, 2, &popts);
	if (prog < 0)
		return false;
	close(prog);
	return true;
}

/*
 * Whether a uprobe program and the subprogram it calls may use more than 512 bytes of stack
 * together: two frames of 320 bytes each, refused without private stacks. gpuleak never relies
 * on it (its own programs are checked to fit 512: tests/test_kernel.py); the table says it.
 */
static bool priv_stack_ok(void)
{
	struct bpf_insn insns[] = {
	    /* *(u64 *)(r10 - 320) = 0; call +3; r0 = 0; exit */
	    {.code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -320, .imm = 0},
	    {.code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_CALL, .imm = 2},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	    /* the subprogram: *(u64 *)(r10 - 320) = 0; r0 = 0; exit */
	    {.code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -320, .imm = 0},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns,
				 sizeof(insns) / sizeof(insns[0]), NULL);

	if (prog < 0)
		return false;
	close(prog);
	return true;
}

/* The number of parameters of tracepoint tp's BTF prototype (its first, void *, included). */
static int tp_params(const struct btf *btf, const char *tp, const struct btf_param **params)
{
	char name[128];
	const struct btf_type *t;
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	/* typedef -> pointer -> function prototype (void *, ...) */
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_func_proto(t))
		return -1;
	*params = btf_params(t);
	return btf_vlen(t);
}

/* Whether parameter i of tracepoint tp is a pointer to struct `type`. */
static bool tp_param_is(const struct btf *btf, const char *tp, int i, const char *type)
{
	const struct btf_param *p;
	const struct btf_type *t;

	if (tp_params(btf, tp, &p) <= i)
		return false;
	t = btf__type_by_id(btf, p[i].type);
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	return t && btf_is_struct(t) && !strcmp(btf__name_by_offset(btf, t->name_off), type);
}

static int read_int(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* /sys/kernel/security/lockdown: "[none] integrity confidentiality", the mode in brackets. */
static void read_lockdown(char *out, size_t size)
{
	char buf[128], *a, *b;
	FILE *f = fopen("/sys/kernel/security/lockdown", "re");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f) && (a = strchr(buf, '[')) && (b = strchr(a, ']'))) {
		*b = 0;
		snprintf(out, size, "%s", a + 1);
	}
	fclose(f);
}

/* What /proc and /sys say: read at every start, never cached. */
static void read_cheap(struct kernel_features *k)
{
	struct utsname u;

	if (!uname(&u))
		snprintf(k->release, sizeof(k->release), "%s", u.release);
	k->have[KF_UPROBES] = !access("/sys/bus/event_source/devices/uprobe/type", R_OK);
	k->perf_event_paranoid = read_int("/proc/sys/kernel/perf_event_paranoid");
	k->unprivileged_bpf_disabled = read_int("/proc/sys/kernel/unprivileged_bpf_disabled");
	k->have[KF_BPF_STATS] = !access("/proc/sys/kernel/bpf_stats_enabled", F_OK);
	read_lockdown(k->lockdown, sizeof(k->lockdown));
	k->tracefs = !access("/sys/kernel/tracing/events", F_OK) ||
		     !access("/sys/kernel/debug/tracing/events", F_OK);
}

void kernel__probe(struct kernel_features *k)
{
	libbpf_print_fn_t old = libbpf_set_print(silent_print);
	struct btf *btf = btf__load_vmlinux_btf();

	memset(k, 0, sizeof(*k));
	k->have[KF_BTF] = btf != NULL;
	read_cheap(k);
	/* A test load needs CAP_BPF (or root); without it everything reads as missing. */
	k->probed = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL) == 1;
	if (k->probed) {
		k->have[KF_RINGBUF] = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
		k->have[KF_TASK_STORAGE] =
		    libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
		k->have[KF_COOKIE] = helper_ok(BPF_FUNC_get_attach_cookie);
		k->have[KF_LOOP] = helper_ok(BPF_FUNC_loop);
		k->have[KF_FIND_VMA] = helper_ok(BPF_FUNC_find_vma);
		k->have[KF_UPROBE_MULTI] = uprobe_multi_ok();
		k->have[KF_PRIV_STACK] = priv_stack_ok();
	}
	if (btf) {
		const struct btf_param *p;

		k->have[KF_TASK_FROM_PID] =
		    btf__find_by_name_kind(btf, "bpf_task_from_pid", BTF_KIND_FUNC) > 0;
		k->have[KF_SIGNAL_TASK] =
		    btf__find_by_name_kind(btf, "bpf_send_signal_task", BTF_KIND_FUNC) > 0;
		k->have[KF_FORK_FEXIT] = k->probed && fexit_ok(btf, "schedule_tail");
		/* The btf_trace_* prototypes came with tp_btf programs (5.5). */
		k->have[KF_BTF_TP] = tp_params(btf, "sched_process_exit", &p) >= 2;
		/* (void *, struct task_struct *, bool group_dead) */
		k->have[KF_EXIT_GROUP_DEAD] = tp_params(btf, "sched_process_exit", &p) >= 3;
		k->have[KF_MARK_VICTIM] = tp_param_is(btf, "mark_victim", 1, "task_struct");
		/* The allocator came with the verifier's leave to use it from tracing programs
		 * (before it: a WARN, once, for every non-preallocated hash table). */
		k->have[KF_HASH_ALLOC] =
		    btf__find_by_name_kind(btf, "bpf_mem_alloc", BTF_KIND_STRUCT) > 0;
		btf__free(btf);
	}
	libbpf_set_print(old);
}

/*
 * ---- the cache ----
 * The test loads and the BTF lookups (a parse of the kernel's BTF: tens of milliseconds, a
 * tenth of a second on a loaded VM) say the same until the next boot; what this build of
 * gpuleak asks of them changes with the build. So their answers are kept per boot id and
 * build id, in a file only this user can write: /run/gpuleak as root, else
 * $XDG_RUNTIME_DIR/gpuleak (both emptied at boot). What /proc and /sys say is read each time.
 */
#define CACHE_MAGIC "gpuleak-kernel-features 1"

/* The file for this boot and this build, "" when there is none to use. */
static void cache_path(char *out, size_t size)
{
	char boot[64] = "", dir[200];
	const char *build = rundir__build_id();
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	out[0] = 0;
	if (f) {
		if (!fscanf(f, "%63s", boot))
			boot[0] = 0;
		fclose(f);
	}
	if (!boot[0] || !build[0] || !rundir__dir(dir, sizeof(dir)))
		return;
	snprintf(out, size, "%s/kernel-%s-%s", dir, boot, build);
}

static bool cache_read(const char *path, struct kernel_features *k)
{
	char magic[64];
	unsigned long long bits;
	int probed, i;
	size_t len;
	char *line = rundir__read(path, 255, &len);
	bool ok;

	if (!line)
		return false;
	ok = sscanf(line, "%63[^0-9]%*d %d %llx", magic, &probed, &bits) == 3 &&
	     !strncmp(line, CACHE_MAGIC " ", strlen(CACHE_MAGIC) + 1) && probed == 1 &&
	     !(bits >> KF_MAX);
	free(line);
	if (!ok)
		return false;
	k->probed = true;
	for (i = 0; i < KF_MAX; i++)
		k->have[i] = bits >> i & 1;
	return true;
}

static void cache_write(const char *path, const struct kernel_features *k)
{
	unsigned long long bits = 0;
	char line[128];
	int i, n;

	for (i = 0; i < KF_MAX; i++)
		bits |= (unsigned long long)k->have[i] << i;
	n = snprintf(line, sizeof(line), CACHE_MAGIC " 1 %llx\n", bits);
	/* Not written: probed again at the next start. */
	(void)rundir__write(path, line, (size_t)n);
}

bool kernel__probe_cached(struct kernel_features *k, char *path, size_t path_size)
{
	struct kernel_features now;

	cache_path(path, path_size);
	if (!path[0] || !cache_read(path, &now)) {
		kernel__probe(k);
		/* Only answers the test loads gave: without the privilege they all read missing. */
		if (path[0] && k->probed)
			cache_write(path, k);
		return false;
	}
	*k = now;
	read_cheap(k);
	return true;
}

/* The floor, in the order a refusal names the first missing. */
static const enum kfeat floor_feats[] = {KF_BTF,	  KF_BTF_TP, KF_RINGBUF,
					 KF_TASK_STORAGE, KF_COOKIE, KF_UPROBES};

enum kfeat kernel__below_floor(const struct kernel_features *k)
{
	size_t i;

	for (i = 0; i < sizeof(floor_feats) / sizeof(floor_feats[0]); i++)
		if (!k->have[floor_feats[i]])
			return floor_feats[i];
	return KF_MAX;
}

const char *kernel__refusal(enum kfeat f)
{
	static char line[256];

	snprintf(line, sizeof(line),
		 "this kernel has no %s (Linux %s and later have it): gpuleak needs Linux 5.15 "
		 "or later",
		 kernel__name(f), kernel__since(f));
	return line;
}

/* ---- the table ---- */

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

void kernel__print(const struct kernel_features *k, FILE *out, bool json)
{
	enum kfeat below = kernel__below_floor(k);
	int f;

	if (json) {
		fprintf(out, "{\"release\":");
		json_str(out, k->release);
		fprintf(out, ",\"probed\":%s,\"features\":[", k->probed ? "true" : "false");
		for (f = 0; f < KF_MAX; f++) {
			fprintf(out, "%s{\"name\":", f ? "," : "");
			json_str(out, kfeats[f].name);
			fprintf(out, ",\"since\":\"%s\",\"present\":%s,\"floor\":%s,\"without\":",
				kfeats[f].since, k->have[f] ? "true" : "false",
				kfeats[f].without ? "false" : "true");
			if (kfeats[f].without)
				json_str(out, kfeats[f].without);
			else
				fputs("null", out);
			fputc('}', out);
		}
		fprintf(out,
			"],\"perf_event_paranoid\":%d,\"unprivileged_bpf_disabled\":%d,"
			"\"lockdown\":",
			k->perf_event_paranoid, k->unprivileged_bpf_disabled);
		json_str(out, k->lockdown[0] ? k->lockdown : "unknown");
		fprintf(out, ",\"tracefs\":%s,\"supported\":%s", k->tracefs ? "true" : "false",
			below == KF_MAX ? "true" : "false");
		if (below != KF_MAX) {
			fputs(",\"refusal\":", out);
			json_str(out, kernel__refusal(below));
		}
		fputs("}\n", out);
		return;
	}
	fprintf(out, "kernel %s\n", k->release);
	if (!k->probed)
		fprintf(out, "(not root: BPF features could not be test-loaded and read as "
			     "missing)\n");
	fprintf(out, "%-40s %-6s %-7s %s\n", "FEATURE", "SINCE", "HERE", "WITHOUT IT");
	for (f = 0; f < KF_MAX; f++)
		fprintf(out, "%-40s %-6s %-7s %s\n", kfeats[f].name, kfeats[f].since,
			yes_no(k->have[f]),
			kfeats[f].without ? kfeats[f].without : "gpuleak does not run (floor)");
	fprintf(out, "%-40s %s\n", "tracefs mounted", yes_no(k->tracefs));
	fprintf(out, "%-40s %s\n", "lockdown", k->lockdown[0] ? k->lockdown : "unknown");
	fprintf(out, "%-40s %d%s\n", "kernel.perf_event_paranoid", k->perf_event_paranoid,
		k->perf_event_paranoid < 0 ? " (unreadable)" : "");
	fprintf(out, "%-40s %d%s\n", "kernel.unprivileged_bpf_disabled",
		k->unprivileged_bpf_disabled,
		k->unprivileged_bpf_disabled != 0 ? " (gpuleak runs as root or with CAP_BPF, "
						    "CAP_PERFMON, CAP_SYS_ADMIN)"
						  : "");
	if (below != KF_MAX) {
		fprintf(out, "gpuleak on this kernel: refuses: %s\n", kernel__refusal(below));
		return;
	}
	fprintf(out, "gpuleak on this kernel: runs");
	for (f = 0, below = 0; f < KF_MAX; f++) {
		if (!kernel__degrades(k, f))
			continue;
		fprintf(out, "%s%s", below++ ? "; " : ", degraded: ", kfeats[f].without);
	}
	fputs(below ? "\n" : ", with every feature\n", out);
}
