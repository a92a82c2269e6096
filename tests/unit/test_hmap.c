// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hmap against a brute-force reference under random puts and deletes. */
#include <stdlib.h>
#include "check.h"
#include "lib/hmap.h"

#define KEYS 4096

static void random_ops_match_reference(void)
{
	static uint64_t ref[KEYS];
	static bool present[KEYS];
	struct hmap h = {};
	unsigned int seed = 1;
	size_t i, n = 0;
	int op;

	for (op = 0; op < 200000; op++) {
		unsigned int k = rand_r(&seed) % KEYS;
		/* Keys that share k0 and differ in k1 must stay apart. */
		uint64_t k0 = k / 2, k1 = k % 2 ? 0xdeadbeefULL : 7;

		if (rand_r(&seed) % 3) {
			uint64_t v = rand_r(&seed);

			if (!CHECK(!hmap__put(&h, k0, k1, v), "put"))
				goto cleanup;
			n += !present[k];
			present[k] = true;
			ref[k] = v;
		} else {
			bool was = hmap__del(&h, k0, k1);

			if (!CHECK(was == present[k], "del of key %u returned %d", k, was))
				goto cleanup;
			n -= present[k];
			present[k] = false;
		}
	}
	CHECK_U64(h.n, n, "entries");
	for (i = 0; i < KEYS; i++) {
		uint64_t *v = hmap__get(&h, i / 2, i % 2 ? 0xdeadbeefULL : 7);

		if (!CHECK(!!v == present[i], "key %zu presence", i))
			goto cleanup;
		if (v)
			CHECK_U64(*v, ref[i], "value");
	}
cleanup:
	hmap__free(&h);
}

static void iteration_visits_each_once(void)
{
	struct hmap h = {};
	const struct hmap_slot *s;
	uint64_t sum = 0, i;
	size_t it = 0, n = 0;

	for (i = 1; i <= 1000; i++)
		hmap__put(&h, i, 0, i);
	while (hmap__next(&h, &it, &s)) {
		sum += s->val;
		n++;
	}
	CHECK_U64(n, 1000, "visited");
	CHECK_U64(sum, 500500, "sum of values");
	hmap__free(&h);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"hmap_random_ops_match_reference", random_ops_match_reference},
	    {"hmap_iteration_visits_each_once", iteration_visits_each_once},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
