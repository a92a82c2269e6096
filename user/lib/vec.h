/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Growing arrays: room for one more element, doubling from 64. */
#ifndef GPULEAK_VEC_H
#define GPULEAK_VEC_H

#include <errno.h>
#include <stdlib.h>

/* Room for element n of the array *v holding *cap elements of size bytes. 0 or -ENOMEM. */
static inline int vec_grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 64;
	p = realloc(*v, ncap * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

#endif
