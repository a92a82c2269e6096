/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python frames, named from what BPF sent (bpf/gpuleak.h: GL_REC_PY_CODE, GL_REC_PY_STACK)
 * and nothing else: a code object's file, qualified name, first line and line table, kept
 * per (process, code object, fingerprint), and each Python stack per (process, id). The
 * same records live and from a capture give the same names, with the process long gone.
 *
 * A Python frame is, to the rest of gpuleak, an address like any other: a value no user
 * address can take (PY_FRAME_BASE and up, outside the canonical halves of x86-64 and
 * arm64), one per (process, code object, line), named "qualname (file:line)". Stacks
 * hold them where the interpreter's evaluation frames were (pymerge.c merges).
 */
#ifndef GPULEAK_SYMBOLS_PYFRAMES_H
#define GPULEAK_SYMBOLS_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

#define PY_FRAME_BASE 0xfe00000000000000ULL

static inline bool py_frame_addr(uint64_t addr)
{
	return (addr & 0xff00000000000000ULL) == PY_FRAME_BASE;
}

/* A code object as its descriptor named it (strings UTF-8, owned by the table). */
struct py_code {
	pid_t pid;
	uint64_t code;
	uint32_t fp;
	int32_t firstlineno;
	uint16_t version;
	uint16_t flags; /* enum gl_py_code_flags */
	bool described; /* false: a placeholder for frames whose descriptor never came */
	char *file;	/* NULL: unread */
	char *name;	/* NULL: unread */
	uint8_t *table;
	size_t table_len;
};

/* A stack of Python frames, as BPF sent it. */
struct py_stack {
	pid_t pid;
	int32_t id;
	int32_t native_id;
	uint16_t nr, flags, version;
	uint64_t entry_mask;
	struct gl_py_frame frames[];
};

/* One Python frame's name: its code object's, at a line. */
struct py_frame_name {
	const char *file; /* as the code object has it; NULL: unknown */
	const char *name; /* qualified name (3.11+), name (3.10); NULL: unknown */
	int32_t line;	  /* 0: unknown */
};

struct pyframes;

int pyframes__new(struct pyframes **out);
/* Accepts NULL. */
void pyframes__free(struct pyframes *pf);
/*
 * A GL_REC_PY_CODE or GL_REC_PY_STACK record (any other kind: 0, nothing done). 0, -EINVAL
 * for one that does not add up (counted, left out), -ENOMEM.
 */
int pyframes__record(struct pyframes *pf, const struct gl_hdr *h);
/* Records left out as malformed. */
uint64_t pyframes__bad(const struct pyframes *pf);
/* The Python stack (pid, id), or NULL. */
const struct py_stack *pyframes__stack(const struct pyframes *pf, pid_t pid, int32_t id);
/* The code object of a frame of pid, or NULL when no descriptor of it came. */
const struct py_code *pyframes__code(const struct pyframes *pf, pid_t pid,
				     const struct gl_py_frame *f);
/*
 * The line frame f of version was at in code c: from its line table (3.10's PEP 626
 * table, 3.11+'s location table); 0 when it has none there.
 */
int32_t pyframes__line(const struct py_code *c, uint16_t version, const struct gl_py_frame *f);
/*
 * The address standing for frame f of pid (and version) at its line, made on first use.
 * *name tells what it is (valid as long as pf). 0 without memory.
 */
uint64_t pyframes__frame(struct pyframes *pf, pid_t pid, uint16_t version,
			 const struct gl_py_frame *f, struct py_frame_name *name);

/* ---- line tables, for the tests ---- */

/* 3.10 (PEP 626): the line of byte offset addr, 0: none. */
int32_t py_line_310(const uint8_t *t, size_t len, int32_t firstlineno, int64_t addr);
/* 3.11+ location table: the line of code unit `unit`, 0: none. */
int32_t py_line_311(const uint8_t *t, size_t len, int32_t firstlineno, uint64_t unit);

#endif
