// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "lib/units.h"

int parse_duration_ns(const char *s, uint64_t *ns)
{
	static const struct {
		const char *suffix;
		double mul;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6},   {"s", 1e9},
		     {"", 1e9}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
	char *end;
	double v;
	size_t i;

	if (!s || !*s)
		return -EINVAL;
	v = strtod(s, &end);
	if (end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].suffix)) {
			v *= units[i].mul;
			if (v >= 1.8e19)
				return -ERANGE;
			*ns = (uint64_t)v;
			return 0;
		}
	}
	return -EINVAL;
}

int parse_bytes(const char *s, uint64_t *bytes)
{
	static const struct {
		const char *suffix;
		unsigned int shift;
	} units[] = {{"", 0},	  {"b", 0},   {"k", 10},   {"kb", 10}, {"kib", 10},
		     {"m", 20},	  {"mb", 20}, {"mib", 20}, {"g", 30},  {"gb", 30},
		     {"gib", 30}, {"t", 40},  {"tb", 40},  {"tib", 40}};
	char *end;
	double v;
	size_t i;

	if (!s || !*s)
		return -EINVAL;
	v = strtod(s, &end);
	if (end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	while (*end == ' ')
		end++;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcasecmp(end, units[i].suffix)) {
			v *= (double)(1ULL << units[i].shift);
			if (v >= 1.8e19)
				return -ERANGE;
			*bytes = (uint64_t)(v + 0.5);
			return 0;
		}
	}
	return -EINVAL;
}

const char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	unsigned int u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, units[u]);
	return buf;
}
