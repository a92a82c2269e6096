// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "symbols/demangle.h"

/*
 * C++ names are demangled with the C++ ABI's own entry point in libstdc++ (linked as
 * libstdc++.so.6, present wherever C++ runs). libiberty's cplus_demangle is the same GCC
 * demangler, but Debian ships it only as a static archive of a binutils build dependency;
 * libstdc++'s copy is maintained with the compiler and follows every ABI addition.
 */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *demangle__func_name(const char *sym)
{
	char *name = strndup(sym, strcspn(sym, "@")), *d;
	int status = -1;

	if (!name || strncmp(name, "_Z", 2))
		return name;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status || !d) {
		free(d);
		return name; /* not a valid mangled name after all: as it is */
	}
	free(name);
	return d;
}
