/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A BPF object's maps, made before libbpf loads the object, several at once and beside the
 * caller's own work. Making them is the largest part of a start's kernel time: the ring's
 * pages, the stack maps' and hash tables' preallocated elements, each allocated and charged
 * page by page (~45 ms one after another on the 2-CPU VM, `make bench` attach section). The
 * kernel makes maps on different CPUs in parallel, and libbpf, which makes them one by one,
 * takes made ones as its own (bpf_map__reuse_fd).
 */
#ifndef GPULEAK_LIVE_PREMAKE_H
#define GPULEAK_LIVE_PREMAKE_H

#include <stddef.h>
#include <stdint.h>

struct bpf_object;

struct premake_stats {
	size_t made;	  /* maps made here and handed to libbpf */
	size_t failed;	  /* left to libbpf, which makes them (and says why, if it cannot) */
	size_t threads;	  /* that made them */
	uint64_t wall_ns; /* from the first map begun to the last handed over */
};

struct premake;

/*
 * Begins making obj's maps that need nothing libbpf alone knows (its own data sections, maps
 * whose values need BTF, maps it must not create) on up to one thread per online CPU (at
 * most 4), sharing them out by the memory each allocates. After every size is set; the
 * caller goes on with its own work. NULL (no memory) leaves them all to libbpf.
 */
struct premake *premake__start(struct bpf_object *obj);
/*
 * Waits for them and hands each to libbpf; before bpf_object__load(). Never fails: a map
 * that could not be made is left to libbpf. Frees pm.
 */
void premake__finish(struct premake *pm, struct premake_stats *st);

#endif
