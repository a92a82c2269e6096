// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CPython's layouts, read from each version's DWARF (offsetof the compiler used, gdb on the
 * pyenv builds 3.10.13, 3.11.7, 3.12.1, 3.13.0 and on Debian's 3.11.2 debug file: the two
 * 3.11 builds agree in every field). tests/test_python.py checks this table against the
 * DWARF of every interpreter on the machine that has it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "probe/elf_obj.h"
#include "probe/py_abi.h"

#define NONE GL_PY_OFF_NONE

static const struct gl_py_cfg layouts[] = {
    {
	.version = 0x030a,
	.chain = GL_PY_CHAIN_FRAMEOBJ,
	.owner_shim = 0xff,
	.rt_interp_head = 32,
	.is_next = 0,
	.is_threads_head = 8, /* tstate_head */
	.ts_next = 8,
	.ts_thread_id = 176,
	.ts_frame = 24, /* frame */
	.ts_read = 184,
	.ts_chunk = NONE,
	.ts_top = NONE,
	.chunk_data = NONE,
	.cf_current_frame = NONE,
	.fr_back = 24,
	.fr_code = 32,
	.fr_instr = 96, /* f_lasti, int */
	.fr_owner = NONE,
	.fr_entry = NONE,
	.fr_read = 104,
	.co_ptrs = 104,
	.co_ptrs_len = 24, /* co_filename, co_name, co_linetable; then co_zombieframe */
	.co_filename = 104,
	.co_name = 112,
	.co_linetable = 120,
	.co_firstlineno = 40,
	.str_state = 32,
	.str_length = 16,
	.str_ascii_data = 48,
	.str_compact_data = 72,
	.bytes_size = 16,
	.bytes_data = 32,
    },
    {
	.version = 0x030b,
	.chain = GL_PY_CHAIN_CFRAME,
	.owner_shim = 0xff, /* 3.11 pushes no shims: is_entry marks a call's first frame */
	.rt_interp_head = 40,
	.is_next = 0,
	.is_threads_head = 16,
	.ts_next = 8,
	.ts_thread_id = 152,
	.ts_frame = 56, /* cframe */
	.ts_read = 312,
	.ts_chunk = 296,
	.ts_top = 304,
	.chunk_data = 24,
	.cf_current_frame = 8,
	.fr_back = 48,
	.fr_code = 32,
	.fr_instr = 56, /* prev_instr */
	.fr_owner = NONE,
	.fr_entry = 68,
	.fr_read = 72,
	.co_ptrs = 112,
	.co_ptrs_len = 32, /* co_filename, co_name, co_qualname, co_linetable */
	.co_filename = 112,
	.co_name = 128, /* co_qualname */
	.co_linetable = 136,
	.co_firstlineno = 72,
	.str_state = 32,
	.str_length = 16,
	.str_ascii_data = 48,
	.str_compact_data = 72,
	.bytes_size = 16,
	.bytes_data = 32,
    },
    {
	.version = 0x030c,
	.chain = GL_PY_CHAIN_CFRAME,
	.owner_shim = 3, /* FRAME_OWNED_BY_CSTACK */
	.rt_interp_head = 40,
	.is_next = 0,
	.is_threads_head = 72,
	.ts_next = 8,
	.ts_thread_id = 136,
	.ts_frame = 56, /* cframe */
	.ts_read = 248,
	.ts_chunk = 232,
	.ts_top = 240,
	.chunk_data = 24,
	.cf_current_frame = 0,
	.fr_back = 8,
	.fr_code = 0,
	.fr_instr = 56, /* prev_instr */
	.fr_owner = 70,
	.fr_entry = NONE,
	.fr_read = 72,
	.co_ptrs = 112,
	.co_ptrs_len = 32,
	.co_filename = 112,
	.co_name = 128,
	.co_linetable = 136,
	.co_firstlineno = 68,
	.str_state = 32,
	.str_length = 16,
	.str_ascii_data = 40,
	.str_compact_data = 56,
	.bytes_size = 16,
	.bytes_data = 32,
    },
    {
	.version = 0x030d,
	.chain = GL_PY_CHAIN_DIRECT,
	.owner_shim = 3,
	.rt_interp_head = 632,
	.is_next = 7264,
	.is_threads_head = 7344,
	.ts_next = 8,
	.ts_thread_id = 152,
	.ts_frame = 72, /* current_frame */
	.ts_read = 248,
	.ts_chunk = 232,
	.ts_top = 240,
	.chunk_data = 24,
	.cf_current_frame = NONE,
	.fr_back = 8,
	.fr_code = 0,	/* f_executable */
	.fr_instr = 56, /* instr_ptr */
	.fr_owner = 70,
	.fr_entry = NONE,
	.fr_read = 72,
	.co_ptrs = 112,
	.co_ptrs_len = 32,
	.co_filename = 112,
	.co_name = 128,
	.co_linetable = 136,
	.co_firstlineno = 68,
	.str_state = 32,
	.str_length = 16,
	.str_ascii_data = 40,
	.str_compact_data = 56,
	.bytes_size = 16,
	.bytes_data = 32,
    },
};

