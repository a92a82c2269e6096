// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "lib/log.h"
#include "lib/vec.h"
#include "live/attach.h"
#include "live/callbacks.h"
#include "live/targets.h"
#include "probe/catalog.h"

/* A callback the target passed that still needs its probe. */
struct code_req {
	pid_t pid;
	uint64_t addr;
	unsigned int api; /* the probe's API: the catalog's code_api of the passing call */
	bool held;	  /* the target is stopped until this is done */
};

struct callbacks {
	struct code_req *v;
	size_t n, cap;
};

int callbacks__new(struct callbacks **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void callbacks__free(struct callbacks *cb)
{
	if (!cb)
		return;
	free(cb->v);
	free(cb);
}

void callbacks__request(struct callbacks *cb, const struct gl_call_rec *r)
{
	const struct cat_api *a = cat_by_api(r->hdr.api);

	if (!a || !a->code_api)
		return;
	if (vec_grow((void **)&cb->v, &cb->cap, cb->n, sizeof(*cb->v))) {
		/* Never leave a target stopped because we ran out of memory. */
		if (r->hdr.flags & GL_HF_HELD)
			kill(r->hdr.pid, SIGCONT);
		return;
	}
	cb->v[cb->n++] =
	    (struct code_req){r->hdr.pid, r->addr, a->code_api, r->hdr.flags & GL_HF_HELD};
}

void callbacks__attach(struct callbacks *cb, struct attach *att, struct targets *ts)
{
	size_t i;

	for (i = 0; i < cb->n; i++) {
		struct code_req *c = &cb->v[i];
		struct target *t = targets__find(ts, c->pid);
		char why[160];

		if (attach__code(att, c->pid, c->addr, c->api, why, sizeof(why)))
			pr_warn("pid %d: cannot probe %s: %s; its completions go unseen\n", c->pid,
				cat_api_name(c->api), why);
		if (c->held && t)
			t->code_wait = true;
		else if (c->held)
			kill(c->pid, SIGCONT);
	}
	cb->n = 0;
}

void callbacks__clear(struct callbacks *cb)
{
	cb->n = 0;
}
