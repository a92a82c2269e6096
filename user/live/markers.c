// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/analysis.h"
#include "gpuleak.h"
#include "lib/log.h"
#include "live/attach.h"
#include "live/markers.h"
#include "live/process.h"
#include "live/targets.h"

struct markers {
	struct marker {
		const char *file, *sym;
		unsigned int api;
	} v[4];
	int n;
	unsigned int said; /* bit i: "marker on ..." printed */
};

int markers__new(const struct analysis_opts *a, struct markers **out)
{
	struct markers *mk = calloc(1, sizeof(*mk));

	*out = mk;
	if (!mk)
		return -ENOMEM;
	if (a->step_file)
		mk->v[mk->n++] = (struct marker){a->step_file, a->step_sym, GL_API_MARKER_STEP};
	if (a->req_file) {
		mk->v[mk->n++] =
		    (struct marker){a->req_file, a->req_begin, GL_API_MARKER_REQ_BEGIN};
		mk->v[mk->n++] = (struct marker){a->req_file, a->req_end, GL_API_MARKER_REQ_END};
	}
	if (a->end_file)
		mk->v[mk->n++] = (struct marker){a->end_file, a->end_sym, GL_API_MARKER_END};
	return 0;
}

void markers__free(struct markers *mk)
{
	free(mk);
}

static const char *marker_kind(unsigned int api)
{
	return api == GL_API_MARKER_STEP	? "step"
	       : api == GL_API_MARKER_REQ_BEGIN ? "request-begin"
	       : api == GL_API_MARKER_REQ_END	? "request-end"
						: "session-end";
}

int markers__attach(struct markers *mk, struct attach *att, struct target *t,
		    const struct proc_maps *m)
{
	int i, left = 0;

	for (i = 0; i < mk->n; i++) {
		struct marker *k = &mk->v[i];
		char rooted[4200];
		const char *file = k->file;
		int err;

		if (t->markers_done & (1U << i))
			continue;
		if (file[0] == '/' && m && process__in_other_root(t->pid)) {
			snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", t->pid, file);
			file = rooted;
		}
		err = attach__marker(att, t->pid, m, file, k->sym, k->api);
		if (!err) {
			t->markers_done |= 1U << i;
			/* Once, not once per process: a server's ranks all get it. */
			if (mk->said & (1U << i))
				continue;
			mk->said |= 1U << i;
			pr_note("%s marker on %s in %s\n", marker_kind(k->api), k->sym, k->file);
		} else if (err != -ENOENT) {
			pr_err("cannot put a marker on %s in %s: %s\n", k->sym, k->file,
			       strerror(-err));
			t->markers_done |= 1U << i; /* said once; do not retry */
		} else {
			left++;
		}
	}
	return left;
}
