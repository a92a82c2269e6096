// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the rules parser (--rules FILE, --rule TEXT, presets) on arbitrary
 * bytes, then the matchers on what it accepted. Besides not crashing, it checks what the
 * parser promises:
 *   - a rejected input adds no rule and says where: "SRC:LINE:COL: why";
 *   - an accepted rule, written back as its own text, parses to the same rule.
 * The matched names come from the input too, so patterns meet adversarial strings.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/rules.h"

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_rule(const struct rule *a, const struct rule *b)
{
	return a->kind == b->kind && same_str(a->api, b->api) && same_str(a->lib, b->lib) &&
	       same_str(a->site, b->site) && same_str(a->label, b->label) &&
	       a->has_size_min == b->has_size_min && a->has_size_max == b->has_size_max &&
	       a->size_min == b->size_min && a->size_max == b->size_max && a->phase == b->phase &&
	       a->phase_steps == b->phase_steps && a->pid == b->pid && a->once == b->once &&
	       a->max_bytes == b->max_bytes && a->release_at_end == b->release_at_end &&
	       a->until == b->until && a->window_ns == b->window_ns && same_str(a->text, b->text);
}

/* "fuzz:LINE:COL: ..." with LINE, COL >= 1. */
static bool well_formed_error(const char *err)
{
	int line, col, n = 0;

	return sscanf(err, "fuzz:%d:%d: %n", &line, &col, &n) == 2 && n && line >= 1 && col >= 1 &&
	       err[n];
}

static void check_round_trip(const struct rule *r)
{
	struct rules *again = NULL;
	char err[512];

	if (rules__new(&again))
		return;
	if (rules__parse(again, r->text, strlen(r->text), "fuzz", err, sizeof(err)) ||
	    again->n != 1 || !same_rule(r, &again->v[0])) {
		fprintf(stderr, "rule '%s' does not parse back to itself: %s\n", r->text, err);
		abort();
	}
	rules__free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The subject's names: the input's last line, so patterns meet hostile strings. */
	const uint8_t *nl = size ? memrchr(data, '\n', size) : NULL;
	char name[128] = "kv_cache_init", err[512];
	const char *syms[2], *mods[2] = {"libc10_cuda.so", "loop"};
	struct rule_subject sub = {.pid = 42,
				   .api = "cudaMalloc",
				   .size = 1 << 20,
				   .label = "weights",
				   .step = -1,
				   .syms = syms,
				   .mods = mods,
				   .nr_frames = 2};
	struct rules *rs = NULL;
	size_t i, k;
	int ret;

	if (nl && (size_t)(data + size - nl - 1) < sizeof(name)) {
		memcpy(name, nl + 1, data + size - nl - 1);
		name[data + size - nl - 1] = 0;
	}
	syms[0] = name;
	syms[1] = "main";
	if (rules__new(&rs))
		return 0;
	ret = rules__parse(rs, (const char *)data, size, "fuzz", err, sizeof(err));
	if (ret == -EINVAL && (rs->n || !well_formed_error(err))) {
		fprintf(stderr, "rejected input: %zu rules added, error '%s'\n", rs->n, err);
		abort();
	}
	if (!ret) {
		for (i = 0; i < rs->n; i++) {
			check_round_trip(&rs->v[i]);
			if (!rs->v[i].source || strncmp(rs->v[i].source, "fuzz:", 5))
				abort();
		}
		if (rules__add_builtins(rs))
			abort();
		for (k = 0; k < 4; k++) {
			sub.step = (int64_t)k * 3 - 1;
			sub.size = (uint64_t)1 << (k * 8);
			sub.label = k & 1 ? name : "weights";
			(void)rules__match(rs, RULE_PERSISTENT, &sub);
			(void)rules__match(rs, RULE_IGNORE, &sub);
			(void)rules__match(rs, RULE_DEFERRED, &sub);
		}
	}
	rules__free(rs);
	return 0;
}
