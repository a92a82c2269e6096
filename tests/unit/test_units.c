// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include "check.h"
#include "lib/units.h"

static void durations(void)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} ok[] = {{"1", 1000000000ULL},
		  {"500ms", 500000000ULL},
		  {"2m", 120000000000ULL},
		  {"1.5s", 1500000000ULL},
		  {"10us", 10000ULL},
		  {"1h", 3600000000000ULL},
		  {"0", 0}};
	static const char *const bad[] = {"", "s", "-1s", "10 parsecs", "1e400", "nan"};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK(!parse_duration_ns(ok[i].s, &v), "%s parses", ok[i].s);
		CHECK_U64(v, ok[i].ns, ok[i].s);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(parse_duration_ns(bad[i], &v) < 0, "'%s' rejected", bad[i]);
}

static void sizes(void)
{
	static const struct {
		const char *s;
		uint64_t b;
	} ok[] = {{"4096", 4096},
		  {"1KiB", 1024},
		  {"64MiB", 64ULL << 20},
		  {"80GiB", 80ULL << 30},
		  {"1.5M", 3ULL << 19},
		  {"2 GB", 2ULL << 30},
		  {"7B", 7}};
	static const char *const bad[] = {"", "MiB", "-5", "12 apples", "1e30TiB"};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK(!parse_bytes(ok[i].s, &v), "%s parses", ok[i].s);
		CHECK_U64(v, ok[i].b, ok[i].s);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(parse_bytes(bad[i], &v) < 0, "'%s' rejected", bad[i]);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"units_durations", durations},
	    {"units_sizes", sizes},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
