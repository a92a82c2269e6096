/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CPython as BPF walks it: which object of a process is the interpreter, its version, and
 * the layout of the structures its frames hang from (struct gl_py_cfg), per version from
 * 3.10 to 3.13 (x86-64, default builds with the GIL). 3.13 publishes its own offsets in
 * _PyRuntime (_Py_DebugOffsets): they are read from the object and win over the table.
 *
 * Everything is read from the object's file: _PyRuntime and Py_Version are initialised
 * data, so a process is configured before its interpreter has run a line.
 */
#ifndef GPULEAK_PROBE_PY_ABI_H
#define GPULEAK_PROBE_PY_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuleak.h"

struct elf_obj;

/* Oldest and newest minor versions walked. */
#define PY_ABI_MINOR_MIN 10
#define PY_ABI_MINOR_MAX 13

struct py_abi {
	uint16_t version;	  /* major << 8 | minor */
	uint32_t version_hex;	  /* PY_VERSION_HEX (Py_Version, 3.11+), 0: micro unknown */
	uint64_t runtime_vaddr;	  /* _PyRuntime in the object's addresses */
	bool debug_offsets;	  /* the layout was checked against _Py_DebugOffsets */
	unsigned int debug_fixed; /* fields the table had wrong, taken from them */
	struct gl_py_cfg cfg;	  /* runtime: runtime_vaddr, to be moved by the load bias */
};

/*
 * Whether the object is a CPython interpreter (it defines _PyRuntime) and how to walk it.
 * name is its file name, to check the version against (libpython3.12.so.1.0, python3.11).
 * 0 with *out filled; -ENOENT: not an interpreter; -ENOTSUP: one gpuleak cannot walk (a
 * version outside 3.10..3.13, a free-threaded build), with why in msg; -errno.
 */
int py_abi__detect(struct elf_obj *elf, const char *name, struct py_abi *out, char *msg,
		   size_t len);
/* The built-in layout of a version (major << 8 | minor), or NULL. */
const struct gl_py_cfg *py_abi__layout(uint16_t version);
/* The offset of a code object's instructions (co_code_adaptive, 3.11+), 0: unknown. */
uint16_t py_abi__code_units(uint16_t version);
/* "3.12" into buf. */
const char *py_abi__version_str(uint16_t version, char *buf, size_t len);

#endif
