/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one interface that names code addresses of a traced process: "symbol+0xoff (object)"
 * from .symtab, else .dynsym (C++ names demangled), falling back to "object+0xfileoff" for
 * code no symbol covers and "0xaddr" for unmapped addresses. Objects with one build-id share
 * one symbol table (a library copied into containers is read once), and the user stacks of
 * allocations are kept here with the names of their frames.
 * Mappings are remembered per process as they are seen, so names survive dlclose and the
 * target's exit; resolved names are cached per (pid, address).
 *
 * Live, names come from the target's ELF files. Offline (gpuleak report) there are no files:
 * the symbolizer is created without modules and fed what the capture recorded, the names of
 * the addresses the recorder resolved (symbolizer__set) and its map snapshots
 * (symbolizer__add_map) for the rest; it never looks at the live system.
 *
 * Callers name addresses, stacks and sites through this header; behind it each part of the
 * work is a module of symbols/ owning its data: symtabs.h (one symbol table per build-id,
 * debug files), demangle.h, jitnames.h (perf maps), stacks.h and fpwalk.h (interned stacks,
 * frame-pointer judgement), pymerge.h and jssites.h (Python and JavaScript frames, sites and
 * stacks).
 */
#ifndef GPULEAK_SYMBOLS_SYMBOLIZER_H
#define GPULEAK_SYMBOLS_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;
struct modules;
struct proc_maps;

/* What is known about one address; formatted into its name. */
struct sym_info {
	const char *module; /* basename of the mapped object; NULL: in no known mapping */
	const char *func;   /* function name without @VERSION; NULL: no symbol covers it */
	uint64_t func_off;  /* addr - start of func */
	uint64_t file_off;  /* addr as an offset into the object's file */
	/* A Python frame (symbols/pyframes.h): func its qualified name, module its file's
	 * basename, file the file as the code object has it, line its line (0: unknown). */
	const char *file;
	int32_t line;
	bool python;
};

/* mods NULL: offline, names only from symbolizer__set and symbolizer__add_map. */
int symbolizer__new(struct modules *mods, struct symbolizer **out);
void symbolizer__free(struct symbolizer *s);

/*
 * Directories searched for separate debug files of stripped objects, before
 * /usr/lib/debug (as the target sees it, then as we do); dirs must outlive s.
 */
#define SYMBOLIZER_MAX_DEBUG_DIRS 8
void symbolizer__set_debug_dirs(struct symbolizer *s, const char *const *dirs, size_t n);
/* Remember pid's current mappings (call at attach and whenever they change). */
int symbolizer__add_maps(struct symbolizer *s, const struct proc_maps *m);
/* Remember one executable mapping by path, without opening it (a capture's snapshot). */
int symbolizer__add_map(struct symbolizer *s, pid_t pid, uint64_t start, uint64_t end,
			uint64_t pgoff, const char *path);
/* Name addr in pid as si says, whatever the mappings say (a capture's symbol table). */
int symbolizer__set(struct symbolizer *s, pid_t pid, uint64_t addr, const struct sym_info *si);
/*
 * What is known about addr in pid, resolved on first use and cached; an address in no known
 * mapping is looked up again once mappings were added. NULL only without memory. Valid as
 * long as the symbolizer.
 */
const struct sym_info *symbolizer__info(struct symbolizer *s, pid_t pid, uint64_t addr);
/* Name addr in pid. The returned string lives as long as the symbolizer. */
const char *symbolizer__name(struct symbolizer *s, pid_t pid, uint64_t addr);
/*
 * The function containing addr (plain name: no offset, no version) and the object's
 * basename, for rules (site=, lib=). Either may be NULL when unknown. 0, -ENOENT when addr is
 * in no known mapping, or -ENOMEM.
 */
int symbolizer__frame(struct symbolizer *s, pid_t pid, uint64_t addr, const char **sym,
		      const char **module);
/*
 * Name every address of addrs in pid now, in one pass in address order (a stack's frames,
 * a capture's symbols). Later lookups of them are cache hits. 0 or -ENOMEM.
 */
int symbolizer__resolve(struct symbolizer *s, pid_t pid, const uint64_t *addrs, size_t n);

struct ustack;
struct stacks;

/*
 * The stack of an allocation from the kernel (stacks__intern has the details of raw, n and
 * depth), interned per (pid, id, caller). A new stack has its frames named in one batch and
 * its walk judged: STACK_NO_FP when a frame other than the last is in a function that does
 * not keep a frame pointer (or, where no symbol covers it, in an object most of whose
 * functions do not), since the frame-pointer walk took the frames after it on trust.
 */
int symbolizer__add_stack(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller,
			  const uint64_t *raw, size_t n, unsigned int depth,
			  const struct ustack **out);
/*
 * For unwinding (unwind.h): the object whose code is at addr in pid (live only: NULL
 * offline, in no mapped file, or not opened) and its load bias (addr - bias is its virtual
 * address); whether the function at addr keeps a frame pointer (1, 0, -1 unknown).
 */
struct elf_obj *symbolizer__object(struct symbolizer *s, pid_t pid, uint64_t addr, uint64_t *bias);
int symbolizer__frame_fp(struct symbolizer *s, pid_t pid, uint64_t addr);
/* Whether most functions of the object mapped at addr keep a frame pointer: 1, 0, -1
 * unknown (no object, no sized function symbol). Judged once per object. */
