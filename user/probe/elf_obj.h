/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One ELF object on disk: its function symbols (.symtab and .dynsym), load segments and
 * build-id. Used to find probe offsets by name and to name addresses.
 */
#ifndef GPULEAK_PROBE_ELF_OBJ_H
#define GPULEAK_PROBE_ELF_OBJ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct elf_obj;

struct elf_func {
	const char *name; /* as in the string table; may carry "@VERSION" (.symtab) */
	uint64_t vaddr;
	uint64_t size;
	bool local;   /* STB_LOCAL: e.g. a statically linked cudart's cudaMalloc */
	bool dynamic; /* from .dynsym */
};

/*
 * One SystemTap SDT probe site (a note of .note.stapsdt): a USDT. Addresses are link-time
 * ones, shifted when prelink moved the object (.stapsdt.base); file offsets are what a uprobe
 * and its reference counter (the semaphore) take.
 */
struct elf_sdt {
	const char *provider, *name;
	const char *args;    /* the argument specs, "-8@%rax 4@-24(%rbp)"; "" for none */
	uint64_t pc_vaddr;   /* the probe's nop */
	uint64_t pc_off;     /* ~0: in no loaded segment */
	uint64_t sema_vaddr; /* its semaphore (an unsigned short), 0: none */
	uint64_t sema_off;   /* ~0: in no loaded segment */
	/*
	 * The object has a .stapsdt.base section but this note records no base (PyTorch's own
	 * note macro writes 0 there): libbpf before 1.6 shifts such a probe by the section's
	 * address anyway and refuses it (ESRCH), or probes the wrong instruction.
	 */
	bool base_missing;
};

/* Returns 0 or -errno; *out is owned by the caller (elf_obj__free). */
int elf_obj__open(const char *path, struct elf_obj **out);
void elf_obj__free(struct elf_obj *o);

/* Calls fn for each defined function symbol of both tables; stops when fn returns nonzero. */
int elf_obj__for_each_func(struct elf_obj *o, int (*fn)(const struct elf_func *f, void *ctx),
			   void *ctx);

/*
 * Calls fn for each SDT note (USDT probe site) in file order; stops when fn returns nonzero.
 * 0 (also without notes), fn's negative return, or -EINVAL for a malformed note.
 */
int elf_obj__for_each_sdt(struct elf_obj *o, int (*fn)(const struct elf_sdt *n, void *ctx),
			  void *ctx);

/* File offset of a virtual address (for uprobes) and back; -ENOENT outside any PT_LOAD. */
int elf_obj__vaddr_to_off(const struct elf_obj *o, uint64_t vaddr, uint64_t *off);
int elf_obj__off_to_vaddr(const struct elf_obj *o, uint64_t off, uint64_t *vaddr);

/*
 * The function containing vaddr: its name and the offset into it. Prefers .symtab over
 * .dynsym; NULL when no symbol covers vaddr (stripped object). The name stays valid until
 * elf_obj__free.
 */
const char *elf_obj__symbolize(struct elf_obj *o, uint64_t vaddr, uint64_t *off_in_sym);

/* Hex build-id or "" when the object has none. */
const char *elf_obj__build_id(const struct elf_obj *o);
bool elf_obj__is_exec(const struct elf_obj *o); /* ET_EXEC: absolute addresses */
bool elf_obj__has_symtab(const struct elf_obj *o);
uint16_t elf_obj__machine(const struct elf_obj *o); /* e_machine: EM_X86_64, EM_AARCH64 */
/*
 * Separate debug files (Debian's -dbgsym packages, `objcopy --only-keep-debug`): whether one
 * should be looked for (true once, for an object without .symtab), the .gnu_debuglink file
 * name and CRC-32 (NULL when none), and attaching one: 0, or -ESTALE when it is of another
 * build (build-id, else the debuglink CRC), -ENODATA when it has no .symtab, -errno when it
 * cannot be opened. Once attached, its .symtab names the object's code beside .dynsym.
 */
bool elf_obj__needs_debug(struct elf_obj *o);
const char *elf_obj__debuglink(struct elf_obj *o, uint32_t *crc);
int elf_obj__add_debug(struct elf_obj *o, const char *path);
/* What the dynamic section says, for finding the libraries an executable needs. */
struct elf_dyn {
	const char *soname;  /* DT_SONAME, NULL without one */
	const char *rpath;   /* DT_RPATH, NULL without one */
	const char *runpath; /* DT_RUNPATH, NULL without one */
	const char **needed; /* DT_NEEDED, in order */
	size_t nr_needed;
};

/* The object's dynamic section, read once (all members empty for a static object); NULL when
 * out of memory. The strings stay valid until elf_obj__free. */
const struct elf_dyn *elf_obj__dyn(struct elf_obj *o);
/* The PT_INTERP path (dynamic linker) or NULL. */
const char *elf_obj__interp(const struct elf_obj *o);
/* Whether the named section contains the bytes of needle (a string, without its NUL). */
bool elf_obj__section_has(struct elf_obj *o, const char *section, const char *needle);
/* Whether the object has call frame information an unwinder can use (.eh_frame). */
bool elf_obj__has_eh_frame(struct elf_obj *o);
/*
 * The file bytes of its read-only data (.rodata sections, which stripping keeps; the
 * read-only non-executable segments when it has no section headers), each mapped on its own
 * a window at a time so a scan of a large object holds a few MB, not the object:
 * fn(file offset, bytes, len, own, ctx) sees len bytes, of which the first own are this
 * window's (the rest, at most `overlap`, start the next one: a match that starts in own
 * ends in len). Stops at fn's first nonzero return, which it returns; -errno when a window
 * cannot be mapped.
 */
typedef int (*elf_window_fn)(uint64_t off, const uint8_t *p, size_t len, size_t own, void *ctx);
int elf_obj__for_each_rodata_window(struct elf_obj *o, size_t overlap, elf_window_fn fn, void *ctx);
/* The whole file as mapped (libelf keeps it mapped until elf_obj__free), or NULL. */
const uint8_t *elf_obj__image(const struct elf_obj *o, size_t *size);
/* A defined data object (STT_OBJECT) by name, .dynsym first: 0, or -ENOENT. */
int elf_obj__find_object(struct elf_obj *o, const char *name, uint64_t *vaddr, uint64_t *size);
/*
 * What to add to the object's addresses in a process where it is mapped at start from file
 * offset pgoff (a mapping of one of its load segments; page: the page size): 0, or -ENOENT
 * when pgoff starts none of them.
 */
int elf_obj__load_bias(const struct elf_obj *o, uint64_t start, uint64_t pgoff, uint64_t page,
		       uint64_t *bias);
/* The object's libelf handle and its separate debug file once attached (NULL: none), for
 * readers of its other sections (call frame information). Valid until elf_obj__free. */
struct Elf;
struct Elf *elf_obj__libelf(const struct elf_obj *o);
struct elf_obj *elf_obj__debug_obj(const struct elf_obj *o);
/* Up to len bytes of file content at a file offset; returns bytes copied or -errno. */
ssize_t elf_obj__read(const struct elf_obj *o, uint64_t off, void *buf, size_t len);

#endif
