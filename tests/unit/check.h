/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Assertions for the C unit tests, in the style of the BPF selftests: each returns whether it
 * held, so a test can `goto cleanup` on failure instead of leaking what it set up.
 */
#ifndef GPULEAK_CHECK_H
#define GPULEAK_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

static int check_failures;

#define CHECK(cond, fmt, ...)                                                                      \
	({                                                                                         \
		bool ___ok = (cond);                                                               \
		if (!___ok) {                                                                      \
			fprintf(stderr, "%s:%d: check failed: %s: " fmt "\n", __FILE__, __LINE__,  \
				#cond, ##__VA_ARGS__);                                             \
			check_failures++;                                                          \
		}                                                                                  \
		___ok;                                                                             \
	})

#define CHECK_U64(actual, expected, what)                                                          \
	({                                                                                         \
		uint64_t ___a = (actual), ___e = (expected);                                       \
		CHECK(___a == ___e, "%s: expected %" PRIu64 ", got %" PRIu64, what, ___e, ___a);   \
	})

struct unit_test {
	const char *name;
	void (*fn)(void);
};

/* Runs each test, prints one line per test, exits nonzero if any check failed. */
static inline int run_unit_tests(const struct unit_test *t, int n)
{
	int i, failed_tests = 0;

	for (i = 0; i < n; i++) {
		int before = check_failures;

		t[i].fn();
		printf("%s %s\n", check_failures == before ? "PASS" : "FAIL", t[i].name);
		failed_tests += check_failures != before;
	}
	return failed_tests ? 1 : 0;
}

#endif
