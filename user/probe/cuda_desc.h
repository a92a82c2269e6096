/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the structs copied from CUDA calls mean in bytes (catalog entries with CAT_DESC_SIZE):
 * arrays from their channel format or array format and their extent, mipmapped arrays over
 * their levels, multicast objects from their size. Layouts from /usr/local/cuda/include
 * (driver_types.h, cuda.h), checked by the stand-ins compiled against them.
 */
#ifndef GPULEAK_PROBE_CUDA_DESC_H
#define GPULEAK_PROBE_CUDA_DESC_H

#include <stdint.h>
#include "gpuleak.h"

/*
 * The bytes call record r (with its struct copies) allocates: 0 and *bytes, or -EINVAL when
 * they cannot be told (a planar YUV format, an unknown one, a descriptor that could not be
 * read): the allocation is then of unknown size.
 */
int cuda_desc__bytes(const struct gl_call_rec *r, uint64_t *bytes);

#endif
