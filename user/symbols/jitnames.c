// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/log.h"
#include "lib/vec.h"
#include "probe/proc_maps.h"
#include "symbols/jitnames.h"
#include "symbols/perfmap.h"
#include "symbols/symbolizer.h"

/* The perf map of one process (jitnames.h says which file). */
struct jit_map {
	pid_t pid;
	uint32_t ns_pid;
	uid_t owner; /* the process's: the file must be its user's, or root's */
	struct perfmap *pm;
	char root[32], path[32]; /* /proc/PID/root, and the map's path inside it */
	int root_fd;		 /* /proc/PID/root held open (root is /proc/self/fd/N), or -1 */
	int err;		 /* of the last read: -ENOENT while there is no file */
	bool tried;		 /* read at least once */
	uint64_t idle_at;	 /* batch + 1 when a read found nothing new */
	uint64_t read_at;	 /* batch + 1 once read at the batch's first lookup */
	uint8_t checks;		 /* unnamed frames looked up in /proc/PID/maps for the hint */
	bool hinted, said;	 /* the hint given; -v said the file names frames */
	bool warned;		 /* a file not trusted, or full */
};

struct jitnames {
	struct jit_map *jits;
	size_t nr_jits, cap_jits;
	jitnames_how_fn how;
	void *how_ctx;
	uint64_t frames, reads;
};

int jitnames__new(jitnames_how_fn how, void *ctx, struct jitnames **out)
{
	struct jitnames *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->how = how;
	j->how_ctx = ctx;
	*out = j;
	return 0;
}

void jitnames__free(struct jitnames *j)
{
	size_t i;

	if (!j)
		return;
	for (i = 0; i < j->nr_jits; i++) {
		perfmap__free(j->jits[i].pm);
		if (j->jits[i].root_fd >= 0)
			close(j->jits[i].root_fd);
	}
	free(j->jits);
	free(j);
}

void jitnames__stats(const struct jitnames *j, uint64_t *frames, uint64_t *reads)
{
	*frames = j->frames;
	*reads = j->reads;
}

/* pid as the process sees itself: the last NSpid of its status (its own pid namespace). */
static uint32_t ns_pid_of(pid_t pid)
{
	char path[64], *line = NULL, *p, *end;
	uint32_t ns = (uint32_t)pid;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return ns;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		for (p = line + 6;; p = end) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			ns = (uint32_t)v;
		}
		break;
	}
	free(line);
	fclose(f);
	return ns;
}

static struct jit_map *jit_get(struct jitnames *jn, pid_t pid)
{
	struct jit_map *j;
	struct stat st;
	char proc[32];
	size_t i;

