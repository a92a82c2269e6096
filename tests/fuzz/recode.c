// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * recode IN OUT [BLOCK_BYTES]: copy a capture through the reader and the writer, with
 * uncompressed (stored) blocks of at most BLOCK_BYTES encoded records. Makes fuzz seeds
 * whose payloads the fuzzer mutates directly, instead of through zlib.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture/capture.h"
#include "probe/proc_maps.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

static int on_record(void *ctx, const struct gl_hdr *h)
{
	return capture__write_record(ctx, h);
}

static int on_maps(void *ctx, uint32_t pid, const struct capture_map *v, size_t n)
{
	struct pmap_ent *e = calloc(n ? n : 1, sizeof(*e));
	struct proc_maps m = {.pid = pid, .v = e, .n = n};
	size_t i;
	int err;

	if (!e)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		e[i] = (struct pmap_ent){.start = v[i].start,
					 .end = v[i].end,
					 .pgoff = v[i].pgoff,
					 .dev = v[i].dev,
					 .ino = v[i].ino,
					 .exec = true,
					 .deleted = v[i].deleted,
					 .path = (char *)v[i].path};
	err = capture__add_maps(ctx, &m, NULL);
	free(e);
	return err;
}

static int on_symbol(void *ctx, uint32_t pid, uint64_t addr, const struct sym_info *si)
{
	return capture__add_symbol(ctx, pid, addr, si);
}

/* Through a stack table: capture__add_stack writes a stack as the symbolizer keeps it. */
static struct stacks *stacks;

static int on_stack(void *ctx, const struct capture_stack *cs)
{
	int err = stacks__add(stacks, cs->pid, cs->id, cs->caller, cs->frames, cs->nr, cs->flags,
			      cs->nofp_from);

	return err ? err
		   : capture__add_stack(ctx, stacks__get(stacks, cs->pid, cs->id, cs->caller));
}

static int on_process(void *ctx, const struct capture_proc *p)
{
	return capture__add_process(ctx, p);
}

static int on_trigger(void *ctx, const struct capture_trigger *t)
{
	return capture__add_trigger(ctx, t);
}

int main(int argc, char **argv)
{
	struct capture_visitor v = {.record = on_record,
				    .maps = on_maps,
				    .symbol = on_symbol,
				    .stack = on_stack,
				    .process = on_process,
				    .trigger = on_trigger};
	struct capture_opts o = {.force = true, .store = true};
	struct capture_reader *r = NULL;
	struct capture *c = NULL;
	int err;

	if (argc < 3) {
		fprintf(stderr, "usage: recode IN OUT [BLOCK_BYTES]\n");
		return 2;
	}
	o.block_bytes = argc > 3 ? strtoul(argv[3], NULL, 0) : 0;
	err = stacks__new(&stacks);
	if (!err)
		err = capture_reader__open(argv[1], 0, &r);
	if (!err)
		err = capture__create(argv[2], &o, &c, NULL, 0);
	if (!err)
		err = capture_reader__read(r, &v, c);
	if (!err && !capture_reader__truncated(r, NULL))
		err = capture__finish(c);
	else if (!err)
		err = capture__flush(c);
	if (err)
		fprintf(stderr, "recode: %s\n", r ? capture_reader__error(r) : strerror(-err));
	capture__free(c);
	capture_reader__free(r);
	stacks__free(stacks);
	return err ? 1 : 0;
}