int symbolizer__object_fp(struct symbolizer *s, pid_t pid, uint64_t addr);
/* A stack as a capture recorded it, flags included: offline nothing is judged again. Also
 * a stack unwound in user space (unwind.h), judged by its unwinder. */
int symbolizer__set_stack(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller,
			  const uint64_t *frames, size_t nr, unsigned int flags,
			  unsigned int nofp_from);
/*
 * The call site of an allocation whose probe fires inside the allocator's own code (a
 * caching allocator's block): the innermost frame of the stack (pid, id, caller) in no object
 * whose name matches a glob of skip (NULL-ended), among the frames the walk vouches for
 * (before nofp_from). Its stack, from that frame on, is interned under it, so the site and
 * its stack name each other as any call's do. 0 with *site set, or -ENOENT (no such stack or
 * frame: keep caller), -ENOMEM.
 */
int symbolizer__site_outside(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller,
			     const char *const *skip, uint64_t *site);
/* The stack of a call site (a record's or a tracker site's pid, stack_id, caller), or NULL. */
const struct ustack *symbolizer__stack(const struct symbolizer *s, pid_t pid, int32_t id,
				       uint64_t caller);
/* Every stack, in the order they were added (stacks__count, stacks__at). */
const struct stacks *symbolizer__stacks(const struct symbolizer *s);

struct symbolizer_stats {
	unsigned int objects;	  /* ELF objects named from */
	unsigned int shared;	  /* of them, named by an earlier object with their build-id */
	uint64_t resolved;	  /* addresses looked up in a mapping */
	uint64_t batches;	  /* symbolizer__resolve calls */
	unsigned int debug_files; /* separate debug files that name stripped objects */
	uint64_t jit_frames;	  /* addresses named from perf maps */
	uint64_t perf_map_reads;  /* reads of a perf map that found new entries */
};
void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st);

/*
 * The frames rules match on (a frames_fn of the tracker; ctx is the symbolizer), innermost
 * first: every frame of the site's stack, named or not (NULL), so that syms[i], mods[i] and
 * where[i] are one frame (where: "file:line" of a Python frame, else NULL); the call site
 * alone when it has no stack.
 */
int symbolizer__site_frames(void *ctx, pid_t pid, uint64_t caller, int32_t stack_id,
			    const char **syms, const char **mods, const char **where, int max);
/* The module (basename) containing addr in pid, or NULL. */
const char *symbolizer__module(struct symbolizer *s, pid_t pid, uint64_t addr);

/* ---- Python frames (symbols/pyframes.h) ---- */

struct gl_hdr;

/*
 * Frames whose object (basename) or Python file matches one of globs never name a site,
 * beside the built-in ones (the interpreter, ctypes, libffi, the traced libraries, PyTorch's
 * allocator); globs must outlive s.
 */
void symbolizer__set_site_skip(struct symbolizer *s, const char *const *globs, size_t n);
/*
 * Every record, in stream order, live and offline alike, before the analysis sees it: the
 * Python records are kept, and an allocation with a Python stack id gets its merged stack
 * (native frames, with its Python frames in place of the interpreter's), under (pid, id,
 * caller), once. Its native stack must be in before (symbolizer__add_stack live, a capture's
 * STACKS offline). 0, -EINVAL for a malformed Python record (left out), or -ENOMEM.
 */
int symbolizer__py_record(struct symbolizer *s, const struct gl_hdr *h);
/* The native stack id in Python stack id of pid, -1: none or not known. */
int32_t symbolizer__py_native_id(const struct symbolizer *s, pid_t pid, int32_t id);
/*
 * The frame that names the site of an allocation with this stack: for a stack with Python
 * frames, the innermost frame of the program's own code; 0: the call site, as for others.
 */
uint64_t symbolizer__site_frame(const struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller);
/* Whether a frame is a script's (Python, or JavaScript a JIT named): not native glue. */
bool symbolizer__script_frame(const struct sym_info *si);
/* enum stack_js of a stack without Python frames (its JavaScript judged on first use). */
unsigned int symbolizer__js_flags(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller);
/* The name of that site: its Python frame's, or the call site's, as a verdict names sites. */
const char *symbolizer__site_name(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller);
/*
 * The id that stands for Python stack id of pid: the first one whose merged stack has the
 * same frames (ids that differ only in what the merge dropped), else id itself.
 */
int32_t symbolizer__py_canonical(const struct symbolizer *s, pid_t pid, int32_t id);
/*
 * The tracker's site_fn (ctx is the symbolizer): symbolizer__site_frame, with *stack_id
 * replaced by its canonical id. For a stack with JavaScript frames (named from V8's perf
 * map), likewise: the innermost frame of the program's own scripts (not Node's, not under
 * node_modules, not --site-skip's; else a package's innermost), its id the first one of the
 * stacks with the same frames once the native glue between script frames is folded.
 */
uint64_t symbolizer__py_site(void *ctx, pid_t pid, uint64_t caller, int32_t *stack_id);
/* Python records left out as malformed. */
uint64_t symbolizer__py_bad(const struct symbolizer *s);

/* ---- for the modules of symbols/ ---- */

struct py_frame_name;

/*
 * pymerge.c: name addr in pid as the Python frame nm, "qualname (file:line)", unless it has
 * a name already; rules match its "file:line" too (symbolizer__site_frames). 0 or -ENOMEM.
 */
int symbolizer__set_python(struct symbolizer *s, pid_t pid, uint64_t addr,
			   const struct py_frame_name *nm);

#endif
