// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/analysis.h"
#include "engine/series.h"
#include "lib/log.h"
#include "output/graph.h"
#include "output/perfetto.h"
#include "output/pictures.h"
#include "output/report_sink.h"
#include "output/svg.h"

enum picture { PIC_FOLDED, PIC_PERFETTO, PIC_SVG, NR_PIC };

struct pictures {
	const char *path[NR_PIC];
	FILE *f[NR_PIC];
};

void pictures__free(struct pictures *pics)
{
	int i;

	if (!pics)
		return;
	for (i = 0; i < NR_PIC; i++)
		if (pics->f[i])
			fclose(pics->f[i]);
	free(pics);
}

static FILE *create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f && fd >= 0)
		close(fd);
	return f;
}

int pictures__open(const struct output_opts *o, struct pictures **out)
{
	struct pictures *pics;
	int i, err;

	*out = NULL;
	if (!o->folded_path && !o->perfetto_path && !o->svg_path)
		return 0;
	pics = calloc(1, sizeof(*pics));
	if (!pics)
		return -ENOMEM;
	pics->path[PIC_FOLDED] = o->folded_path;
	pics->path[PIC_PERFETTO] = o->perfetto_path;
	pics->path[PIC_SVG] = o->svg_path;
	for (i = 0; i < NR_PIC; i++) {
		if (!pics->path[i])
			continue;
		pics->f[i] = create(pics->path[i]);
		if (!pics->f[i]) {
			err = -errno;
			pr_err("cannot write %s: %s\n", pics->path[i], strerror(errno));
			pictures__free(pics);
			return err;
		}
	}
	*out = pics;
	return 0;
}

int pictures__write(struct pictures *pics, struct report *r, const struct verdict *v,
		    struct series *se, uint64_t end_ns)
{
	int i, err = 0, e;

	if (!pics)
		return 0;
	if (se && (err = series__finish(se, r->t, end_ns))) {
		pr_err("out of memory for the pictures\n");
		return err;
	}
	/* one file failing is no reason to lose the others */
	for (i = 0; i < NR_PIC; i++) {
		if (!pics->f[i])
			continue;
		switch (i) {
		case PIC_FOLDED:
			e = graph__folded(pics->f[i], r->t, r->sym);
			break;
		case PIC_PERFETTO:
			e = perfetto__write(pics->f[i], r, v, se, end_ns);
			break;
		default:
			e = svg__write(pics->f[i], r, v, se, end_ns);
			break;
		}
		/* the data must reach the disk, not only the buffer */
		if (fclose(pics->f[i]) && !e)
			e = -errno;
		pics->f[i] = NULL;
		if (e) {
			pr_err("writing %s: %s\n", pics->path[i], strerror(-e));
			err = err ? err : e;
		}
	}
	return err;
}
