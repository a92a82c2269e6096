// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "symbols/demangle.h"

/*
 * C++ names are demangled with the C++ ABI's own entry point in libstdc++ (libstdc++.so.6,
 * present wherever C++ runs). libiberty's cplus_demangle is the same GCC demangler, but
 * Debian ships it only as a static archive of a binutils build dependency; libstdc++'s copy
 * is maintained with the compiler and follows every ABI addition. Opened at the first
 * mangled name, not linked: loading libstdc++ costs every gpuleak process ~2.5 ms before
 * main() on a VM, and most never demangle (`make bench`, attach). Without it, names stay as
 * they are.
 */
static char *(*cxa_demangle)(const char *mangled, char *buf, size_t *len, int *status);
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_open(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

	if (h)
		*(void **)&cxa_demangle = dlsym(h, "__cxa_demangle");
}

char *demangle__func_name(const char *sym)
{
	char *name = strndup(sym, strcspn(sym, "@")), *d;
	int status = -1;

	if (!name || strncmp(name, "_Z", 2))
		return name;
	pthread_once(&cxa_once, cxa_open);
	if (!cxa_demangle)
		return name;
	d = cxa_demangle(name, NULL, NULL, &status);
	if (status || !d) {
		free(d);
		return name; /* not a valid mangled name after all: as it is */
	}
	free(name);
	return d;
}
