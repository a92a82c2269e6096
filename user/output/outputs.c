// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/analysis.h"
#include "output/graph.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "output/outputs.h"
#include "output/report.h"
#include "engine/series.h"
#include "engine/tracker.h"

enum out_kind { OUT_FOLDED, OUT_PERFETTO, OUT_SVG, NR_OUT };

struct outputs {
	const char *path[NR_OUT];
	struct outfile *f[NR_OUT];
	struct series *se; /* only for the pictures over time */
};

void outputs__free(struct outputs *out)
{
	int i;

	if (!out)
		return;
	/* not written: what open made stays, as a truncated file always did */
	for (i = 0; i < NR_OUT; i++)
		outfile__commit(out->f[i]);
	series__free(out->se);
	free(out);
}

int outputs__open(const struct output_opts *o, struct outputs **out)
{
	struct outputs *os;
	int i, err = 0;

	*out = NULL;
	if (!o->folded_path && !o->perfetto_path && !o->svg_path)
		return 0;
	os = calloc(1, sizeof(*os));
	if (!os)
		return -ENOMEM;
	os->path[OUT_FOLDED] = o->folded_path;
	os->path[OUT_PERFETTO] = o->perfetto_path;
	os->path[OUT_SVG] = o->svg_path;
	for (i = 0; i < NR_OUT; i++) {
		if (!os->path[i])
			continue;
		err = outfile__open(os->path[i], OUTFILE_TRUNCATE, &os->f[i]);
		if (err) {
			pr_err("cannot write %s: %s\n", os->path[i], strerror(-err));
			goto fail;
		}
	}
	if ((o->perfetto_path || o->svg_path) && (err = series__new(&os->se)))
		goto fail;
	*out = os;
	return 0;
fail:
	outputs__free(os);
	return err;
}

int outputs__attach(struct outputs *out, struct tracker *t)
{
	if (out && out->se)
		tracker__on_pending_done(t, series__pending_done, out->se);
	return 0;
}

int outputs__on_record(struct outputs *out, const struct tracker *t, const struct gl_hdr *h)
{
	if (!out || !out->se)
		return 0;
	return series__on_record(out->se, t, h->ts_ns);
}

int outputs__write(struct outputs *out, struct report *r, uint64_t end_ns)
{
	int i, err = 0, e;

	if (!out)
		return 0;
	if (out->se && (err = series__finish(out->se, r->t, end_ns))) {
		pr_err("out of memory for the pictures\n");
		return err;
	}
	/* one file failing is no reason to lose the others */
	for (i = 0; i < NR_OUT; i++) {
		FILE *f;
		int c;

		if (!out->f[i])
			continue;
		f = outfile__stream(out->f[i]);
		switch (i) {
		case OUT_FOLDED:
			e = graph__folded(f, r->t, r->sym);
			break;
		case OUT_PERFETTO:
			e = perfetto__write(f, r, out->se, end_ns);
			break;
		default:
			e = svg__write(f, r, out->se, end_ns);
			break;
		}
		/* the data must reach the disk, not only the buffer */
		c = outfile__commit(out->f[i]);
		if (c && !e)
			e = c;
		out->f[i] = NULL;
		if (e) {
			pr_err("writing %s: %s\n", out->path[i], strerror(-e));
			err = err ? err : e;
		}
	}
	return err;
}
