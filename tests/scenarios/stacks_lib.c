// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstackhelper.so, built stripped (.dynsym only, like vendor libraries) for the `stacks`
 * scenario. It exports one C++-mangled function, gpuapp::cache::grow(void (*)(unsigned
 * long), unsigned long) (the name spelled out with an asm label: the test needs a mangled
 * name, not a C++ compiler), which calls a static function that no symbol table names,
 * which calls back into the program. A stack through it has a frame named from .dynsym
 * and demangled, and one only the object and offset can name.
 */
#include <stddef.h>

typedef void (*grow_cb)(unsigned long);

void cache_grow(grow_cb cb, unsigned long n) __asm__("_ZN6gpuapp5cache4growEPFvmEm");

static volatile unsigned long grown;

/* noinline and followed by work: a frame of its own, never a tail call */
static __attribute__((noinline)) void grow_hidden(grow_cb cb, unsigned long n)
{
	cb(n);
	grown += n;
}

__attribute__((visibility("default"))) void cache_grow(grow_cb cb, unsigned long n)
{
	grow_hidden(cb, n);
	grown++;
}
