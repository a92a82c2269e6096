// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include "gpuleak.h"
#include "lib/log.h"
#include "live/bpf_setup.h"
#include "live/fpless.h"
#include "live/live.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/symbolizer.h"

/*
 * The C library and the dynamic linker are where every walk ends (a thread's start, main's
 * caller) and call back into a program rarely: built without frame pointers as
 * distributions build them, they would make every walk "end in code without frame
 * pointers" and every allocation pay a copy. The symbolizer knows their roots as the end of
 * a sound walk (walk_root).
 */
static bool walk_end_object(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "ld-linux", 8) ||
	       !strncmp(b, "ld-musl", 7);
}

/*
 * A mapping of code the frame-pointer walk cannot be trusted through but CFI can unwind.
 * Judged once per version of the file (objfacts.h): the judgement reads the object's code
 * and its debug file, most of what attaching to a process cost after the scans.
 */
static bool fpless_code(struct live *l, const struct proc_maps *m, const struct pmap_ent *e)
{
	struct module *mod;
	struct elf_obj *elf;
	unsigned int facts;
	uint64_t bias;
	bool fpless;

	if (!e->exec || !e->path || e->path[0] != '/' || walk_end_object(e->path))
		return false;
	mod = modules__get(l->mods, m->pid, e);
	facts = mod ? module__facts(mod) : 0;
	if (facts & OBJF_FP_JUDGED)
		return facts & OBJF_FPLESS;
	/* No object to read (yet): judged again next time. */
	elf = symbolizer__object(l->sym, m->pid, e->start, &bias);
	if (!elf)
		return false;
	/* -1: no sized function symbols to judge by (glibc's stub libraries): no copies. */
	fpless = symbolizer__object_fp(l->sym, m->pid, e->start) == 0 && elf_obj__has_eh_frame(elf);
	if (mod)
		module__learn(mod, OBJF_FP_JUDGED | (fpless ? OBJF_FPLESS : 0));
	return fpless;
}

static void add_range(struct gl_fpless *v, uint64_t start, uint64_t end)
{
	if (v->nr && v->r[v->nr - 1].end == start) {
		v->r[v->nr - 1].end = end;
	} else if (v->nr < GL_FPLESS_MAX) {
		v->r[v->nr].start = start;
		v->r[v->nr].end = end;
		v->nr++;
	} else {
		/* Full: the last range grows over what lies between (more copies, none missed;
		 * mappings are sorted). */
		v->r[v->nr - 1].end = end;
	}
	v->lo = !v->lo || start < v->lo ? start : v->lo;
	v->hi = end > v->hi ? end : v->hi;
}

int fpless__scan(struct live *l, const struct proc_maps *m)
{
	int fd = bpf_setup__fpless_fd(l->bpf);
	struct gl_fpless v = {0}, old;
	__u32 pid = (__u32)m->pid;
	/* One count for all processes: a pid reused never meets judgements of its old ranges. */
	static __u32 gen;
	static bool said;
	bool had;
	size_t i;
	int err;

	if (fd < 0)
		return 0;
	for (i = 0; i < m->n; i++)
		if (fpless_code(l, m, &m->v[i]))
			add_range(&v, m->v[i].start, m->v[i].end);
	had = !bpf_map_lookup_elem(fd, &pid, &old);
	if (!v.nr) {
		err = had ? bpf_map_delete_elem(fd, &pid) : 0;
		return err && errno != ENOENT ? -errno : 0;
	}
	if (had && old.nr == v.nr && old.lo == v.lo && old.hi == v.hi &&
	    !memcmp(old.r, v.r, v.nr * sizeof(v.r[0])))
		return 0;
	/* Judgements of the old ranges are stale from now on (the BPF side compares gens). */
	v.gen = ++gen;
	if (bpf_map_update_elem(fd, &pid, &v, BPF_ANY)) {
		err = -errno;
		if (!said)
			pr_warn("pid %u: stacks through code without frame pointers will not be "
				"unwound: %s\n",
				pid, strerror(-err));
		said = true;
		return err;
	}
	pr_debug("pid %u: %u ranges of code without frame pointers, unwound by copies\n", pid,
		 v.nr);
	return 0;
}

void fpless__forget(struct live *l, pid_t pid)
{
	int fd = bpf_setup__fpless_fd(l->bpf);
	__u32 key = (__u32)pid;

	if (fd >= 0)
		bpf_map_delete_elem(fd, &key);
}
