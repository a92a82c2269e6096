// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include "lib/infile.h"
#include "lib/vec.h"
#include "probe/elf_obj.h"

struct seg {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t off;
	uint64_t filesz;
};

struct sym {
	uint64_t vaddr;
	uint64_t size;
	const char *name;
	int prio; /* .symtab over .dynsym, global over local at one address */
};

struct elf_obj {
	int fd;
	Elf *elf;
	bool is_exec;
	bool has_symtab;
	uint16_t machine;
	Elf_Scn *symtab;
	Elf_Scn *dynsym;
	struct seg *segs;
	size_t nr_segs;
	struct sym *syms; /* built on first symbolize */
	size_t nr_syms;
	bool syms_built;
	char *interp;
	char build_id[2 * 64 + 1];
	struct elf_obj *debug; /* a separate debug file whose .symtab names this code */
	bool debug_asked;
	struct elf_dyn dyn;
	bool dyn_read;
};

static int elf_version_once(void)
{
	static int ok = -1;

	if (ok < 0)
		ok = elf_version(EV_CURRENT) != EV_NONE;
	return ok ? 0 : -EINVAL;
}

static void read_build_id(struct elf_obj *o, Elf_Data *d)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)d->d_buf + name_off, "GNU", 4)) {
			const unsigned char *p = (unsigned char *)d->d_buf + desc_off;
			size_t i, n = nh.n_descsz > 64 ? 64 : nh.n_descsz;

			for (i = 0; i < n; i++)
				snprintf(o->build_id + 2 * i, 3, "%02x", p[i]);
			return;
		}
	}
}

static int load_headers(struct elf_obj *o)
{
	size_t i, phnum, shstrndx;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;

	if (!gelf_getehdr(o->elf, &eh))
		return -EINVAL;
	o->is_exec = eh.e_type == ET_EXEC;
	o->machine = eh.e_machine;
	if (elf_getphdrnum(o->elf, &phnum))
		return -EINVAL;
	o->segs = calloc(phnum ? phnum : 1, sizeof(*o->segs));
	if (!o->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, i, &ph))
			continue;
		if (ph.p_type == PT_LOAD) {
			o->segs[o->nr_segs++] =
			    (struct seg){ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz};
		} else if (ph.p_type == PT_INTERP && ph.p_filesz > 1 && ph.p_filesz < 4096) {
			o->interp = calloc(1, ph.p_filesz + 1);
			if (o->interp && pread(o->fd, o->interp, ph.p_filesz, ph.p_offset) !=
					     (ssize_t)ph.p_filesz) {
				free(o->interp);
				o->interp = NULL;
			}
		}
	}
	if (elf_getshdrstrndx(o->elf, &shstrndx))
		return 0; /* no sections: a stripped-to-the-bone object, still usable */
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			o->symtab = scn;
			o->has_symtab = true;
		} else if (sh.sh_type == SHT_DYNSYM) {
			o->dynsym = scn;
		} else if (sh.sh_type == SHT_NOTE && !o->build_id[0]) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d)
				read_build_id(o, d);
		}
	}
	return 0;
}

int elf_obj__open(const char *path, struct elf_obj **out)
{
	struct elf_obj *o;
	int err;

	*out = NULL;
	err = elf_version_once();
	if (err)
		return err;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	/* A FIFO would block the open, a device node run its driver: regular files only. */
	err = infile__open(path, &o->fd, NULL, NULL, 0);
	if (err)
		goto cleanup;
	o->elf = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = load_headers(o);
	if (err)
		goto cleanup;
	*out = o;
	return 0;
cleanup:
	elf_obj__free(o);
	return err;
}

void elf_obj__free(struct elf_obj *o)
{
	if (!o)
		return;
	if (o->elf)
		elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
	elf_obj__free(o->debug);
	free(o->segs);
	free(o->syms);
	free(o->interp);
	free(o->dyn.needed);
	free(o);
}

