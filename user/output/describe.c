// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include "engine/timeline.h"
#include "engine/verdict.h"
#include "lib/units.h"
#include "output/describe.h"
#include "output/report_sink.h"
#include "symbols/symbolizer.h"

const char *describe__site(const struct report *r, const struct site *s)
{
	/* A call from Python: the frame of the program's own code, not libffi's call site. */
	if (s->frame)
		return symbolizer__name(r->sym, s->pid, s->frame);
	return s->caller ? symbolizer__name(r->sym, s->pid, s->caller) : "?";
}

enum cat_mem describe__mem(const struct site *s)
{
	return (enum cat_mem)s->mem;
}

void describe__device(const struct tracker *t, const struct site *s, char *buf, size_t len)
{
	const struct tobj *o = query__owner(t, s);

	if (s->owner_kind == OWNER_DEVICE)
		snprintf(buf, len, "wgpu#%u", o ? o->ordinal : 0);
	else if (s->device < 0)
		snprintf(buf, len, "host");
	else
		snprintf(buf, len, "%d", s->device);
}

const char *describe__owner_kind(uint8_t kind)
{
	switch (kind) {
	case OWNER_CTX:
		return "context";
	case OWNER_COMM:
		return "communicator";
	case OWNER_DEVICE:
		return "device";
	case OWNER_LAYER:
		return "layer";
	default:
		return NULL;
	}
}

const char *describe__live_kind(const struct site *s)
{
	if (s->owner_kind == OWNER_GRAPH)
		return "held_by_graph";
	switch (s->api) {
	case GL_API_CU_MEM_CREATE:
		return "handle_not_released";
	case GL_API_CUDA_IPC_OPEN_MEM_HANDLE:
	case GL_API_CU_IPC_OPEN_MEM_HANDLE:
		return "mapping_not_closed";
	case GL_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE:
		return "import_not_released";
	case GL_API_CU_MULTICAST_CREATE:
		return "multicast_not_released";
	default:
		return "live";
	}
}

const char *describe__pool_kind(uint8_t kind)
{
	switch (kind) {
	case POOL_CREATED:
		return "created";
	case POOL_GRAPH:
		return "graph";
	default:
		return "default";
	}
}

const char *describe__proc_state(const struct tproc *p)
{
	return p->execed     ? "exec"
	       : p->exited   ? "exited"
	       : p->ended    ? "ended"
	       : p->detached ? "detached"
			     : "running";
}

const char *describe__violation(uint8_t kind)
{
	switch (kind) {
	case VIOL_ONCE:
		return "once";
	case VIOL_MAX:
		return "max";
	case VIOL_NOT_RELEASED:
		return "not_released_at_session_end";
	case VIOL_FREE_NEVER_COMPLETED:
		return "free_never_completed";
	}
	return "?";
}

const char *describe__violation_site(const struct report *r, const struct violation *v)
{
	return v->site < r->t->nr_sites ? describe__site(r, &r->t->sites[v->site]) : "?";
}

const char *describe__step_source(const struct timeline *tl)
{
	switch (timeline__opts(tl)->source) {
	case STEP_SYNC:
		return "sync";
	case STEP_MARKER:
		return "sym";
	case STEP_NVTX:
		return "nvtx";
	default:
		return "interval";
	}
}

const char *describe__site_class(const struct site *s)
{
	switch (s->cls) {
	case CLS_PERSISTENT:
		return "persistent";
	case CLS_IGNORED:
		return "ignored";
	case CLS_INIT:
		return "init";
	default:
		return "none";
	}
}

const char *describe__loss(int stat)
{
	static const char *const names[GL_STAT_MAX] = {
	    [GL_STAT_RB_FULL] = "ringbuf_full",
	    [GL_STAT_STASH_FAIL] = "stash_fail",
	    [GL_STAT_DEPTH_OVERFLOW] = "depth_overflow",
	    [GL_STAT_READ_FAIL] = "read_fail",
	    [GL_STAT_RET_NO_ENTRY] = "return_without_entry",
	    [GL_STAT_STALE_FRAMES] = "stale_frames",
	    [GL_STAT_STACK_FAIL] = "stack_fail",
	    [GL_STAT_STACK_COLLISION] = "stack_collision",
	    [GL_STAT_MAP_FULL] = "map_full",
	    [GL_STAT_LOST_ALLOCS] = "lost_allocs",
	    [GL_STAT_LOST_ALLOC_BYTES] = "lost_alloc_bytes",
	    [GL_STAT_LOST_ALLOCS_UNSIZED] = "lost_allocs_unsized",
	    [GL_STAT_LOST_FREES] = "lost_frees",
	    [GL_STAT_LOST_TASKS] = "lost_process_events",
	    [GL_STAT_PY_LOST] = "python_lost",
	    [GL_STAT_PY_WALK_FAIL] = "python_walk_failed",
	};

	return stat >= 0 && stat < GL_STAT_MAX ? names[stat] : NULL;
}

const char *describe__release_how(uint8_t how)
{
	return how == RELEASE_OWNER ? "owner" : "freed";
}

void describe__release(const struct site *s, const struct shutdown_release *by, char *buf,
		       size_t len)
{
	const struct cat_api *api = cat_by_api(by->api);
	const char *name = cat_api_name(by->api);

	if (by->how == RELEASE_FREED)
		snprintf(buf, len, "freed at shutdown (%s)", name);
	else if (s->owner_kind == OWNER_DEVICE && api && api->op == OP_OWNER_RELEASE)
		snprintf(buf, len, "released when its device was released (%s)", name);
	else if (s->owner_kind == OWNER_DEVICE)
		snprintf(buf, len, "released when its device was destroyed (%s)", name);
	else
		snprintf(buf, len, "released at shutdown by %s", name);
}

const char *describe__growth_end(const struct report *r, const struct proc_verdict *pv, size_t i,
				 char *buf, size_t len)
{
	const struct growth_end *ge = &pv->growth_end[i];
	const struct site *s = &r->t->sites[pv->growth[i].site];
	bool one = ge->nr_by == 1 && !ge->live_count;
	size_t o = 0, k;
	char b[32], w[160];

	if (!pv->shutdown.on)
		return NULL;
	buf[0] = 0;
	/* One way, nothing left: the words alone; else each part with its bytes. */
	for (k = 0; k < ge->nr_by && o < len; k++) {
		describe__release(s, &ge->by[k], w, sizeof(w));
		if (one)
			o += (size_t)snprintf(buf + o, len - o, "%s", w);
		else
			o += (size_t)snprintf(buf + o, len - o, "%s%s %s", k ? ", " : "",
					      fmt_bytes(ge->by[k].bytes, b, sizeof(b)), w);
	}
	if (ge->live_count && o < len) {
		if (ge->nr_by)
			snprintf(buf + o, len - o, ", %s still live at exit",
				 fmt_bytes(ge->live_bytes, b, sizeof(b)));
		else
			snprintf(buf + o, len - o, "still live at exit");
	}
	return buf;
}
