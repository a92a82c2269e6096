// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/vec.h"
#include "probe/elf_image.h"
#include "probe/elf_obj.h"

/* DT_RELR is newer than some elf.h copies. */
#ifndef DT_RELRSZ
#define DT_RELRSZ 35
#define DT_RELR	  36
#endif

#define MAX_SEGS 32

struct seg {
	uint64_t vaddr, memsz, off, filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};

struct rel {
	uint64_t where;
	uint64_t value;
	uint8_t src; /* enum elf_word_src */
};

/* One row of .eh_frame_hdr's table: a function's start and its FDE. */
struct fde_row {
	uint64_t start;
	uint64_t fde;
};

struct elf_image {
	const uint8_t *file;
	size_t size;
	bool exec;
	struct seg seg[MAX_SEGS];
	unsigned int nr_seg;
	struct rel *rel; /* sorted by where */
	size_t nr_rel, cap_rel;
	uint64_t init_array, init_arraysz;
	struct fde_row *fde; /* sorted by start */
	size_t nr_fde;
	uint64_t symtab, syment;
	/*
	 * The first malformed part met, one line with its file offset ("" while none). Its own
	 * allocation: the lookups that meet a bad unwind entry late see the image as const.
	 */
	char *bad;
};

#define BAD_LEN 160

