/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The registry of mapped files (modules) seen in any target, keyed by device and inode: the
 * same library mapped by many processes is opened and scanned once. Attach uses a module's
 * probe sites, the symbolizer its symbols.
 */
#ifndef GPULEAK_PROBE_MODULES_H
#define GPULEAK_PROBE_MODULES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "probe/insn.h"
#include "probe/objfacts.h"
#include "probe/proc_maps.h"
#include "probe/wgpu_abi.h"

struct elf_obj;
struct cat_api;
struct dawn_procs;

/* Where a probe site's address came from. */
enum site_source {
	SITE_SYMBOL = 0,     /* a function symbol (.dynsym or .symtab) */
	SITE_DAWN_PROCS = 1, /* Dawn's proc table, recovered from the object (dawn_procs.h) */
};

/* One traced function found in a module. */
struct probe_site {
	const struct cat_api *api;
	uint64_t offset; /* file offset: where the uprobe goes */
	uint64_t vaddr;
	bool local;		      /* found only in .symtab (static cudart, stripped .dynsym) */
	uint8_t source;		      /* enum site_source */
	bool slow;		      /* the probe's instruction is single-stepped by the kernel */
	uint64_t entry_offset;	      /* file offset of the function's entry (offset - moved) */
	struct probe_placement place; /* why the probe is where it is (insn.h) */
};

/* A USDT probe of a module: every site (SDT note) of one provider:name. */
struct usdt_probe {
	char *provider, *name;
	char *args;		   /* the argument specs of its first site */
	const struct cat_api *api; /* the catalog's probe, or NULL (a marker may name it) */
	unsigned int nr_sites;
	uint64_t pc_off;     /* the first site's file offset */
	uint64_t sema_vaddr; /* its semaphore, 0: none */
	uint64_t sema_off;   /* ~0: none */
	bool args_differ;    /* its sites disagree on their argument specs */
	bool base_missing;   /* a site libbpf before 1.6 misplaces (elf_obj.h: elf_sdt) */
	bool sib;	     /* an argument base+index*scale, which libbpf before 1.7 refuses */
	bool warned;	     /* an attach of it failed and said so (once) */
};

struct modules;

struct module {
	struct modules *ms; /* the registry it belongs to */
	uint64_t dev;
	uint64_t ino;
	char *path;	     /* as the target maps it */
	const char *name;    /* basename of path */
	struct elf_obj *elf; /* NULL when not an ELF object or not readable */
	int open_err;	     /* why elf is NULL (-errno) */
	bool scanned;
	/* The version of the file mapped (objfacts.h); has_id: known (map_files or path). */
	struct file_id id;
	bool has_id;
	bool from_facts; /* scanned by an earlier run: nothing to trace, notes unread yet */
	struct probe_site *sites;
	size_t nr_sites;
	size_t nr_required; /* sites that are not CAT_OPTIONAL: "a CUDA library" */
	bool libc;	    /* --libc was on when this module was registered */
	bool warned;	    /* slow probe sites reported */
	bool nvtx;	    /* --step nvtx: was on when this module was registered */
	/* WebGPU: the webgpu.h generation its wgpu* functions were built against. */
	struct wgpu_abi wgpu;
	unsigned int nr_wgpu_funcs;   /* wgpu* functions defined (0: not a WebGPU object) */
	unsigned int nr_wgpu_dropped; /* traced wgpu* functions left out: generation unknown */
	bool wgpu_warned;
	/* Its USDT probes (.note.stapsdt), in note order; nr_usdt_traced of them the catalog's. */
	struct usdt_probe *usdt;
	size_t nr_usdt, cap_usdt, nr_usdt_traced;
	int usdt_err; /* the notes could not be read (-errno), 0 */
	/* Dawn's entry points from its proc table: an object with Dawn but no wgpu* symbols. */
	struct dawn_procs *dawn;
	int dawn_err;	    /* why dawn is NULL: -ENOENT no table, -ENOTSUP not x86-64, ... */
	char dawn_why[160]; /* -EINVAL: what in the object is malformed, with its offset */
};

struct modules;

int modules__new(struct modules **out);
void modules__free(struct modules *ms);
/* Trace the C library's allocator (--libc) in modules registered from now on. */
void modules__trace_libc(struct modules *ms, bool on);
/* Trace NVTX range entry points (--step nvtx:) in modules registered from now on. */
void modules__trace_nvtx(struct modules *ms, bool on);
/*
 * Whether entry probes may move past single-stepped first instructions (insn.h; default on).
 * Off: every probe at its function's entry (--probe-at-entry), for modules scanned from now.
 */
void modules__move_probes(struct modules *ms, bool on);
/*
 * The module of a mapping of pid, opened through /proc/PID/map_files on first sight (works
 * across mount namespaces and for deleted files). Never NULL except on -ENOMEM (errno).
 */
struct module *modules__get(struct modules *ms, pid_t pid, const struct pmap_ent *e);
/* The module of a file by path (run mode, before the target has mapped it). */
struct module *modules__get_path(struct modules *ms, const char *path);
/*
 * Dawn's entry points from its proc table only (--dawn-procs): an object's wgpu* symbols and
 * Dawn's C++ ones (MakeError) are not used, as if it had none, for modules scanned from now.
 */
void modules__dawn_procs_only(struct modules *ms, bool on);
/*
 * Keep what scans find between runs (objfacts.h), in a store for this build and the scan
 * options set so far (libc, --webgpu-abi, --dawn-procs): set them first. 0 or -ENOMEM.
 */
int modules__use_facts(struct modules *ms);
/* Write back what this run learnt (nothing without modules__use_facts): 0 or -errno. */
int modules__save_facts(struct modules *ms);
/* Objects whose scan an earlier run's facts spared, and objects scanned. */
void modules__facts_counts(const struct modules *ms, size_t *spared, size_t *scanned);
/* What is known of the module's file from earlier runs (objfacts.h bits), and to add. */
unsigned int module__facts(const struct module *m);
void module__learn(const struct module *m, unsigned int bits);
/*
 * Find the catalog's functions and USDT probes in a module (cached: done once per module).
 * An object an earlier run found nothing in is not scanned again (modules__use_facts).
 */
int module__scan(struct module *m);
/* The module's USDT probe provider:name, or NULL (the notes read now if still unread). */
const struct usdt_probe *module__usdt(struct module *m, const char *provider, const char *name);
/* Whether the module has PyTorch's USDT probes (it is libc10_cuda.so with them). */
bool module__has_torch_usdt(const struct module *m);
/* Use this webgpu.h generation for every WebGPU object instead of detecting it. */
void modules__set_wgpu_abi(struct modules *ms, const struct wgpu_abi *abi);
/*
 * Whether an object with no wgpu* symbols has Dawn (WebGPU) linked in anyway: statically and
 * stripped, as in onnxruntime's WebGPU execution provider. Reads its .rodata: slow on big
 * objects, for diagnostics only. An object whose entry points came from Dawn's proc table
 * is not hidden.
 */
bool module__has_hidden_dawn(struct module *m);
/* "symbols", "Dawn's proc table": where a site's address came from. */
const char *module__site_source(const struct probe_site *s);

#endif
