// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/analysis.h"
#include "engine/series.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "output/graph.h"
#include "output/memviz.h"
#include "output/perfetto.h"
#include "output/pictures.h"
#include "output/report_sink.h"
#include "output/svg.h"

enum picture {
	PIC_FOLDED,
	PIC_FOLDED_GROWTH,
	PIC_FOLDED_PEAK,
	PIC_PERFETTO,
	PIC_SVG,
	PIC_MEMVIZ,
	NR_PIC
};

struct pictures {
	const char *path[NR_PIC];
	struct outfile *f[NR_PIC];
};

void pictures__free(struct pictures *pics)
{
	int i;

	if (!pics)
		return;
	/* not written (a failed start): what open made goes, the paths keep what they had */
	for (i = 0; i < NR_PIC; i++)
		outfile__abort(pics->f[i]);
	free(pics);
}

int pictures__open(const struct output_opts *o, struct pictures **out)
{
	struct pictures *pics;
	char why[256];
	int i, err;

	*out = NULL;
	if (!o->folded_path && !o->folded_growth_path && !o->folded_peak_path &&
	    !o->perfetto_path && !o->svg_path && !o->memviz_path)
		return 0;
	pics = calloc(1, sizeof(*pics));
	if (!pics)
		return -ENOMEM;
	pics->path[PIC_FOLDED] = o->folded_path;
	pics->path[PIC_FOLDED_GROWTH] = o->folded_growth_path;
	pics->path[PIC_FOLDED_PEAK] = o->folded_peak_path;
	pics->path[PIC_PERFETTO] = o->perfetto_path;
	pics->path[PIC_SVG] = o->svg_path;
	pics->path[PIC_MEMVIZ] = o->memviz_path;
	for (i = 0; i < NR_PIC; i++) {
		if (!pics->path[i])
			continue;
		/* Written in one go at the end: a reader sees the old picture or the new one. */
		err = outfile__open(pics->path[i], OUTFILE_ATOMIC, &pics->f[i], why, sizeof(why));
		if (err) {
			pr_err("cannot write %s: %s\n", pics->path[i], why);
			pictures__free(pics);
			return err;
		}
	}
	*out = pics;
	return 0;
}

int pictures__write(struct pictures *pics, struct report *r, const struct verdict *v,
		    const struct analysis *an, uint64_t end_ns)
{
	struct series *se = an->se;
	int i, err = 0, e;

	if (!pics)
		return 0;
	if (se && (err = series__finish(se, r->t, end_ns))) {
		pr_err("out of memory for the pictures\n");
		return err;
	}
	/* one file failing is no reason to lose the others */
	for (i = 0; i < NR_PIC; i++) {
		FILE *f;
		int c;

		if (!pics->f[i])
			continue;
		f = outfile__stream(pics->f[i]);
		switch (i) {
		case PIC_FOLDED:
			e = graph__folded(f, r->t, r->sym);
			break;
		case PIC_FOLDED_GROWTH:
			e = graph__folded_growth(f, r->t, r->sym, v);
			break;
		case PIC_FOLDED_PEAK:
			e = graph__folded_peak(f, r->t, r->sym, v);
			break;
		case PIC_PERFETTO:
			e = perfetto__write(f, r, v, se, end_ns);
			break;
		case PIC_MEMVIZ:
			e = memviz__write(f, r, an->mt);
			break;
		default:
			e = svg__write(f, r, v, se, end_ns);
			break;
		}
		/* the data must reach the disk, not only the buffer; a writer's -EIO is its
		 * stream failing, whose cause (a full disk) the file knows */
		c = outfile__commit(pics->f[i]);
		if (c && (!e || e == -EIO))
			e = c;
		pics->f[i] = NULL;
		if (e) {
			pr_err("writing %s: %s\n", pics->path[i], strerror(-e));
			err = err ? err : e;
		}
	}
	return err;
}

FILE *pictures__text_stream(const char *json_path, const struct output_opts *o)
{
	if (outfile__is_stdout(json_path) || outfile__is_stdout(o->folded_path) ||
	    outfile__is_stdout(o->perfetto_path) || outfile__is_stdout(o->svg_path) ||
	    outfile__is_stdout(o->memviz_path))
		return stderr;
	return stdout;
}