/* Notes the first malformed part of the object; -EINVAL. */
__attribute__((format(printf, 2, 3))) static int bad(const struct elf_image *im, const char *fmt,
						     ...)
{
	va_list ap;

	if (im->bad[0])
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(im->bad, BAD_LEN, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const struct seg *seg_of(const struct elf_image *im, uint64_t vaddr)
{
	unsigned int i;

	for (i = 0; i < im->nr_seg; i++)
		if (vaddr >= im->seg[i].vaddr && vaddr - im->seg[i].vaddr < im->seg[i].memsz)
			return &im->seg[i];
	return NULL;
}

size_t elf_image__avail(const struct elf_image *im, uint64_t vaddr)
{
	const struct seg *s = seg_of(im, vaddr);

	if (!s || vaddr - s->vaddr >= s->filesz)
		return 0;
	return s->filesz - (vaddr - s->vaddr);
}

const uint8_t *elf_image__ptr(const struct elf_image *im, uint64_t vaddr, size_t len)
{
	const struct seg *s = seg_of(im, vaddr);
	size_t avail = elf_image__avail(im, vaddr);

	/* None, even for len 0, past the file's part of the segment: its memory size may run
	 * to the end of the address space (a crafted object), and the file's pointer with it. */
	if (!s || !avail || avail < len)
		return NULL;
	return im->file + s->off + (vaddr - s->vaddr);
}

/* The file offset of a file-backed vaddr, for messages (the vaddr itself when none). */
static uint64_t file_off(const struct elf_image *im, uint64_t vaddr)
{
	const struct seg *s = seg_of(im, vaddr);

	return s && vaddr - s->vaddr < s->filesz ? s->off + (vaddr - s->vaddr) : vaddr;
}

bool elf_image__is_code(const struct elf_image *im, uint64_t vaddr)
{
	const struct seg *s = seg_of(im, vaddr);

	return s && (s->flags & PF_X) && vaddr - s->vaddr < s->filesz;
}

bool elf_image__is_exec(const struct elf_image *im)
{
	return im->exec;
}

void elf_image__for_each_ro(const struct elf_image *im, bool exec_only,
			    void (*fn)(uint64_t vaddr, const uint8_t *p, size_t len, void *ctx),
			    void *ctx)
{
	unsigned int i;

	for (i = 0; i < im->nr_seg; i++) {
		const struct seg *s = &im->seg[i];

		if ((s->flags & PF_W) || (exec_only && !(s->flags & PF_X)) || !s->filesz)
			continue;
		fn(s->vaddr, im->file + s->off, s->filesz, ctx);
	}
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int32_t rds32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static int add_rel(struct elf_image *im, uint64_t where, uint64_t value, enum elf_word_src src)
{
	if (vec_grow((void **)&im->rel, &im->cap_rel, im->nr_rel, sizeof(*im->rel)))
		return -ENOMEM;
	im->rel[im->nr_rel++] = (struct rel){.where = where, .value = value, .src = src};
	return 0;
}

/* A defined dynamic symbol's value, through DT_SYMTAB (no section headers needed). */
static bool sym_value(const struct elf_image *im, uint32_t idx, uint64_t *val)
{
	const uint8_t *p;
	Elf64_Sym s;

	if (!im->symtab || im->syment < sizeof(s))
		return false;
	p = elf_image__ptr(im, im->symtab + (uint64_t)idx * im->syment, sizeof(s));
	if (!p)
		return false;
	memcpy(&s, p, sizeof(s));
	if (s.st_shndx == SHN_UNDEF)
		return false;
	*val = s.st_value;
	return true;
}

static int read_rela(struct elf_image *im, uint64_t at, uint64_t size, uint64_t ent)
{
	uint64_t k;
	int err;

	if (ent < sizeof(Elf64_Rela))
		return ent ? bad(im,
				 "DT_RELAENT %llu of the DT_RELA table at 0x%llx: smaller than a "
				 "relocation (24)",
				 (unsigned long long)ent, (unsigned long long)at)
			   : 0;
	for (k = 0; k + ent <= size; k += ent) {
		const uint8_t *p = elf_image__ptr(im, at + k, sizeof(Elf64_Rela));
		Elf64_Rela r;
		uint64_t v;

		if (!p)
			return bad(
			    im,
			    "DT_RELA entry at 0x%llx (of 0x%llx bytes at 0x%llx): not in the file",
			    (unsigned long long)(at + k), (unsigned long long)size,
			    (unsigned long long)at);
		memcpy(&r, p, sizeof(r));
		switch (ELF64_R_TYPE(r.r_info)) {
		case R_X86_64_RELATIVE:
			err = add_rel(im, r.r_offset, r.r_addend, EW_RELATIVE);
			break;
		case R_X86_64_64:
			err = sym_value(im, ELF64_R_SYM(r.r_info), &v)
				  ? add_rel(im, r.r_offset, v + r.r_addend, EW_SYM64)
				  : 0;
			break;
		case R_X86_64_GLOB_DAT:
			err = sym_value(im, ELF64_R_SYM(r.r_info), &v)
				  ? add_rel(im, r.r_offset, v, EW_GLOB_DAT)
				  : 0;
			break;
		default:
			err = 0; /* TLS, copies, IRELATIVE: no static value */
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

/* DT_RELR: an address, then bitmaps of the 63 words after it that are relocated too. */
static int read_relr(struct elf_image *im, uint64_t at, uint64_t size)
{
	uint64_t k, next = 0;
	int err, b;

	for (k = 0; k + 8 <= size; k += 8) {
		const uint8_t *p = elf_image__ptr(im, at + k, 8);
		const uint8_t *w;
		uint64_t e;

		if (!p)
			return bad(
			    im,
			    "DT_RELR entry at 0x%llx (of 0x%llx bytes at 0x%llx): not in the file",
			    (unsigned long long)(at + k), (unsigned long long)size,
			    (unsigned long long)at);
		e = rd64(p);
		if (!(e & 1)) {
			w = elf_image__ptr(im, e, 8);
			if (w && (err = add_rel(im, e, rd64(w), EW_RELR)))
				return err;
			next = e + 8;
			continue;
		}
		for (b = 1; b < 64; b++) {
			uint64_t where = next + (uint64_t)(b - 1) * 8;

			if (!(e >> b & 1))
				continue;
			w = elf_image__ptr(im, where, 8);
			if (w && (err = add_rel(im, where, rd64(w), EW_RELR)))
				return err;
		}
		next += 63 * 8;
	}
	return 0;
}

static int rel_cmp(const void *a, const void *b)
{
	const struct rel *x = a, *y = b;

	return x->where < y->where ? -1 : x->where > y->where;
}

static int read_dynamic(struct elf_image *im, const Elf64_Phdr *dyn)
{
	uint64_t rela = 0, relasz = 0, relaent = 0, relr = 0, relrsz = 0, k, initsz_at = 0;
	int err;

	if (dyn->p_offset > im->size || dyn->p_filesz > im->size - dyn->p_offset)
		return bad(
		    im, "PT_DYNAMIC at file offset 0x%llx (0x%llx bytes): past the end of the file",
		    (unsigned long long)dyn->p_offset, (unsigned long long)dyn->p_filesz);
	for (k = 0; k + sizeof(Elf64_Dyn) <= dyn->p_filesz; k += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;

		memcpy(&d, im->file + dyn->p_offset + k, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_RELA:
			rela = d.d_un.d_ptr;
			break;
		case DT_RELASZ:
			relasz = d.d_un.d_val;
			break;
		case DT_RELAENT:
			relaent = d.d_un.d_val;
			break;
		case DT_RELR:
			relr = d.d_un.d_ptr;
			break;
		case DT_RELRSZ:
			relrsz = d.d_un.d_val;
			break;
		case DT_INIT_ARRAY:
			im->init_array = d.d_un.d_ptr;
			break;
		case DT_INIT_ARRAYSZ:
			im->init_arraysz = d.d_un.d_val;
			initsz_at = dyn->p_offset + k;
			break;
		case DT_SYMTAB:
			im->symtab = d.d_un.d_ptr;
			break;
		case DT_SYMENT:
			im->syment = d.d_un.d_val;
			break;
		default:
			break;
		}
	}
	/* The array is read entry by entry: its size is bounded by the file, not taken on trust. */
	if (im->init_arraysz && elf_image__avail(im, im->init_array) < im->init_arraysz)
		return bad(im,
			   "DT_INIT_ARRAYSZ 0x%llx at file offset 0x%llx: past the file's bytes of "
			   "the array at 0x%llx (%zu)",
			   (unsigned long long)im->init_arraysz, (unsigned long long)initsz_at,
			   (unsigned long long)im->init_array,
			   elf_image__avail(im, im->init_array));
	if (rela && (err = read_rela(im, rela, relasz, relaent ? relaent : sizeof(Elf64_Rela))))
		return err;
	if (relr && (err = read_relr(im, relr, relrsz)))
		return err;
	if (im->nr_rel)
		qsort(im->rel, im->nr_rel, sizeof(*im->rel), rel_cmp);
	return 0;
}

/* Bytes a DWARF pointer encoding's value takes (its low nibble), 0 when not handled. */
static unsigned int enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		return 8;
	case 0x02: /* udata2 */
	case 0x0a: /* sdata2 */
		return 2;
	case 0x03: /* udata4 */
	case 0x0b: /* sdata4 */
		return 4;
	default:
		return 0;
	}
}

static uint64_t rd_enc(const uint8_t *p, unsigned int n, bool sign)
{
	if (n == 8)
		return rd64(p);
	if (n == 4)
		return sign ? (uint64_t)(int64_t)rds32(p) : rd32(p);
	return sign ? (uint64_t)(int64_t)(int16_t)(p[0] | p[1] << 8) : (uint64_t)(p[0] | p[1] << 8);
}

static bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The 'R' pointer encoding of the CIE at cie (DW_EH_PE_absptr when it names none). */
static int cie_fde_enc(const struct elf_image *im, uint64_t cie)
{
	size_t avail = elf_image__avail(im, cie);
	const uint8_t *p = elf_image__ptr(im, cie, avail), *end, *aug;
	uint64_t len, v;
	uint8_t version;

	if (!p || avail < 9)
		return -1;
	len = rd32(p);
	/* Its id, version and augmentation's NUL lie inside its length. */
	if (len == 0xffffffff || len + 4 > avail || len < 6) {
		bad(im, "CIE at file offset 0x%llx: length 0x%llx out of bounds (%zu bytes there)",
		    (unsigned long long)file_off(im, cie), (unsigned long long)len, avail);
		return -1;
	}
	end = p + 4 + len;
	version = p[8];
	aug = p + 9;
	p = memchr(aug, 0, end - aug);
	if (!p++)
		return -1;
	if (!uleb(&p, end, &v) || !uleb(&p, end, &v)) /* code, data alignment (sleb: skipped) */
		return -1;
	if (version == 1) {
		if (p >= end)
			return -1;
		p++;
	} else if (!uleb(&p, end, &v)) {
		return -1;
	}
	if (aug[0] != 'z')
		return 0;
	if (!uleb(&p, end, &v))
		return -1;
	for (aug++; *aug && p < end; aug++) {
		if (*aug == 'R')
			return *p;
		if (*aug == 'L') {
			p++;
		} else if (*aug == 'P') {
			unsigned int n = enc_size(*p);

			if (!n)
				return -1;
			p += 1 + n;
		} else if (*aug != 'S' && *aug != 'B') {
			return -1;
		}
	}
	return 0;
}

/* A function's size from its FDE (pc_range), 0 when it cannot be read. */
static uint64_t fde_range(const struct elf_image *im, uint64_t fde)
{
	const uint8_t *p = elf_image__ptr(im, fde, 8);
	unsigned int n;
	int enc;

	if (!p || rd32(p) == 0xffffffff)
		return 0;
	enc = cie_fde_enc(im, fde + 4 - rd32(p + 4));
	n = enc < 0 ? 0 : enc_size((uint8_t)enc);
	p = n ? elf_image__ptr(im, fde + 8, 2 * n) : NULL;
	/* pc_range has pc_begin's format without its application (pcrel and the like). */
	return p ? rd_enc(p + n, n, false) : 0;
}

/*
 * .eh_frame_hdr (PT_GNU_EH_FRAME): version 1, then the encodings of eh_frame_ptr, the
 * count and the table. Only the table every toolchain writes is read: datarel sdata4 pairs.
 */
static int read_eh_frame_hdr(struct elf_image *im, uint64_t hdr)
{
	const uint8_t *p = elf_image__ptr(im, hdr, 4);
	unsigned int ptr_n, cnt_n;
	uint64_t count, k;

	if (!p || p[0] != 1 || p[3] != 0x3b)
		return 0;
	ptr_n = enc_size(p[1]);
	cnt_n = enc_size(p[2]);
	if (!ptr_n || !cnt_n || !(p = elf_image__ptr(im, hdr + 4, ptr_n + cnt_n)))
		return 0;
	count = rd_enc(p + ptr_n, cnt_n, false);
	/* The count against the bytes there, before count * 8 can wrap. */
	if (count > elf_image__avail(im, hdr + 4 + ptr_n + cnt_n) / 8)
		return bad(im, ".eh_frame_hdr at file offset 0x%llx: %llu entries, past the file",
			   (unsigned long long)file_off(im, hdr), (unsigned long long)count);
	p = elf_image__ptr(im, hdr + 4 + ptr_n + cnt_n, count * 8);
	if (!p || !count)
		return 0;
	im->fde = calloc(count, sizeof(*im->fde));
	if (!im->fde)
		return -ENOMEM;
	for (k = 0; k < count; k++) {
		im->fde[k].start = hdr + (int64_t)rds32(p + 8 * k);
		im->fde[k].fde = hdr + (int64_t)rds32(p + 8 * k + 4);
		/* The table is sorted by start; one that is not is not used. */
		if (k && im->fde[k].start < im->fde[k - 1].start) {
			free(im->fde);
			im->fde = NULL;
			return 0;
		}
	}
	im->nr_fde = count;
	return 0;
}

int elf_image__new(struct elf_obj *o, struct elf_image **out, char *why, size_t why_len)
{
	Elf64_Phdr dyn = {0}, ph;
	uint64_t eh_hdr = 0;
	struct elf_image *im;
	Elf64_Ehdr eh;
	size_t size;
	const uint8_t *file = elf_obj__image(o, &size);
	int err = -EINVAL;
	unsigned int i;

	*out = NULL;
	if (why_len)
		why[0] = 0;
	im = calloc(1, sizeof(*im));
	if (!im || !(im->bad = calloc(1, BAD_LEN))) {
		free(im);
		return -ENOMEM;
	}
	im->file = file;
	im->size = size;
	if (!file || size < sizeof(eh)) {
		bad(im, "%zu bytes at file offset 0x0: shorter than an ELF header",
		    file ? size : 0);
		goto cleanup;
	}
	memcpy(&eh, file, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64) {
		err = -ENOTSUP;
		goto cleanup;
	}
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size ||
	    (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff) {
		bad(im, "program headers at file offset 0x%llx (%u of %u bytes): not in the file",
		    (unsigned long long)eh.e_phoff, eh.e_phnum, eh.e_phentsize);
		goto cleanup;
	}
	/* The ELF specification aligns them to their 8-byte fields; a file that does not is
	 * not one a linker wrote. */
	if (eh.e_phoff % 8) {
		bad(im, "program headers at file offset 0x%llx: not 8-byte aligned",
		    (unsigned long long)eh.e_phoff);
		goto cleanup;
	}
	im->exec = eh.e_type == ET_EXEC;
	for (i = 0; i < eh.e_phnum; i++) {
		memcpy(&ph, file + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD && im->nr_seg < MAX_SEGS) {
			if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset ||
			    ph.p_filesz > ph.p_memsz) {
				bad(im,
				    "PT_LOAD %u at file offset 0x%llx: its 0x%llx bytes at 0x%llx "
				    "are not in the file",
				    i, (unsigned long long)(eh.e_phoff + (uint64_t)i * sizeof(ph)),
				    (unsigned long long)ph.p_filesz,
				    (unsigned long long)ph.p_offset);
				goto cleanup;
			}
			im->seg[im->nr_seg++] = (struct seg){ph.p_vaddr, ph.p_memsz, ph.p_offset,
							     ph.p_filesz, ph.p_flags};
		} else if (ph.p_type == PT_DYNAMIC) {
			dyn = ph;
		} else if (ph.p_type == PT_GNU_EH_FRAME) {
			eh_hdr = ph.p_vaddr;
		}
	}
	if (dyn.p_type && (err = read_dynamic(im, &dyn)))
		goto cleanup;
	if (eh_hdr && (err = read_eh_frame_hdr(im, eh_hdr)))
		goto cleanup;
	*out = im;
	return 0;
cleanup:
	if (err == -EINVAL && why_len)
		snprintf(why, why_len, "%s", im->bad[0] ? im->bad : "malformed");
	elf_image__free(im);
	return err;
}

const char *elf_image__bad(const struct elf_image *im)
{
	return im->bad[0] ? im->bad : NULL;
}

void elf_image__free(struct elf_image *im)
{
	if (!im)
		return;
	free(im->rel);
	free(im->fde);
	free(im->bad);
	free(im);
}

static const struct rel *rel_at(const struct elf_image *im, uint64_t vaddr)
{
	size_t lo = VEC_BOUND(im->rel, im->nr_rel, where, vaddr, false);

	return lo < im->nr_rel && im->rel[lo].where == vaddr ? &im->rel[lo] : NULL;
}

bool elf_image__word(const struct elf_image *im, uint64_t vaddr, uint64_t *val,
		     enum elf_word_src *src)
{
	const struct rel *r = rel_at(im, vaddr);
	const uint8_t *p;

	if (r) {
		*val = r->value;
		*src = r->src;
		return true;
	}
	p = elf_image__ptr(im, vaddr, 8);
	if (!p)
		return false;
	*val = rd64(p);
	*src = EW_FILE;
	return true;
}

int elf_image__for_each_reloc(const struct elf_image *im,
			      int (*fn)(uint64_t where, uint64_t value, enum elf_word_src src,
					void *ctx),
			      void *ctx)
{
	size_t i;
	int ret;

	for (i = 0; i < im->nr_rel; i++)
		if ((ret = fn(im->rel[i].where, im->rel[i].value, im->rel[i].src, ctx)))
			return ret;
	return 0;
}

size_t elf_image__nr_init(const struct elf_image *im)
{
	return im->init_arraysz / 8;
}

uint64_t elf_image__init(const struct elf_image *im, size_t i)
{
	enum elf_word_src src;
	uint64_t v;

	if (i >= elf_image__nr_init(im) || !elf_image__word(im, im->init_array + 8 * i, &v, &src))
		return 0;
	return v;
}

bool elf_image__has_fde_table(const struct elf_image *im)
{
	return im->nr_fde;
}

uint64_t elf_image__func_start(const struct elf_image *im, uint64_t vaddr, uint64_t *size)
{
	/* The last row starting at or before vaddr: before the first starting after it. */
	size_t lo = VEC_BOUND(im->fde, im->nr_fde, start, vaddr, true);
	uint64_t range;

	*size = 0;
	if (!lo)
		return 0;
	range = fde_range(im, im->fde[lo - 1].fde);
	/* An FDE of unknown size covers only its start. */
	if (vaddr != im->fde[lo - 1].start && vaddr - im->fde[lo - 1].start >= range)
		return 0;
	*size = range;
	return im->fde[lo - 1].start;
}
