/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An ELF object as the dynamic loader lays it out, read from the file alone: its PT_LOAD
 * segments, the value every dynamically relocated word gets (RELA and RELR, load base 0),
 * its .init_array and the function table of .eh_frame_hdr. Only program headers and
 * PT_DYNAMIC are read, so it works on an object whose section headers and symbol tables are
 * gone; symbols are used only through the index a relocation names (their st_value), never
 * by name. x86-64 objects only (the relocation types are the architecture's).
 */
#ifndef GPULEAK_PROBE_ELF_IMAGE_H
#define GPULEAK_PROBE_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_obj;

/* Where a word's value comes from. */
enum elf_word_src {
	EW_FILE = 0, /* the file's bytes: no relocation */
	EW_RELATIVE, /* R_X86_64_RELATIVE: base + addend */
	EW_RELR,     /* DT_RELR: base + the word in the file */
	EW_SYM64,    /* R_X86_64_64: a defined symbol's value + addend */
	EW_GLOB_DAT, /* R_X86_64_GLOB_DAT: a defined symbol's value (a GOT slot) */
};

struct elf_image;

/*
 * Builds the view of an open object (elf_obj keeps the file mapped; the view points into
 * it and must be freed before it). 0, -ENOTSUP for an object that is not x86-64 ELF64
 * little-endian, -ENOMEM, -EINVAL for a malformed one, said in why (one line with the
 * file offset of what is wrong). Every table it reads is bounded by the file's bytes.
 */
int elf_image__new(struct elf_obj *o, struct elf_image **out, char *why, size_t why_len);
void elf_image__free(struct elf_image *im);
/* The first malformed part met since (an unwind entry read by a lookup), or NULL. */
const char *elf_image__bad(const struct elf_image *im);

/* The file bytes of [vaddr, vaddr + len) when all of it is file-backed, else NULL. */
const uint8_t *elf_image__ptr(const struct elf_image *im, uint64_t vaddr, size_t len);
/* Bytes file-backed from vaddr to the end of its segment (0 outside any). */
size_t elf_image__avail(const struct elf_image *im, uint64_t vaddr);
/* Whether vaddr is in an executable segment's file-backed part. */
bool elf_image__is_code(const struct elf_image *im, uint64_t vaddr);
/* Calls fn on every file-backed part of a segment that is not writable (rodata, text). */
void elf_image__for_each_ro(const struct elf_image *im, bool exec_only,
			    void (*fn)(uint64_t vaddr, const uint8_t *p, size_t len, void *ctx),
			    void *ctx);
/*
 * The 8-byte word at vaddr once relocated (load base 0) and where its value came from.
 * false when it is not known: .bss, a relocation to an undefined symbol.
 */
bool elf_image__word(const struct elf_image *im, uint64_t vaddr, uint64_t *val,
		     enum elf_word_src *src);
/* Every relocated word: calls fn(where, value, src); stops when fn returns nonzero. */
int elf_image__for_each_reloc(const struct elf_image *im,
			      int (*fn)(uint64_t where, uint64_t value, enum elf_word_src src,
					void *ctx),
			      void *ctx);
/* Whether it is ET_EXEC: absolute addresses without relocations in its data. */
bool elf_image__is_exec(const struct elf_image *im);
/* .init_array: the number of entries and entry i's function (0 when not known). */
size_t elf_image__nr_init(const struct elf_image *im);
uint64_t elf_image__init(const struct elf_image *im, size_t i);
/*
 * .eh_frame_hdr's table: the start of the function containing vaddr and its size from its
 * FDE (0 when not known), or 0 when no FDE covers it; whether the object has the table.
 */
uint64_t elf_image__func_start(const struct elf_image *im, uint64_t vaddr, uint64_t *size);
bool elf_image__has_fde_table(const struct elf_image *im);

#endif
