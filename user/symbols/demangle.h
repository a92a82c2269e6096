/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Function names as a reader knows them, from ELF symbol names: without the symbol version
 * ("@VERSION", "@@VERSION") and, for C++, demangled by the C++ ABI's own demangler.
 */
#ifndef GPULEAK_SYMBOLS_DEMANGLE_H
#define GPULEAK_SYMBOLS_DEMANGLE_H

/*
 * sym without its version, demangled when it is a valid mangled C++ name ("_Z..."), else as
 * it is. A new string for the caller to free; NULL only without memory.
 */
char *demangle__func_name(const char *sym);

#endif