/* co_code_adaptive, where 3.11+ instructions start in the code object. */
static const uint16_t code_units[] = {0, 184, 192, 200};

const struct gl_py_cfg *py_abi__layout(uint16_t version)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].version == version)
			return &layouts[i];
	return NULL;
}

uint16_t py_abi__code_units(uint16_t version)
{
	unsigned int minor = version & 0xff;

	if (version >> 8 != 3 || minor < PY_ABI_MINOR_MIN || minor > PY_ABI_MINOR_MAX)
		return 0;
	return code_units[minor - PY_ABI_MINOR_MIN];
}

const char *py_abi__version_str(uint16_t version, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u", version >> 8, version & 0xff);
	return buf;
}

/* Bytes of the object's initialised data at vaddr: 0, or -ENOENT outside its file. */
static int read_at(const struct elf_obj *elf, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off;

	if (elf_obj__vaddr_to_off(elf, vaddr, &off) ||
	    elf_obj__read(elf, off, buf, len) != (ssize_t)len)
		return -ENOENT;
	return 0;
}

struct has_func {
	const char *name;
	bool found;
};

static int find_func(const struct elf_func *f, void *ctx)
{
	struct has_func *h = ctx;

	if (strcmp(f->name, h->name))
		return 0;
	h->found = true;
	return 1;
}

static bool has_func(struct elf_obj *elf, const char *name)
{
	struct has_func h = {.name = name};

	elf_obj__for_each_func(elf, find_func, &h);
	return h.found;
}

/*
 * The minor version a file name says (python3.11, libpython3.12.so.1.0, libpython3.13t.so):
 * -1 when it says none. *threaded: the free-threaded build's "t".
 */