static int walk_table(struct elf_obj *o, Elf_Scn *scn, bool dynamic,
		      int (*fn)(const struct elf_func *f, void *ctx), void *ctx)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	GElf_Shdr sh;
	size_t i, n;

	if (!d || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 1; i < n; i++) {
		struct elf_func f;
		GElf_Sym s;
		int type, ret;

		if (!gelf_getsym(d, i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		/* IFUNC symbols point at the resolver, not the implementation: never probe. */
		if (type != STT_FUNC || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		f.name = elf_strptr(o->elf, sh.sh_link, s.st_name);
		if (!f.name || !f.name[0])
			continue;
		f.vaddr = s.st_value;
		f.size = s.st_size;
		f.local = GELF_ST_BIND(s.st_info) == STB_LOCAL;
		f.dynamic = dynamic;
		ret = fn(&f, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int elf_obj__for_each_func(struct elf_obj *o, int (*fn)(const struct elf_func *f, void *ctx),
			   void *ctx)
{
	int ret = 0;

	if (o->dynsym)
		ret = walk_table(o, o->dynsym, true, fn, ctx);
	if (!ret && o->symtab)
		ret = walk_table(o, o->symtab, false, fn, ctx);
	/* Same addresses: a debug file keeps the section addresses of the object it was split from. */
	if (!ret && o->debug && o->debug->symtab)
		ret = walk_table(o->debug, o->debug->symtab, false, fn, ctx);
	return ret > 0 ? 0 : ret;
}

int elf_obj__vaddr_to_off(const struct elf_obj *o, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < o->nr_segs; i++) {
		const struct seg *s = &o->segs[i];

		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz) {
			*off = vaddr - s->vaddr + s->off;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_obj__off_to_vaddr(const struct elf_obj *o, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < o->nr_segs; i++) {
		const struct seg *s = &o->segs[i];

		if (off >= s->off && off < s->off + s->filesz) {
			*vaddr = off - s->off + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* NT_STAPSDT, in notes named "stapsdt" (SystemTap's sys/sdt.h, and PyTorch's own macro). */
#define NT_STAPSDT 3

/* The section called name and its header, or NULL. */
static Elf_Scn *find_section(struct elf_obj *o, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(o->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(o->elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * One note's descriptor: three address-sized words (pc, base, semaphore), then provider, name
 * and argument string, each NUL-terminated. Little-endian objects only (x86-64, arm64).
 */
static int sdt_parse(const char *desc, size_t len, bool is64, struct elf_sdt *n)
{
	size_t asz = is64 ? 8 : 4, off = 3 * asz, i;
	const char *str[3];
	uint64_t w[3] = {0};

	if (len < off + 3)
		return -EINVAL;
	for (i = 0; i < 3; i++)
		memcpy(&w[i], desc + i * asz, asz);
	for (i = 0; i < 3; i++) {
		const char *end = memchr(desc + off, 0, len - off);

		if (!end)
			return -EINVAL;
		str[i] = desc + off;
		off = (size_t)(end - desc) + 1;
		if (i < 2 && off >= len)
			return -EINVAL;
	}
	n->pc_vaddr = w[0];
	n->sema_vaddr = w[2];
	n->provider = str[0];
	n->name = str[1];
	n->args = str[2];
	return 0;
}

int elf_obj__for_each_sdt(struct elf_obj *o, int (*fn)(const struct elf_sdt *n, void *ctx),
			  void *ctx)
{
	bool is64 = gelf_getclass(o->elf) == ELFCLASS64;
	uint64_t base_sec = 0;
	size_t off = 0, name_off, desc_off;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *d;
	GElf_Nhdr nh;
	GElf_Ehdr eh;

	if (!gelf_getehdr(o->elf, &eh) || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return 0;
	if (find_section(o, ".stapsdt.base", &sh))
		base_sec = sh.sh_addr;
	scn = find_section(o, ".note.stapsdt", &sh);
	if (!scn || sh.sh_type != SHT_NOTE)
		return 0;
	d = elf_getdata(scn, NULL);
	while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *desc = (const char *)d->d_buf + desc_off;
		struct elf_sdt n = {0};
		uint64_t base;
		int ret;

		if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
		    memcmp((const char *)d->d_buf + name_off, "stapsdt", 8))
			continue;
		if (sdt_parse(desc, nh.n_descsz, is64, &n))
			return -EINVAL;
		memcpy(&base, desc + (is64 ? 8 : 4), is64 ? 8 : 4);
		if (!is64)
			base &= 0xffffffffULL;
		/* Prelink moved the object: shift by what .stapsdt.base moved (as libbpf 1.6+
		 * does, only for a note that recorded a base). */
		if (base_sec && base) {
			n.pc_vaddr += base_sec - base;
			if (n.sema_vaddr)
				n.sema_vaddr += base_sec - base;
		}
		n.base_missing = base_sec && !base;
		if (elf_obj__vaddr_to_off(o, n.pc_vaddr, &n.pc_off))
			n.pc_off = ~0ULL;
		n.sema_off = ~0ULL;
		if (n.sema_vaddr)
			elf_obj__vaddr_to_off(o, n.sema_vaddr, &n.sema_off);
		ret = fn(&n, ctx);
		if (ret)
			return ret > 0 ? 0 : ret;
	}
	return 0;
}

/* The data of the PROGBITS section called name, or NULL. */
static Elf_Data *progbits(struct elf_obj *o, const char *section)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(o->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(o->elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, section))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

struct sym_vec {
	struct sym *v;
	size_t n, cap;
	int err;
};

static int collect_sym(const struct elf_func *f, void *ctx)
{
	struct sym_vec *sv = ctx;

	if (vec_grow((void **)&sv->v, &sv->cap, sv->n, sizeof(*sv->v))) {
		sv->err = -ENOMEM;
		return 1;
	}
	sv->v[sv->n++] =
	    (struct sym){f->vaddr, f->size, f->name, (f->dynamic ? 0 : 2) + (f->local ? 0 : 1)};
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return y->prio - x->prio;
}

static void build_syms(struct elf_obj *o)
{
	struct sym_vec sv = {};
	size_t i, n = 0;

	o->syms_built = true;
	elf_obj__for_each_func(o, collect_sym, &sv);
	if (sv.err || !sv.n) {
		free(sv.v);
		return;
	}
	qsort(sv.v, sv.n, sizeof(*sv.v), sym_cmp);
	/* One symbol per address: the best-named alias sorted first. */
	for (i = 0; i < sv.n; i++)
		if (!n || sv.v[n - 1].vaddr != sv.v[i].vaddr)
			sv.v[n++] = sv.v[i];
	o->syms = sv.v;
	o->nr_syms = n;
}

const char *elf_obj__symbolize(struct elf_obj *o, uint64_t vaddr, uint64_t *off_in_sym)
{
	const struct sym *s;
	size_t lo;

	if (!o->syms_built)
		build_syms(o);
	lo = VEC_BOUND(o->syms, o->nr_syms, vaddr, vaddr, true);
	if (!lo)
		return NULL;
	s = &o->syms[lo - 1];
	/* Size-less symbols (hand-written assembly) cover up to the next symbol. */
	if (s->size ? vaddr >= s->vaddr + s->size : lo < o->nr_syms && vaddr >= o->syms[lo].vaddr)
		return NULL;
	*off_in_sym = vaddr - s->vaddr;
	return s->name;
}

const char *elf_obj__build_id(const struct elf_obj *o)
{
	return o->build_id;
}

bool elf_obj__is_exec(const struct elf_obj *o)
{
	return o->is_exec;
}

uint16_t elf_obj__machine(const struct elf_obj *o)
{
	return o->machine;
}

bool elf_obj__has_symtab(const struct elf_obj *o)
{
	return o->has_symtab;
}

bool elf_obj__needs_debug(struct elf_obj *o)
{
	if (o->has_symtab || o->debug_asked)
		return false;
	o->debug_asked = true;
	return true;
}

const char *elf_obj__debuglink(struct elf_obj *o, uint32_t *crc)
{
	/* A file name, NUL, padding to 4 bytes, then the CRC-32 of the debug file. */
	Elf_Data *d = progbits(o, ".gnu_debuglink");
	const char *name;
	size_t len;

	if (!d || !d->d_buf || d->d_size < 8)
		return NULL;
	name = d->d_buf;
	len = strnlen(name, d->d_size);
	/* A name with a path in it would let the file pick where we look: refused. */
	if (!len || strchr(name, '/') || (len + 4) / 4 * 4 + 4 > d->d_size)
		return NULL;
	memcpy(crc, (char *)d->d_buf + (len + 4) / 4 * 4, sizeof(*crc));
	return name;
}

static int file_crc32(int fd, uint32_t *out)
{
	unsigned char buf[1 << 16];
	uLong crc = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*out = (uint32_t)crc;
	return 0;
}

int elf_obj__add_debug(struct elf_obj *o, const char *path)
{
	struct elf_obj *d;
	uint32_t want, got;
	int err;

	if (o->debug)
		return -EEXIST;
	err = elf_obj__open(path, &d);
	if (err)
		return err;
	err = -ENODATA;
	if (!d->symtab || d->machine != o->machine)
		goto cleanup;
	/*
	 * The same build: by build-id when the object has one, else by the CRC its
	 * .gnu_debuglink names. A debug file of another build would name wrong functions.
	 */
	err = -ESTALE;
	if (o->build_id[0]) {
		if (strcmp(o->build_id, d->build_id))
			goto cleanup;
	} else if (!elf_obj__debuglink(o, &want)) {
		goto cleanup;
	} else {
		err = file_crc32(d->fd, &got);
		if (!err && got != want)
			err = -ESTALE;
		if (err)
			goto cleanup;
	}
	o->debug = d;
	o->has_symtab = true;
	/* Names from now on come from both: the table is rebuilt on the next lookup. */
	free(o->syms);
	o->syms = NULL;
	o->nr_syms = 0;
	o->syms_built = false;
	return 0;
cleanup:
	elf_obj__free(d);
	return err;
}

const struct elf_dyn *elf_obj__dyn(struct elf_obj *o)
{
	Elf_Scn *scn = NULL;
	size_t i, n, cap = 0;

	if (o->dyn_read)
		return &o->dyn;
	while ((scn = elf_nextscn(o->elf, scn))) {
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (i = 0; i < n; i++) {
			const char *str;
			GElf_Dyn dy;

			if (!gelf_getdyn(d, i, &dy) || dy.d_tag == DT_NULL)
				break;
			if (dy.d_tag != DT_NEEDED && dy.d_tag != DT_SONAME &&
			    dy.d_tag != DT_RPATH && dy.d_tag != DT_RUNPATH)
				continue;
			str = elf_strptr(o->elf, sh.sh_link, dy.d_un.d_val);
			if (!str)
				continue;
			if (dy.d_tag == DT_SONAME)
				o->dyn.soname = str;
			else if (dy.d_tag == DT_RPATH)
				o->dyn.rpath = str;
			else if (dy.d_tag == DT_RUNPATH)
				o->dyn.runpath = str;
			else if (vec_grow((void **)&o->dyn.needed, &cap, o->dyn.nr_needed,
					  sizeof(*o->dyn.needed)))
				return NULL;
			else
				o->dyn.needed[o->dyn.nr_needed++] = str;
		}
		break;
	}
	o->dyn_read = true;
	return &o->dyn;
}

const char *elf_obj__interp(const struct elf_obj *o)
{
	return o->interp;
}

bool elf_obj__section_has(struct elf_obj *o, const char *section, const char *needle)
{
	Elf_Data *d = progbits(o, section);

	return d && d->d_buf && memmem(d->d_buf, d->d_size, needle, strlen(needle));
}

bool elf_obj__has_eh_frame(struct elf_obj *o)
{
	Elf_Data *d = progbits(o, ".eh_frame");

	/* A terminator alone (4 bytes of zero) describes nothing. */
	return d && d->d_size > 8;
}

/* Bytes mapped at a time: what a scan of a 500 MB object holds, not the object. */
#define WINDOW (8u << 20)

/* The file range [off, off + len) in windows that overlap by `overlap` bytes. */
static int scan_range(const struct elf_obj *o, uint64_t off, uint64_t len, size_t overlap,
		      elf_window_fn fn, void *ctx)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t at = off, end = off + len;
	int ret = 0;

	while (at < end && !ret) {
		uint64_t base = at & ~(uint64_t)(page - 1), n = end - at;
		size_t own, map;
		uint8_t *p;

		if (n > WINDOW)
			n = WINDOW;
		own = (size_t)n;
		if (at + n < end)
			n = end - at < n + overlap ? end - at : n + overlap;
		map = (size_t)(at - base + n);
		p = mmap(NULL, map, PROT_READ, MAP_PRIVATE, o->fd, (off_t)base);
		if (p == MAP_FAILED)
			return -errno;
		ret = fn(at, p + (at - base), (size_t)n, at + own < end ? own : (size_t)n, ctx);
		munmap(p, map);
		at += own;
	}
	return ret;
}

int elf_obj__for_each_rodata_window(struct elf_obj *o, size_t overlap, elf_window_fn fn, void *ctx)
{
	size_t shstrndx, nph = 0, i, size = 0;
	Elf_Scn *scn = NULL;
	bool sections = false;
	int ret = 0;

	elf_rawfile(o->elf, &size);
	if (!elf_getshdrstrndx(o->elf, &shstrndx)) {
		while (!ret && (scn = elf_nextscn(o->elf, scn))) {
			const char *name;
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
			    !(sh.sh_flags & SHF_ALLOC) ||
			    (sh.sh_flags & (SHF_WRITE | SHF_EXECINSTR)))
				continue;
			name = elf_strptr(o->elf, shstrndx, sh.sh_name);
			if (!name || strncmp(name, ".rodata", 7))
				continue;
			sections = true;
			if (sh.sh_offset <= size && sh.sh_size <= size - sh.sh_offset)
				ret = scan_range(o, sh.sh_offset, sh.sh_size, overlap, fn, ctx);
		}
		if (sections || ret)
			return ret;
	}
	/* No section headers (or no .rodata): the read-only, non-executable segments. */
	if (elf_getphdrnum(o->elf, &nph))
		return 0;
	for (i = 0; i < nph && !ret; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_W | PF_X)) || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			continue;
		ret = scan_range(o, ph.p_offset, ph.p_filesz, overlap, fn, ctx);
	}
	return ret;
}

const uint8_t *elf_obj__image(const struct elf_obj *o, size_t *size)
{
	return (const uint8_t *)elf_rawfile(o->elf, size);
}

ssize_t elf_obj__read(const struct elf_obj *o, uint64_t off, void *buf, size_t len)
{
	ssize_t n = pread(o->fd, buf, len, off);

	return n < 0 ? -errno : n;
}

/* A defined data object called name in one symbol table: 0 and its address, or -ENOENT. */
static int find_object(struct elf_obj *o, Elf_Scn *scn, const char *name, uint64_t *vaddr,
		       uint64_t *size)
{
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Shdr sh;
	size_t i, n;

	if (!d || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -ENOENT;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 1; i < n; i++) {
		const char *s;
		GElf_Sym sym;

		if (!gelf_getsym(d, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(o->elf, sh.sh_link, sym.st_name);
		if (s && !strcmp(s, name)) {
			*vaddr = sym.st_value;
			*size = sym.st_size;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_obj__find_object(struct elf_obj *o, const char *name, uint64_t *vaddr, uint64_t *size)
{
	if (!find_object(o, o->dynsym, name, vaddr, size))
		return 0;
	return find_object(o, o->symtab, name, vaddr, size);
}

int elf_obj__load_bias(const struct elf_obj *o, uint64_t start, uint64_t pgoff, uint64_t page,
		       uint64_t *bias)
{
	size_t i;

	/* The kernel maps a segment from its offset rounded down to a page, at its address
	 * rounded down the same way, plus the bias. */
	for (i = 0; i < o->nr_segs; i++) {
		const struct seg *s = &o->segs[i];

		if ((s->off & ~(page - 1)) == pgoff) {
			*bias = start - (s->vaddr & ~(page - 1));
			return 0;
		}
	}
	return -ENOENT;
}

Elf *elf_obj__libelf(const struct elf_obj *o)
{
	return o->elf;
}

struct elf_obj *elf_obj__debug_obj(const struct elf_obj *o)
{
	return o->debug;
}
