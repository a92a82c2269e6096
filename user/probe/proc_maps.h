/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A snapshot of /proc/PID/maps: which file is mapped where in a target. */
#ifndef GPULEAK_PROBE_PROC_MAPS_H
#define GPULEAK_PROBE_PROC_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pmap_ent {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff; /* file offset of start */
	uint64_t dev;	/* makedev(major, minor) as printed in maps */
	uint64_t ino;
	bool exec;    /* r-xp: code, where probes and call sites live */
	bool deleted; /* the file was unlinked after mapping */
	char *path;   /* NULL for anonymous mappings */
};

struct proc_maps {
	pid_t pid;
	struct pmap_ent *v; /* sorted by start */
	size_t n;
};

/* Returns 0 or -errno (-ESRCH when the process is gone). */
int proc_maps__load(pid_t pid, struct proc_maps **out);
void proc_maps__free(struct proc_maps *m);
/*
 * Whether m->v[i] is the first executable mapping of a file: where an object's module is
 * looked up, once per object however many times it is mapped.
 */
bool proc_maps__first_exec(const struct proc_maps *m, size_t i);
/* The mapping containing addr, or NULL. */
const struct pmap_ent *proc_maps__find(const struct proc_maps *m, uint64_t addr);
/*
 * A path through which this process's mapping can be opened by us: /proc/PID/map_files/...
 * reaches the mapped inode even inside another mount namespace or after unlink.
 */
void proc_maps__open_path(pid_t pid, const struct pmap_ent *e, char *buf, size_t len);

#endif