static int name_minor(const char *name, bool *threaded)
{
	const char *p = strstr(name, "python3.");
	int minor = 0, digits = 0;

	*threaded = false;
	if (!p)
		return -1;
	for (p += 8; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
		minor = minor * 10 + (*p - '0');
	*threaded = *p == 't';
	return digits ? minor : -1;
}

/* _Py_DebugOffsets (3.13): where each value sits in the struct at _PyRuntime + 0. */
#define DBG_COOKIE	     "xdebugpy"
#define DBG_VERSION	     8
#define DBG_FREE_THREADED    16
#define DBG_RT_INTERP_HEAD   40
#define DBG_IS_NEXT	     64
#define DBG_IS_THREADS_HEAD  72
#define DBG_TS_NEXT	     168
#define DBG_TS_CURRENT_FRAME 184
#define DBG_TS_THREAD_ID     192
#define DBG_TS_CHUNK	     208
#define DBG_FR_PREVIOUS	     232
#define DBG_FR_EXECUTABLE    240
#define DBG_FR_INSTR_PTR     248
#define DBG_FR_OWNER	     264
#define DBG_CO_FILENAME	     280
#define DBG_CO_QUALNAME	     296
#define DBG_CO_LINETABLE     304
#define DBG_CO_FIRSTLINENO   312
#define DBG_BYTES_SIZE	     520
#define DBG_BYTES_DATA	     528
#define DBG_STR_STATE	     544
#define DBG_STR_ASCII_SIZE   560
#define DBG_SIZE_313	     584

static void take(uint16_t *field, const uint8_t *dbg, unsigned int at, unsigned int *fixed)
{
	uint64_t v;

	memcpy(&v, dbg + at, sizeof(v));
	if (v > 0xfffe || v == *field)
		return;
	*field = (uint16_t)v;
	(*fixed)++;
}

/*
 * 3.13's own account of its layout, over the table's: a distribution's patch that moves a
 * field is followed. -ENOTSUP for a free-threaded build, -EINVAL when it is not there.
 */
static int debug_offsets(struct elf_obj *elf, struct py_abi *a, char *msg, size_t len)
{
	uint8_t d[DBG_SIZE_313];
	uint64_t version, threaded;
	unsigned int fixed = 0;
	struct gl_py_cfg *c = &a->cfg;
	uint16_t top_off;

	if (read_at(elf, a->runtime_vaddr, d, sizeof(d)) || memcmp(d, DBG_COOKIE, 8))
		return -EINVAL;
	memcpy(&version, d + DBG_VERSION, 8);
	memcpy(&threaded, d + DBG_FREE_THREADED, 8);
	if (threaded) {
		snprintf(msg, len, "a free-threaded build (no GIL): its layouts differ");
		return -ENOTSUP;
	}
	if (a->version_hex && version != a->version_hex)
		return -EINVAL;
	/* datastack_top follows datastack_chunk, which the struct gives. */
	top_off = c->ts_top - c->ts_chunk;
	take(&c->rt_interp_head, d, DBG_RT_INTERP_HEAD, &fixed);
	take(&c->is_next, d, DBG_IS_NEXT, &fixed);
	take(&c->is_threads_head, d, DBG_IS_THREADS_HEAD, &fixed);
	take(&c->ts_next, d, DBG_TS_NEXT, &fixed);
	take(&c->ts_frame, d, DBG_TS_CURRENT_FRAME, &fixed);
	take(&c->ts_thread_id, d, DBG_TS_THREAD_ID, &fixed);
	take(&c->ts_chunk, d, DBG_TS_CHUNK, &fixed);
	c->ts_top = c->ts_chunk + top_off;
	take(&c->fr_back, d, DBG_FR_PREVIOUS, &fixed);
	take(&c->fr_code, d, DBG_FR_EXECUTABLE, &fixed);
	take(&c->fr_instr, d, DBG_FR_INSTR_PTR, &fixed);
	take(&c->fr_owner, d, DBG_FR_OWNER, &fixed);
	take(&c->co_filename, d, DBG_CO_FILENAME, &fixed);
	take(&c->co_name, d, DBG_CO_QUALNAME, &fixed);
	take(&c->co_linetable, d, DBG_CO_LINETABLE, &fixed);
	take(&c->co_firstlineno, d, DBG_CO_FIRSTLINENO, &fixed);
	take(&c->bytes_size, d, DBG_BYTES_SIZE, &fixed);
	take(&c->bytes_data, d, DBG_BYTES_DATA, &fixed);
	take(&c->str_state, d, DBG_STR_STATE, &fixed);
	take(&c->str_ascii_data, d, DBG_STR_ASCII_SIZE, &fixed);
	a->debug_offsets = true;
	a->debug_fixed = fixed;
	return 0;
}

/* Whether every field is inside what BPF reads of its structure, and reads in bounds. */
static bool cfg_fits(const struct gl_py_cfg *c)
{
	uint16_t fr_end = c->fr_back > c->fr_code ? c->fr_back : c->fr_code;

	if (c->fr_instr > fr_end)
		fr_end = c->fr_instr;
	fr_end += 8;
	if (c->fr_owner != NONE && c->fr_owner >= fr_end)
		fr_end = c->fr_owner + 1;
	if (c->fr_entry != NONE && c->fr_entry >= fr_end)
		fr_end = c->fr_entry + 1;
	if (fr_end > c->fr_read || c->fr_read > 120)
		return false;
	if (c->ts_thread_id + 8 > c->ts_read || c->ts_frame + 8 > c->ts_read ||
	    (c->ts_top != NONE && c->ts_top + 8 > c->ts_read) || c->ts_read > 504)
		return false;
	return c->co_filename >= c->co_ptrs && c->co_filename < c->co_ptrs + 32 &&
	       c->co_name >= c->co_ptrs && c->co_name < c->co_ptrs + 32 &&
	       c->co_linetable >= c->co_ptrs && c->co_linetable < c->co_ptrs + 32 &&
	       (c->co_ptrs_len == 24 || c->co_ptrs_len == 32) && c->str_length <= 32 &&
	       c->str_state <= 36;
}

int py_abi__detect(struct elf_obj *elf, const char *name, struct py_abi *out, char *msg, size_t len)
{
	uint64_t size, vaddr, hex = 0;
	const struct gl_py_cfg *layout;
	unsigned int minor;
	bool threaded;
	int nm, err;

	memset(out, 0, sizeof(*out));
	msg[0] = 0;
	if (elf_obj__find_object(elf, "_PyRuntime", &out->runtime_vaddr, &size))
		return -ENOENT;
	nm = name_minor(name, &threaded);
	if (threaded) {
		snprintf(msg, len, "a free-threaded build (no GIL): its layouts differ");
		return -ENOTSUP;
	}
	/* Py_Version (3.11+) is PY_VERSION_HEX; before it the API it exports tells. */
	if (!elf_obj__find_object(elf, "Py_Version", &vaddr, &size) && size >= 4 &&
	    !read_at(elf, vaddr, &hex, 4)) {
		out->version_hex = (uint32_t)hex;
		out->version = (uint16_t)(hex >> 16);
	} else if (has_func(elf, "PyAIter_Check")) {
		out->version = 0x030a;
	} else {
		snprintf(msg, len, "Python 3.9 or older (Python frames need 3.%d to 3.%d)",
			 PY_ABI_MINOR_MIN, PY_ABI_MINOR_MAX);
		return -ENOTSUP;
	}
	minor = out->version & 0xff;
	if (out->version >> 8 != 3 || minor < PY_ABI_MINOR_MIN || minor > PY_ABI_MINOR_MAX) {
		snprintf(msg, len, "Python %u.%u (Python frames need 3.%d to 3.%d)",
			 out->version >> 8, minor, PY_ABI_MINOR_MIN, PY_ABI_MINOR_MAX);
		return -ENOTSUP;
	}
	/* A name that says another version: the object's own symbols are what it is. */
	if (nm >= 0 && (unsigned int)nm != minor)
		snprintf(msg, len, "named for 3.%d, its symbols say 3.%u", nm, minor);
	layout = py_abi__layout(out->version);
	if (!layout)
		return -ENOTSUP;
	out->cfg = *layout;
	out->cfg.runtime = out->runtime_vaddr;
	if (minor >= 13) {
		err = debug_offsets(elf, out, msg, len);
		if (err == -ENOTSUP)
			return err;
		if (err) {
			snprintf(msg, len,
				 "no _Py_DebugOffsets at _PyRuntime: not the build "
				 "gpuleak knows");
			return -ENOTSUP;
		}
	}
	if (!cfg_fits(&out->cfg)) {
		snprintf(msg, len, "its layout is beyond what gpuleak reads of it");
		return -ENOTSUP;
	}
	return 0;
}
