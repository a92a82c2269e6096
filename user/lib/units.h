/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Units both ways: parsing of durations ("500ms", "10s", "2m", "1h") and sizes ("64MiB",
 * "80GiB", "4096"), and sizes as every output prints them ("1.50 MiB").
 */
#ifndef GPULEAK_LIB_UNITS_H
#define GPULEAK_LIB_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* 0 or -EINVAL; a bare number is seconds. */
int parse_duration_ns(const char *s, uint64_t *ns);
/* 0 or -EINVAL/-ERANGE; B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB (all binary: 1 KiB = 1024). */
int parse_bytes(const char *s, uint64_t *bytes);

/* "1.50 MiB": binary units, 3 significant digits; buf is returned. */
const char *fmt_bytes(uint64_t bytes, char *buf, size_t len);

#endif
