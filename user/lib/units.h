/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Parsing of durations ("500ms", "10s", "2m", "1h") and sizes ("64MiB", "80GiB", "4096"). */
#ifndef GPULEAK_UNITS_H
#define GPULEAK_UNITS_H

#include <stdint.h>

/* 0 or -EINVAL; a bare number is seconds. */
int parse_duration_ns(const char *s, uint64_t *ns);
/* 0 or -EINVAL/-ERANGE; B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB (all binary: 1 KiB = 1024). */
int parse_bytes(const char *s, uint64_t *bytes);

#endif
