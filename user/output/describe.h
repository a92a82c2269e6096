/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The words the writers share for what the analysis holds: a site's name, device column and
 * owner kind, the names of process states, violations, step sources, classes and losses.
 * One place, so the text report, the NDJSON and the metrics call a thing the same.
 */
#ifndef GPULEAK_OUTPUT_DESCRIBE_H
#define GPULEAK_OUTPUT_DESCRIBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "engine/query.h"
#include "probe/catalog.h"

struct report;
struct timeline;

/*
 * A site's name as every output prints it: its caller symbolized (the frame that names it
 * instead, for a call from Python), "?" without one.
 */
const char *describe__site(const struct report *r, const struct site *s);
enum cat_mem describe__mem(const struct site *s);
/* The DEV column: a CUDA ordinal, host, or a WebGPU device as wgpu#N (order of first sight). */
void describe__device(const struct tracker *t, const struct site *s, char *buf, size_t len);
/* "context", "communicator", "device", "layer"; NULL for none. */
const char *describe__owner_kind(uint8_t kind);

/*
 * What of a live site's memory an entry is (the NDJSON kind): "live"; a VMM handle never
 * released ("handle_not_released"); an IPC mapping never closed ("mapping_not_closed"), an
 * imported handle or a multicast object never released ("import_not_released",
 * "multicast_not_released"); memory a graph exec holds ("held_by_graph").
 */
const char *describe__live_kind(const struct site *s);
/* A pool's kind and state for reports: "default", "created", "graph"; its handle or NULL. */
const char *describe__pool_kind(uint8_t kind);

/* "running", "exited", "detached", "exec", "ended". */
const char *describe__proc_state(const struct tproc *p);
/* "once", "max", ...: the NDJSON names of enum violation_kind. */
const char *describe__violation(uint8_t kind);
/* Where a violation happened, named as its site. */
const char *describe__violation_site(const struct report *r, const struct violation *v);
/* "interval", "sync", "sym", "nvtx". */
const char *describe__step_source(const struct timeline *tl);
/* What a rule, or the first step, made of a site's memory: "persistent", "init", ... */
const char *describe__site_class(const struct site *s);
/* A BPF loss counter's name (GL_STAT_*), NULL for one no output names. */
const char *describe__loss(int stat);

struct shutdown_release;
struct proc_verdict;

/* "freed", "owner": the NDJSON names of enum release_how. */
const char *describe__release_how(uint8_t how);
/*
 * How memory went at shutdown, in words: "freed at shutdown (cudaFree)", "released at
 * shutdown by cudaDeviceReset", "released when its device was destroyed (wgpuDeviceDestroy)".
 */
void describe__release(const struct site *s, const struct shutdown_release *by, char *buf,
		       size_t len);
/*
 * How the memory of growth leak i of pv ended, in words: what released it at shutdown, and
 * what is still live at exit ("released at shutdown by cudaDeviceReset"). NULL (buf
 * untouched) when the process did not shut down (it runs on, or was detached).
 */
const char *describe__growth_end(const struct report *r, const struct proc_verdict *pv, size_t i,
				 char *buf, size_t len);

#endif