	for (i = 0; i < jn->nr_jits; i++)
		if (jn->jits[i].pid == pid)
			return &jn->jits[i];
	if (vec_grow((void **)&jn->jits, &jn->cap_jits, jn->nr_jits, sizeof(*jn->jits)))
		return NULL;
	j = &jn->jits[jn->nr_jits];
	*j = (struct jit_map){.pid = pid, .err = -ENOENT, .owner = (uid_t)-1, .root_fd = -1};
	if (perfmap__new(&j->pm))
		return NULL;
	jn->nr_jits++;
	j->ns_pid = ns_pid_of(pid);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (!stat(proc, &st))
		j->owner = st.st_uid;
	snprintf(j->root, sizeof(j->root), "/proc/%d/root", (int)pid);
	snprintf(j->path, sizeof(j->path), "/tmp/perf-%u.map", j->ns_pid);
	j->root_fd = open(j->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (j->root_fd >= 0)
		snprintf(j->root, sizeof(j->root), "/proc/self/fd/%d", j->root_fd);
	return j;
}

int jitnames__hold(struct jitnames *jn, pid_t pid)
{
	return jit_get(jn, pid) ? 0 : -ENOMEM;
}

/* Read what the process appended to its perf map; 1 when that added entries. */
static int jit_refresh(struct jitnames *jn, struct jit_map *j, uint64_t batch)
{
	struct perfmap_stats st;
	int err = perfmap__refresh(j->pm, j->root, j->path, j->owner);

	j->tried = true;
	j->err = err < 0 ? err : 0;
	/* The map is open: the process's root is no longer needed to read it. */
	if (err >= 0 && j->root_fd >= 0) {
		close(j->root_fd);
		j->root_fd = -1;
		snprintf(j->root, sizeof(j->root), "/proc/%d/root", (int)j->pid);
	}
	j->idle_at = err > 0 ? 0 : batch + 1;
	if (err > 0) {
		jn->reads++;
		if (!j->said) {
			j->said = true;
			perfmap__stats(j->pm, &st);
			pr_info("pid %d: naming JIT code from /tmp/perf-%u.map (%zu entries)\n",
				j->pid, j->ns_pid, st.entries);
		}
	} else if ((err == -EPERM || err == -ENOSPC) && !j->warned) {
		j->warned = true;
		if (err == -EPERM)
			pr_warn("pid %d: not reading /tmp/perf-%u.map: not a regular file owned by "
				"the process's user or root\n",
				j->pid, j->ns_pid);
		else
			pr_warn("pid %d: /tmp/perf-%u.map holds more than %u entries or %u MiB of "
				"names: code compiled after those is not named\n",
				j->pid, j->ns_pid, PERFMAP_MAX_ENTRIES,
				PERFMAP_MAX_NAME_BYTES >> 20);
	}
	return err;
}

/* Once per process without a perf map: which frames have no names, and how to name them. */
static void jit_hint(struct jitnames *jn, struct jit_map *j, const char *frames)
{
	j->hinted = true;
	pr_warn("pid %d: %s have no names without /tmp/perf-%u.map: %s\n", j->pid, frames,
		j->ns_pid, jn->how(jn->how_ctx, j->pid));
}

/* An address no mapped file and no perf map names: say how to name it, if it is JIT code. */
static void jit_unnamed(struct jitnames *jn, struct jit_map *j, uint64_t addr)
{
	struct proc_maps *m = NULL;
	const struct pmap_ent *e;
	char what[96];
	bool anon;

	/* A bad frame of a walk through code without frame pointers is no reason to look. */
	if (j->hinted || j->err != -ENOENT || j->checks >= 8)
		return;
	j->checks++;
	if (proc_maps__load(j->pid, &m))
		return;
	e = proc_maps__find(m, addr);
	anon = e && e->exec && !e->ino;
	proc_maps__free(m);
	if (!anon)
		return;
	snprintf(what, sizeof(what),
		 "stack frames in JIT code (anonymous executable memory, 0x%" PRIx64 ")", addr);
	jit_hint(jn, j, what);
}

/* Name addr, in no mapped file, from pid's perf map (read on when it does not cover addr). */
int jitnames__resolve(struct jitnames *jn, pid_t pid, uint64_t addr, uint64_t batch,
		      struct sym_info *si)
{
	struct jit_map *j;
	char *func, *where;
	const char *name;
	uint64_t start;
	int n;

	/* Below mmap_min_addr or above any user address space: a bad frame, never code. */
	if (addr < 0x10000 || addr >> 56)
		return 0;
	j = jit_get(jn, pid);
	if (!j)
		return -ENOMEM;
	/*
	 * Read on at a batch's first lookup, whether or not what was read covers addr: a JIT
	 * reuses the memory of code it freed, and an entry read before may name the code that
	 * was there, when the code the stack ran (compiled since, its entry written before it
	 * ran) is in the part not read yet. Stale names of that kind (node's internal modules
	 * in place of the tfjs frames above a buffer) split one site's stacks in CI.
	 */
	if (j->read_at != batch + 1) {
		j->read_at = batch + 1;
		if (j->idle_at != batch + 1)
			jit_refresh(jn, j, batch);
	}
	name = perfmap__find(j->pm, addr, &start);
	/* Past what was read: read on, once per batch of frames when there is nothing new. */
	if (!name && j->idle_at != batch + 1 && jit_refresh(jn, j, batch) > 0)
		name = perfmap__find(j->pm, addr, &start);
	if (!name) {
		jit_unnamed(jn, j, addr);
		return 0;
	}
	if (perfmap__describe(name, &func, &where))
		return -ENOMEM;
	/* No source location: the object is the map the name came from, as perf says. */
	n = where ? 0 : asprintf(&where, "perf-%u.map", j->ns_pid);
	if (n < 0) {
		free(func);
		return -ENOMEM;
	}
	si->func = func;
	si->module = where;
	/* What --site-skip globs and JavaScript sites look at: the script's whole path. */
	si->file = perfmap__script(name);
	si->func_off = addr - start;
	jn->frames++;
	return 0;
}

/*
 * V8 runs the functions it interprets in one shared entry of its own, named
 * Builtins_InterpreterEntryTrampoline, unless asked for a copy per function in anonymous
 * memory: such a frame says JavaScript runs there unnamed (when there is no perf map: with one,
 * a few functions of V8's snapshot run there anyway).
 */
int jitnames__interp_hint(struct jitnames *jn, pid_t pid, const char *func, uint64_t batch)
{
	struct jit_map *j;

	if (strcmp(func, "Builtins_InterpreterEntryTrampoline"))
		return 0;
	j = jit_get(jn, pid);
	if (!j)
		return -ENOMEM;
	if (!j->tried)
		jit_refresh(jn, j, batch);
	if (!j->hinted && j->err == -ENOENT)
		jit_hint(jn, j, "JavaScript frames (in V8's interpreter entry)");
	return 0;
}
