/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which frames name a site is decided by shell globs (fnmatch) on objects and script files:
 * the built-in lists of pymerge.c and jssites.c, --site-skip, a caching allocator's own
 * objects (symbolizer__site_outside).
 */
#ifndef GPULEAK_SYMBOLS_GLOBS_H
#define GPULEAK_SYMBOLS_GLOBS_H

#include <fnmatch.h>
#include <stdbool.h>
#include <stddef.h>

/* name matches one of globs: n of them, or up to a NULL (n SIZE_MAX). NULL matches none. */
static inline bool globs__any(const char *const *globs, size_t n, const char *name)
{
	size_t i;

	for (i = 0; name && i < n && globs[i]; i++)
		if (!fnmatch(globs[i], name, 0))
			return true;
	return false;
}

#define GLOBS_N(a) (sizeof(a) / sizeof((a)[0]))

#endif
