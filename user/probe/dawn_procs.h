/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Dawn's entry points in an object that has no symbols for them (onnxruntime's WebGPU
 * execution provider, Chrome): recovered from Dawn's own name table.
 *
 * Dawn answers wgpuGetProcAddress from a table generated into ProcTable.cpp, `sProcMap`:
 * {WGPUProc proc, name} pairs sorted by name, the name a std::string_view (current Dawn:
 * {proc, length, data}, 24 bytes) or a char const * (2021 and before). The procs are the
 * dawn::native::Native* functions, with the C signatures of the wgpu* ones: what a program
 * linked to Dawn through dawn_proc calls. Whether the table is static data or filled by a
 * static initializer is the compiler's choice (a function pointer cast is not a constant
 * expression), and both are seen: relocated data in a 2021 build, initializer code
 * (`lea proc(%rip)` or a GOT load, then a store into .bss) in every current one. So the
 * table is read from two memories, both built from the file alone:
 *
 *   data  every dynamically relocated word (RELA, RELR) as the loader would set it;
 *   init  what the object's initializers store: each .init_array function, and each function
 *         that takes a wgpu* name's address, run in a straight-line x86-64 emulator (the
 *         instructions decoded by capstone) that follows registers, GOT loads and stores to
 *         rip-relative or known addresses, and stops at a branch or return.
 *
 * In either, the words that point at a "wgpu[A-Z]..." string are name slots; the longest run
 * of them at one stride is the table, and the proc field is the offset whose word is code in
 * nearly every entry. No symbol is read, so a stripped object and its unstripped original
 * give the same table. Before any of it, a pre-filter counts the names in .rodata (the
 * section headers stripping keeps; the read-only segments without them), a window at a
 * time: an object with fewer than a table's worth (a 540 MB libcublasLt) costs that scan
 * and a few MB, not a read of the whole file.
 */
#ifndef GPULEAK_PROBE_DAWN_PROCS_H
#define GPULEAK_PROBE_DAWN_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_obj;

/* How an entry's address was found. */
enum dawn_proc_how {
	DAWN_PROC_DATA = 0,	/* relocated data: the table is static */
	DAWN_PROC_INIT_LEA = 1, /* an initializer takes the function's address (lea) */
	DAWN_PROC_INIT_GOT = 2, /* an initializer loads it from a GOT slot */
};

struct dawn_proc {
	const char *name; /* "wgpuBufferRelease": into the object's mapping */
	uint64_t vaddr;
	uint64_t size;	 /* from its unwind entry, 0 when unknown */
	uint8_t how;	 /* enum dawn_proc_how */
	bool fde;	 /* an unwind entry (FDE) starts at vaddr */
	uint16_t shared; /* names with this address: > 1 under identical code folding */
};

#define DAWN_ERROR_CLASSES 4

struct dawn_procs {
	struct dawn_proc *v; /* in table order (by name when `sorted`) */
	size_t n;
	uint64_t table_vaddr;	/* entry 0's proc field */
	unsigned int stride;	/* bytes per entry */
	int name_off;		/* the name pointer's offset from the proc field */
	int len_off;		/* a string_view length's offset, or -1: char const * names */
	bool from_init;		/* written by initializer code (else static data) */
	bool sorted;		/* by name, as Dawn sorts it: evidence it is the real table */
	unsigned int nr_fde;	/* entries where an FDE starts */
	unsigned int nr_folded; /* entries that share an address with another */
	/*
	 * Error objects by their class, from run-time type information (RTTI) where the object
	 * has it (onnxruntime does; dawn.node and libwebgpu_wrapper.so are built without): the
	 * address points of the vtables of Dawn's ErrorBuffer and of a bare TextureBase (what
	 * TextureBase::MakeError makes), link-time addresses. A creation that returns an object
	 * whose first word is one of these, relocated, returned an error object.
	 */
	uint64_t error_vptr[DAWN_ERROR_CLASSES];
	/* Each one's class as its RTTI names it in the object ("N4dawn6native11TextureBaseE"):
	 * what was found, for saying so (dawn_procs__class_name), into the object's mapping. */
	const char *error_class[DAWN_ERROR_CLASSES];
	unsigned int nr_error_vptr;
	/* How the search went, for -v: */
	unsigned int nr_names;	/* wgpu* strings in read-only data */
	unsigned int nr_starts; /* functions emulated */
	unsigned long nr_insns; /* instructions emulated */
	char why[160];		/* one line: where the table is and how it was filled */
};

/*
 * Recover the table of an object. 0; -ENOENT: no Dawn name table (no wgpu* strings, or no
 * run of them); -ENOTSUP: not an x86-64 object; -ENOMEM; -EINVAL: malformed, said in why
 * (one line with the file offset). Work and memory are bounded by the object's size.
 */
int dawn_procs__recover(struct elf_obj *o, struct dawn_procs **out, char *why, size_t why_len);
void dawn_procs__free(struct dawn_procs *p);
/* The entry of a name, or NULL. */
const struct dawn_proc *dawn_procs__find(const struct dawn_procs *p, const char *name);
/* The class an RTTI name names, its last component: "ErrorBuffer", "TextureBase". */
void dawn_procs__class_name(const char *rtti, char *buf, size_t len);
/* "initializer lea", "initializer GOT load", "relocated data". */
const char *dawn_procs__how(uint8_t how);

#endif
