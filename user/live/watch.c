// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpuleak watch (watch.h): the triggers, seen in the records the live analysis takes and
 * between drains; the captures they write, named and bounded in their directory.
 * Calls: live/flight.c (the ring and the capture), the live analysis (read only), the
 * symbolizer (names in messages).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "live/flight.h"
#include "engine/analysis.h"
#include "engine/timeline.h"
#include "tracker/tracker.h"
#include "lib/json.h"
#include "lib/outfile.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/vec.h"
#include "live/bpf_setup.h"
#include "live/live.h"
#include "live/session_opts.h"
#include "live/recorder.h"
#include "live/targets.h"
#include "live/watch.h"
#include "output/memviz.h"
#include "output/report_sink.h"
#include "probe/catalog.h"
#include "symbols/symbolizer.h"

#define NR_CAUSES      8 /* enum capture_cause, 1.. */
#define SOON_EVERY_NS  1000000000ULL
#define CAPTURE_PREFIX "gpuleak-"
#define CAPTURE_SUFFIX ".glc"
#define MAX_NAME       128
#define MAX_INNER      64 /* threads with an out-of-memory call open under another */

/* A capture in the directory: ours from this run, or one a watch before us left. */
struct wfile {
	char name[MAX_NAME];
	uint64_t bytes;
};

/* What the triggers remember of a process. */
struct wproc {
	pid_t pid;
	uint32_t gen;	     /* the image (struct tproc's gen) the three below are about */
	bool live_fired;     /* --live-above fired, not re-armed (below again) yet */
	bool soon_fired;     /* --oom-within fired, not re-armed yet */
	uint64_t error_objs; /* WebGPU error objects seen */
	int fault_sig;	     /* its exit said this signal; its end record has not come yet */
};

/* An out-of-memory return under an open outer call, waiting for that call to return. */
struct inner {
	uint32_t pid, tid;
	struct gl_call_rec r;
};

struct watch {
	const struct watch_opts *o;
	struct flight *flight;
	char dir[4096];
	struct wfile *files; /* sorted oldest first (by name: the time comes first) */
	size_t nr_files, cap_files;
	uint64_t disk; /* their bytes */
	uid_t owner;   /* whose captures count (and go): gpuleak's, or the sudo user's */
	struct wproc *procs;
	size_t nr_procs, cap_procs;
	struct inner inner[MAX_INNER];
	size_t nr_inner;
	uint64_t last_ns[NR_CAUSES]; /* when each cause last wrote a capture */
	bool cooled[NR_CAUSES];	     /* a trigger within the cooldown was said */
	uint64_t suppressed[NR_CAUSES];
	uint64_t next_soon_ns;
	unsigned int written, failed, removed;
	bool oom_kill; /* the OOM killer's tracepoint is there */
	FILE *json;    /* --json: a record per capture, else NULL */
};

static const char *const cause_names[NR_CAUSES] = {
    [CAUSE_OOM] = "oom",
    [CAUSE_OOM_KILL] = "oom-kill",
    [CAUSE_LIVE] = "live-above",
    [CAUSE_OOM_SOON] = "oom-soon",
    [CAUSE_SIGNAL] = "signal",
    [CAUSE_FAULT] = "fault",
    [CAUSE_WGPU_ERROR] = "wgpu-error",
};

int watch__parse_on(const char *arg, unsigned int *on)
{
	static const struct {
		const char *name;
		unsigned int bits;
	} names[] = {{"oom", WATCH_ON_OOM},	{"oom-kill", WATCH_ON_OOM_KILL},
		     {"fault", WATCH_ON_FAULT}, {"signal", WATCH_ON_SIGNAL},
		     {"all", WATCH_ON_ALL},	{"none", 0}};
	const char *p = arg;

	*on = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n && !strncmp(names[i].name, p, n))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -EINVAL;
		*on |= names[i].bits;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

bool watch__wants_oom_kill(const struct watch_opts *o)
{
	return o->on & WATCH_ON_OOM_KILL;
}

/* ---- the directory ---- */

/* gpuleak-YYYYmmddTHHMMSS.mmmZ-PID-CAUSE.glc, as this file names them. */
static bool is_capture_name(const char *n)
{
	size_t len = strlen(n), i;

	if (len < strlen(CAPTURE_PREFIX) + 20 + strlen(CAPTURE_SUFFIX) || len >= MAX_NAME ||
	    strncmp(n, CAPTURE_PREFIX, strlen(CAPTURE_PREFIX)) ||
	    strcmp(n + len - strlen(CAPTURE_SUFFIX), CAPTURE_SUFFIX))
		return false;
	n += strlen(CAPTURE_PREFIX);
	for (i = 0; i < 8; i++)
		if (n[i] < '0' || n[i] > '9')
			return false;
	return n[8] == 'T' && n[15] == '.' && n[19] == 'Z' && n[20] == '-';
}

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct wfile *)a)->name, ((const struct wfile *)b)->name);
}

static int add_file(struct watch *w, const char *name, uint64_t bytes)
{
	if (vec_grow((void **)&w->files, &w->cap_files, w->nr_files, sizeof(*w->files)))
		return -ENOMEM;
	snprintf(w->files[w->nr_files].name, MAX_NAME, "%s", name);
	w->files[w->nr_files++].bytes = bytes;
	w->disk += bytes;
	return 0;
}

/*
 * The captures an earlier watch left in the directory count toward its bounds (and go first):
 * regular files named as this file names them, belonging to whom ours belong to.
 */
static int scan_dir(struct watch *w)
{
	DIR *d = opendir(w->dir);
	struct dirent *e;
	struct stat st;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (e = readdir(d))) {
		if (!is_capture_name(e->d_name) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != w->owner)
			continue;
		err = add_file(w, e->d_name, (uint64_t)st.st_size);
	}
	closedir(d);
	if (w->nr_files)
		qsort(w->files, w->nr_files, sizeof(*w->files), cmp_files);
	return err;
}

/* The --memory-viz snapshot beside capture path (NAME.glc): NAME.pickle. */
static void memviz_path(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	if (n > 4 && !strcmp(path + n - 4, ".glc"))
		n -= 4;
	snprintf(buf, len, "%.*s.pickle", (int)n, path);
}

/* The oldest capture goes, to keep within the bound named why. */
static void remove_oldest(struct watch *w, const char *why)
{
	char path[sizeof(w->dir) + MAX_NAME + 2], pk[sizeof(path) + 8];

	snprintf(path, sizeof(path), "%s/%s", w->dir, w->files[0].name);
	/* unlink removes the name itself: a link planted there since is not followed */
	if (unlink(path) && errno != ENOENT)
		pr_warn("cannot remove %s to keep %s: %s\n", path, why, strerror(errno));
	else
		fprintf(stderr, "gpuleak: removed %s (the oldest capture): %s\n", path, why);
	/* its --memory-viz snapshot, if it has one, goes with it */
	memviz_path(path, pk, sizeof(pk));
	unlink(pk);
	w->disk -= w->files[0].bytes;
	memmove(w->files, w->files + 1, (w->nr_files - 1) * sizeof(*w->files));
	w->nr_files--;
	w->removed++;
}

/* Room for one more capture of about `need` bytes: the oldest go. */
static void make_room(struct watch *w, uint64_t need)
{
	while (w->nr_files && w->nr_files >= w->o->max_captures)
		remove_oldest(w, "--max-captures");
	while (w->nr_files && w->disk + need > w->o->max_disk)
		remove_oldest(w, "--max-disk");
}

static uid_t owner_uid(void)
{
	const char *s = getenv("SUDO_UID");
	char *end;
	unsigned long v;

	/* lib/outfile gives what root writes for a sudo user to that user */
	if (geteuid() == 0 && s && *s) {
		v = strtoul(s, &end, 10);
		if (!*end && v > 0)
			return (uid_t)v;
	}
	return geteuid();
}

static int open_dir(struct watch *w)
{
	struct stat st;

	if (snprintf(w->dir, sizeof(w->dir), "%s", w->o->dir) >= (int)sizeof(w->dir))
		return -ENAMETOOLONG;
	if (lstat(w->dir, &st) && errno == ENOENT) {
		if (mkdir(w->dir, 0755) && errno != EEXIST) {
			pr_err("cannot make %s: %s\n", w->dir, strerror(errno));
			return -errno;
		}
		pr_info("made %s\n", w->dir);
	}
	if (lstat(w->dir, &st)) {
		pr_err("-o %s: %s\n", w->dir, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode)) {
		pr_err("-o %s: a symbolic link; name the directory itself\n", w->dir);
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		pr_err("-o %s: not a directory (captures are written into one)\n", w->dir);
		return -ENOTDIR;
	}
	if (access(w->dir, W_OK | X_OK)) {
		pr_err("-o %s: cannot write there: %s\n", w->dir, strerror(errno));
		return -errno;
	}
	w->owner = owner_uid();
	return scan_dir(w);
}

int watch__new(const struct watch_opts *o, struct live *l, FILE *json, struct watch **out,
	       struct recorder **rec)
{
	struct watch *w = calloc(1, sizeof(*w));
	struct flight_opts fo = {.ring_bytes = o->ring_bytes,
				 .ring_ns = o->ring_ns,
				 .a = &l->o->a,
				 .frames = symbolizer__site_frames,
				 .frames_ctx = l->sym,
				 .verify = !o->no_verify};
	int err;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->o = o;
	w->json = json;
	err = open_dir(w);
	if (!err)
		err = recorder__new_flight(&fo, rec);
	if (err) {
		if (err == -ENOMEM)
			pr_err("out of memory for the flight recorder\n");
		free(w->files);
		free(w);
		return err;
	}
	w->flight = recorder__flight(*rec);
	*out = w;
	return 0;
}

void watch__free(struct watch *w)
{
	if (!w)
		return;
	free(w->files);
	free(w->procs);
	free(w);
}

void watch__started(struct watch *w, struct live *l)
{
	static const char *const on_names[] = {"oom", "oom-kill", "fault", "signal"};
	char ring[32], disk[32], on[128] = "", *p = on;
	unsigned int i;

	w->oom_kill = bpf_setup__oom_kill(l->bpf);
	for (i = 0; i < 4; i++) {
		if (!(w->o->on & (1u << i)) || (1u << i == WATCH_ON_OOM_KILL && !w->oom_kill))
			continue;
		p += snprintf(p, on + sizeof(on) - p, "%s%s", p == on ? "" : ",", on_names[i]);
	}
	if (w->o->live_above)
		p += snprintf(p, on + sizeof(on) - p, "%slive-above", p == on ? "" : ",");
	if (w->o->oom_within_ns)
		p += snprintf(p, on + sizeof(on) - p, "%soom-soon", p == on ? "" : ",");
	fprintf(stderr,
		"gpuleak: watching: ring %s, captures into %s on %s (cooldown %.0f s, at most %u "
		"captures and %s; %zu there now)\n",
		fmt_bytes(w->o->ring_bytes, ring, sizeof(ring)), w->dir, on[0] ? on : "nothing",
		w->o->cooldown_ns / 1e9, w->o->max_captures,
		fmt_bytes(w->o->max_disk, disk, sizeof(disk)), w->nr_files);
}

/* ---- writing ---- */

static struct wproc *wproc_get(struct watch *w, const struct tproc *p)
{
	struct wproc *wp = NULL;
	size_t i;

	for (i = 0; i < w->nr_procs && !wp; i++)
		if (w->procs[i].pid == p->pid)
			wp = &w->procs[i];
	if (!wp) {
		if (vec_grow((void **)&w->procs, &w->cap_procs, w->nr_procs, sizeof(*w->procs)))
			return NULL;
		wp = &w->procs[w->nr_procs++];
		memset(wp, 0, sizeof(*wp));
		wp->pid = p->pid;
		wp->gen = p->gen;
	}
	/* An exec'd program's triggers are armed anew, its counts its own (a fault is the
	 * process's, whichever program it runs). */
	if (wp->gen != p->gen) {
		wp->gen = p->gen;
		wp->live_fired = wp->soon_fired = false;
		wp->error_objs = 0;
	}
	return wp;
}

static bool enabled(const struct watch *w, enum capture_cause c)
{
	switch (c) {
	case CAUSE_OOM:
	case CAUSE_WGPU_ERROR:
		return w->o->on & WATCH_ON_OOM;
	case CAUSE_OOM_KILL:
		return w->o->on & WATCH_ON_OOM_KILL;
	case CAUSE_FAULT:
		return w->o->on & WATCH_ON_FAULT;
	case CAUSE_SIGNAL:
		return w->o->on & WATCH_ON_SIGNAL;
	case CAUSE_LIVE:
		return w->o->live_above;
	case CAUSE_OOM_SOON:
		return w->o->oom_within_ns;
	default:
		return false;
	}
}

/*
 * The name a capture of this trigger gets: its time (UTC), pid and cause; -2, -3, ... after
 * the cause when one of that name is there already (two in one millisecond): a capture never
 * replaces another.
 */
static void capture_name(const struct watch *w, char *buf, size_t len,
			 const struct capture_trigger *tr)
{
	char when[32], path[sizeof(w->dir) + MAX_NAME + 2], n[16] = "";
	struct timespec now;
	struct stat st;
	struct tm tm;
	int i;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%S", &tm);
	for (i = 1; i < 1000; i++) {
		if (i > 1)
			snprintf(n, sizeof(n), "-%d", i);
		snprintf(buf, len, CAPTURE_PREFIX "%s.%03ldZ-%u-%s%s" CAPTURE_SUFFIX, when,
			 now.tv_nsec / 1000000, tr->pid, tr->name, n);
		snprintf(path, sizeof(path), "%s/%s", w->dir, buf);
		if (lstat(path, &st) && errno == ENOENT)
			return;
	}
}

/* --json: the capture as an NDJSON record (docs/gpuleak.schema.json, "capture"). */
static void capture_json(struct watch *w, const struct capture_trigger *tr, const char *path,
			 const struct capture_stats *st, const struct flight_stats *fs,
			 const char *error)
{
	if (!w->json)
		return;
	fputs("{\"type\":\"capture\",\"cause\":", w->json);
	json_str(w->json, tr->name);
	fprintf(w->json, ",\"pid\":%u,\"detail\":", tr->pid);
	json_str(w->json, tr->detail);
	fputs(",\"path\":", w->json);
	json_str(w->json, path);
	if (error) {
		fputs(",\"written\":false,\"error\":", w->json);
		json_str(w->json, error);
	} else {
		fprintf(w->json,
			",\"written\":true,\"bytes\":%" PRIu64 ",\"records\":%" PRIu64
			",\"window_s\":%.3f",
			st->bytes, st->records,
			fs->last_ts_ns > fs->first_ts_ns ? (fs->last_ts_ns - fs->first_ts_ns) / 1e9
							 : 0.0);
	}
	fputs("}\n", w->json);
	fflush(w->json);
}

/* A trigger fired: one capture, unless one of its cause was written within the cooldown. */
/*
 * --memory-viz: PyTorch's snapshot of the live analysis at the trigger (the live set the
 * capture holds, and the trace so far) beside the capture. A failure is said, not fatal.
 */
static void write_memviz(struct live *l, const char *capture)
{
	struct report r = {.t = l->an->t, .sym = l->sym};
	char path[PATH_MAX], why[256];
	struct outfile *of;
	int err;

	memviz_path(capture, path, sizeof(path));
	err = outfile__open(path, OUTFILE_ATOMIC, &of, why, sizeof(why));
	if (err) {
		pr_err("cannot write %s: %s\n", path, why);
		return;
	}
	err = memviz__write(outfile__stream(of), &r, l->an->mt);
	if (err) {
		outfile__abort(of);
		pr_err("writing %s: %s\n", path, strerror(-err));
		return;
	}
	err = outfile__commit(of);
	if (err)
		pr_err("writing %s: %s\n", path, strerror(-err));
	else
		fprintf(stderr, "gpuleak: wrote %s (PyTorch's memory snapshot)\n", path);
}

static void fire(struct watch *w, struct live *l, struct capture_trigger *tr)
{
	struct flight_write fw = {.tr = tr, .live = l->an->t, .sym = l->sym};
	char name[MAX_NAME], path[sizeof(w->dir) + MAX_NAME + 2], why[256], b[32];
	uint64_t now = live_now_ns();
	struct flight_stats fs;
	struct capture_stats st;
	int err;

	if (!enabled(w, tr->cause) || tr->cause >= NR_CAUSES)
		return;
	tr->name = cause_names[tr->cause];
	if (w->last_ns[tr->cause] && now - w->last_ns[tr->cause] < w->o->cooldown_ns) {
		w->suppressed[tr->cause]++;
		if (!w->cooled[tr->cause])
			fprintf(stderr,
				"gpuleak: %s again (%s): within --cooldown of the last %s capture, "
				"not written (said once per cooldown)\n",
				tr->name, tr->detail, tr->name);
		w->cooled[tr->cause] = true;
		return;
	}
	w->last_ns[tr->cause] = now;
	w->cooled[tr->cause] = false;
	capture_name(w, name, sizeof(name), tr);
	snprintf(path, sizeof(path), "%s/%s", w->dir, name);
	flight__stats(w->flight, &fs);
	make_room(w, fs.ring_bytes);
	err = flight__write(w->flight, path, &fw, &st, why, sizeof(why));
	if (err) {
		w->failed++;
		pr_err("%s (%s): capture not written: %s: %s; watching goes on\n", tr->name,
		       tr->detail, path, why);
		capture_json(w, tr, path, &st, &fs, why);
		return;
	}
	/* A capture larger than the bound alone cannot be kept within it. */
	if (st.bytes > w->o->max_disk) {
		w->failed++;
		unlink(path);
		pr_err("%s: %s is %s, more than --max-disk alone: removed\n", tr->name, path,
		       fmt_bytes(st.bytes, b, sizeof(b)));
		capture_json(w, tr, path, &st, &fs, "larger than --max-disk");
		return;
	}
	if (add_file(w, name, st.bytes)) {
		pr_err("out of memory for the list of captures\n");
		return;
	}
	while (w->nr_files > 1 && w->disk > w->o->max_disk)
		remove_oldest(w, "--max-disk");
	w->written++;
	capture_json(w, tr, path, &st, &fs, NULL);
	fprintf(stderr,
		"gpuleak: %s: %s: wrote %s (%.2f s window, %" PRIu64 " records, %" PRIu64
		" bytes)\n",
		tr->name, tr->detail, path,
		fs.last_ts_ns > fs.first_ts_ns ? (fs.last_ts_ns - fs.first_ts_ns) / 1e9 : 0.0,
		st.records, st.bytes);
	if (l->o->a.out.memviz_path)
		write_memviz(l, path);
}

/* ---- what a trigger says ---- */

static const char *comm_of(struct live *l, pid_t pid)
{
	const struct tproc *p = tracker__proc(l->an->t, pid);

	return p && p->comm[0] ? p->comm : "?";
}

static void put_call(struct capture_call *k, const struct gl_call_rec *r)
{
	*k = (struct capture_call){.kind = r->hdr.kind,
				   .depth = r->hdr.depth,
				   .api = r->hdr.api,
				   .tid = r->hdr.tid,
				   .ret = r->ret,
				   .stack_id = r->stack_id,
				   .addr = r->addr,
				   .size = r->size,
				   .caller = r->caller,
				   .ts_ns = r->hdr.ts_ns};
}

/* A call's site as the verdict names it (a Python stack's: its Python frame). */
static const char *call_site(struct live *l, const struct gl_call_rec *r)
{
	return symbolizer__site_name(l->sym, (pid_t)r->hdr.pid, r->stack_id, r->caller);
}

/* ", step N" when the process is past its first step. */
static void step_words(struct live *l, pid_t pid, char *buf, size_t len)
{
	int64_t step;
	uint64_t ts;

	buf[0] = 0;
	if (timeline__step_now(l->an->tl, tracker__proc(l->an->t, pid), &step, &ts) && step >= 0)
		snprintf(buf, len, ", step %lld", (long long)step);
}

/* What the failing call was: "cudaMalloc of 1.00 MiB returned cudaErrorMemoryAllocation (2)
 * at leaky_sampler+0x14 (loop)". */
static int call_words(struct live *l, const struct gl_call_rec *r, char *buf, size_t len)
{
	const char *err = cat_error_name(r->hdr.api, r->ret);
	char sz[32];

	fmt_bytes(r->size, sz, sizeof(sz));
	return snprintf(buf, len, "%s%s%s returned %s%s%d%s at %s", cat_api_name(r->hdr.api),
			r->size ? " of " : "", r->size ? sz : "", err ? err : "", err ? " (" : "",
			r->ret, err ? ")" : "", call_site(l, r));
}

static void fire_call(struct watch *w, struct live *l, enum capture_cause cause,
		      const struct gl_call_rec *r, const struct gl_call_rec *inner)
{
	struct capture_trigger tr = {.cause = cause,
				     .pid = r->hdr.pid,
				     .tid = r->hdr.tid,
				     .ts_ns = r->hdr.ts_ns,
				     .flags = CTF_CALL};
	char detail[1024], step[32];
	int n;

	put_call(&tr.call, r);
	n = snprintf(detail, sizeof(detail), "pid %u (%s): ", r->hdr.pid,
		     comm_of(l, (pid_t)r->hdr.pid));
	if (cause == CAUSE_WGPU_ERROR)
		n += snprintf(detail + n, sizeof(detail) - n,
			      "%s returned an error object (out of memory, or a validation "
			      "error) at %s",
			      cat_api_name(r->hdr.api), call_site(l, r));
	else
		n += call_words(l, r, detail + n, sizeof(detail) - n);
	if (inner && n > 0 && (size_t)n < sizeof(detail)) {
		tr.flags |= CTF_INNER;
		put_call(&tr.inner, inner);
		n += snprintf(detail + n, sizeof(detail) - n, "; in it ");
		if (n > 0 && (size_t)n < sizeof(detail))
			n += call_words(l, inner, detail + n, sizeof(detail) - n);
	}
	step_words(l, (pid_t)r->hdr.pid, step, sizeof(step));
	if (n > 0 && (size_t)n < sizeof(detail))
		snprintf(detail + n, sizeof(detail) - n, "%s", step);
	tr.detail = detail;
	fire(w, l, &tr);
}

static void fire_proc(struct watch *w, struct live *l, enum capture_cause cause, pid_t pid,
		      uint64_t ts, const char *what)
{
	struct capture_trigger tr = {
	    .cause = cause, .pid = (uint32_t)pid, .tid = (uint32_t)pid, .ts_ns = ts};
	char detail[512], step[32];

	step_words(l, pid, step, sizeof(step));
	snprintf(detail, sizeof(detail), "pid %d (%s): %s%s", pid, comm_of(l, pid), what, step);
	tr.detail = detail;
	fire(w, l, &tr);
}

/* ---- the triggers in the records ---- */

/* Whether a call's return says it ran out of device (or pinned host) memory. */
static bool out_of_memory(const struct gl_call_rec *r)
{
	switch (GL_API_FAMILY(r->hdr.api)) {
	case GL_FAM_CUDART: /* cudaErrorMemoryAllocation */
	case GL_FAM_CUDA:   /* CUDA_ERROR_OUT_OF_MEMORY */
	case GL_FAM_VMM:
		return r->ret == 2;
	default:
		return false;
	}
}

/* A signal that dumps core: the process died of a fault, not because it was asked to. */
static bool fault_signal(int sig)
{
	switch (sig) {
	case SIGSEGV:
	case SIGBUS:
	case SIGILL:
	case SIGFPE:
	case SIGABRT:
	case SIGSYS:
	case SIGTRAP:
	case SIGQUIT:
	case SIGXCPU:
	case SIGXFSZ:
		return true;
	default:
		return false;
	}
}

static struct inner *inner_find(struct watch *w, uint32_t pid, uint32_t tid)
{
	size_t i;

	for (i = 0; i < w->nr_inner; i++)
		if (w->inner[i].pid == pid && w->inner[i].tid == tid)
			return &w->inner[i];
	return NULL;
}

static void on_call(struct watch *w, struct live *l, const struct gl_call_rec *r)
{
	struct inner *in = w->nr_inner ? inner_find(w, r->hdr.pid, r->hdr.tid) : NULL;
	bool failed = r->hdr.kind == GL_REC_ALLOC_FAIL ||
		      ((r->hdr.kind == GL_REC_CALL || r->hdr.kind == GL_REC_SYNC) && r->ret);

	if (r->hdr.depth) {
		/* Under an outer call (cudaMalloc -> cuMemAlloc, ncclMemAlloc -> cuMemCreate): it
		 * fires when the outermost call returns, as that call's failure. */
		if (failed && out_of_memory(r) && !in && w->nr_inner < MAX_INNER) {
			in = &w->inner[w->nr_inner++];
			*in = (struct inner){r->hdr.pid, r->hdr.tid, *r};
		}
		return;
	}
	if (in) {
		struct gl_call_rec inner = in->r;

		*in = w->inner[--w->nr_inner];
		if (failed)
			fire_call(w, l, CAUSE_OOM, r, &inner);
		return;
	}
	if (failed && out_of_memory(r))
		fire_call(w, l, CAUSE_OOM, r, NULL);
}

/* A WebGPU creation: did it make an error object (the analysis counts them)? */
static void on_wgpu(struct watch *w, struct live *l, const struct gl_call_rec *r)
{
	const struct tproc *p = tracker__proc(l->an->t, (pid_t)r->hdr.pid);
	struct wproc *wp;

	if (!p)
		return;
	wp = wproc_get(w, p);
	if (!wp || p->c.error_objects <= wp->error_objs)
		return;
	wp->error_objs = p->c.error_objects;
	fire_call(w, l, CAUSE_WGPU_ERROR, r, NULL);
}

/* Live bytes reached --live-above with this allocation. */
static void on_alloc(struct watch *w, struct live *l, const struct gl_call_rec *r)
{
	const struct tproc *p = tracker__proc(l->an->t, (pid_t)r->hdr.pid);
	struct capture_trigger tr = {.cause = CAUSE_LIVE,
				     .pid = r->hdr.pid,
				     .tid = r->hdr.tid,
				     .ts_ns = r->hdr.ts_ns,
				     .threshold = w->o->live_above,
				     .flags = CTF_CALL};
	char detail[1024], a[32], b[32], step[32];
	struct wproc *wp;
	int n;

	if (!p || p->live_bytes < w->o->live_above)
		return;
	wp = wproc_get(w, p);
	if (!wp || wp->live_fired)
		return;
	wp->live_fired = true;
	put_call(&tr.call, r);
	n = snprintf(detail, sizeof(detail), "pid %u (%s): %s live (--live-above %s) after ",
		     r->hdr.pid, comm_of(l, (pid_t)r->hdr.pid),
		     fmt_bytes(p->live_bytes, a, sizeof(a)),
		     fmt_bytes(w->o->live_above, b, sizeof(b)));
	step_words(l, (pid_t)r->hdr.pid, step, sizeof(step));
	if (n > 0 && (size_t)n < sizeof(detail)) {
		const char *site = call_site(l, r);

		snprintf(detail + n, sizeof(detail) - n, "%s of %s at %s%s",
			 cat_api_name(r->hdr.api), fmt_bytes(r->size, a, sizeof(a)), site, step);
	}
	tr.detail = detail;
	fire(w, l, &tr);
}

void watch__task(struct watch *w, struct live *l, const struct gl_task_rec *r)
{
	const struct tproc *p;
	struct wproc *wp;
	char what[64];
	int sig;

	if (r->event == GL_TASK_OOM_KILL) {
		fire_proc(w, l, CAUSE_OOM_KILL, (pid_t)r->hdr.pid, r->hdr.ts_ns,
			  "chosen by the kernel's OOM killer (SIGKILL follows)");
		return;
	}
	if (r->event != GL_TASK_EXIT || !WIFSIGNALED(r->exit_code) ||
	    !fault_signal(WTERMSIG(r->exit_code)))
		return;
	sig = WTERMSIG(r->exit_code);
	p = tracker__proc(l->an->t, (pid_t)r->hdr.pid);
	/* Its end in the analysis usually follows this record: the capture waits for it. */
	if (p && !p->exited) {
		wp = wproc_get(w, p);
		if (wp)
			wp->fault_sig = sig;
		return;
	}
	snprintf(what, sizeof(what), "died of SIG%s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
	fire_proc(w, l, CAUSE_FAULT, (pid_t)r->hdr.pid, r->hdr.ts_ns, what);
}

/* A process's end in the analysis: the capture of a fault its exit record announced. */
void watch__proc(struct watch *w, struct live *l, const struct gl_proc_rec *r)
{
	struct wproc *wp;
	char what[64];
	size_t i;

	if (!w->nr_procs && !w->nr_inner)
		return;
	/* An out-of-memory call it was inside of will never return now. */
	for (i = 0; r->event != GL_PROC_ATTACH && i < w->nr_inner;)
		if (w->inner[i].pid == r->hdr.pid)
			w->inner[i] = w->inner[--w->nr_inner];
		else
			i++;
	if (r->event != GL_PROC_EXIT)
		return;
	for (i = 0; i < w->nr_procs && w->procs[i].pid != (pid_t)r->hdr.pid; i++)
		;
	if (i == w->nr_procs || !w->procs[i].fault_sig)
		return;
	wp = &w->procs[i];
	snprintf(what, sizeof(what), "died of SIG%s",
		 sigabbrev_np(wp->fault_sig) ? sigabbrev_np(wp->fault_sig) : "?");
	wp->fault_sig = 0;
	fire_proc(w, l, CAUSE_FAULT, (pid_t)r->hdr.pid, r->hdr.ts_ns, what);
}

void watch__alloc(struct watch *w, struct live *l, const struct gl_call_rec *r)
{
	if (w->nr_inner)
		on_call(w, l, r);
	if (GL_API_FAMILY(r->hdr.api) == GL_FAM_WEBGPU && (w->o->on & WATCH_ON_OOM))
		on_wgpu(w, l, r);
	if (w->o->live_above && !r->hdr.depth)
		on_alloc(w, l, r);
}

void watch__call(struct watch *w, struct live *l, const struct gl_call_rec *r)
{
	if (w->nr_inner || r->hdr.kind == GL_REC_ALLOC_FAIL || r->ret)
		on_call(w, l, r);
}

/* ---- between drains ---- */

/* The first traced process, which an on-demand capture is named by. */
static pid_t first_pid(struct live *l)
{
	size_t i;

	for (i = 0; i < targets__count(l->tgts); i++)
		if (target__in_analysis(targets__at(l->tgts, i)))
			return targets__at(l->tgts, i)->pid;
	return getpid(); /* none left: the capture is gpuleak's own */
}

/* The time to OOM of each traced process, against --oom-within. */
static void check_soon(struct watch *w, struct live *l)
{
	const struct tracker *t = l->an->t;
	size_t i;

	for (i = 0; i < t->nr_procs; i++) {
		const struct tproc *p = t->procs[i];
		struct projection pj;
		struct growth *g = NULL;
		struct wproc *wp;
		size_t n = 0;

		if (!p->attached || p->exited || p->detached ||
		    timeline__growth(l->an->tl, p, &g, &n))
			continue;
		timeline__project(l->an->tl, p, g, n, &pj);
		wp = wproc_get(w, p);
		if (wp && pj.known && pj.seconds_to_oom * 1e9 < (double)w->o->oom_within_ns &&
		    !wp->soon_fired) {
			struct capture_trigger tr = {.cause = CAUSE_OOM_SOON,
						     .pid = (uint32_t)p->pid,
						     .tid = (uint32_t)p->pid,
						     .ts_ns = t->last_ts_ns,
						     .threshold = w->o->oom_within_ns};
			char detail[512], used[32], cap[32], rate[32], step[32];

			wp->soon_fired = true;
			step_words(l, p->pid, step, sizeof(step));
			snprintf(detail, sizeof(detail),
				 "pid %d (%s): %s%d runs out in ~%.1f s (~%.0f steps; --oom-within "
				 "%.0f s): %s of %s used, growing %s/step%s",
				 p->pid, p->comm, pj.webgpu ? "WebGPU device wgpu#" : "device ",
				 pj.webgpu ? pj.device + 1 : pj.device, pj.seconds_to_oom,
				 pj.steps_to_oom, w->o->oom_within_ns / 1e9,
				 fmt_bytes(pj.used, used, sizeof(used)),
				 fmt_bytes(pj.capacity, cap, sizeof(cap)),
				 fmt_bytes((uint64_t)pj.rate_per_step, rate, sizeof(rate)), step);
			tr.detail = detail;
			fire(w, l, &tr);
		} else if (wp && wp->soon_fired &&
			   (!pj.known || pj.seconds_to_oom * 1e9 > 2.0 * w->o->oom_within_ns)) {
			wp->soon_fired = false; /* out of danger: armed again */
		}
		free(g);
	}
}

void watch__poll(struct watch *w, struct live *l, bool usr1, uint64_t now_ns)
{
	size_t i;

	if (usr1) {
		struct capture_trigger tr = {.cause = CAUSE_SIGNAL,
					     .pid = (uint32_t)first_pid(l),
					     .ts_ns = l->an->t->last_ts_ns};
		char detail[128];

		snprintf(detail, sizeof(detail), "SIGUSR1 to gpuleak (pid %d): on demand",
			 (int)getpid());
		tr.detail = detail;
		tr.tid = tr.pid;
		fire(w, l, &tr);
	}
	/* --live-above is armed again once the process is below it. */
	for (i = 0; w->o->live_above && i < w->nr_procs; i++) {
		const struct tproc *p = tracker__proc(l->an->t, w->procs[i].pid);

		if (w->procs[i].live_fired && p && p->live_bytes < w->o->live_above)
			w->procs[i].live_fired = false;
	}
	if (w->o->oom_within_ns && now_ns >= w->next_soon_ns) {
		w->next_soon_ns = now_ns + SOON_EVERY_NS;
		check_soon(w, l);
	}
}

bool watch__finish(struct watch *w)
{
	struct flight_stats fs;
	uint64_t suppressed = 0;
	char peak[32];
	int i;

	for (i = 0; i < NR_CAUSES; i++)
		suppressed += w->suppressed[i];
	flight__stats(w->flight, &fs);
	fprintf(stderr, "gpuleak: watch: %u capture%s written into %s", w->written,
		w->written == 1 ? "" : "s", w->dir);
	if (w->failed)
		fprintf(stderr, ", %u not written", w->failed);
	if (suppressed)
		fprintf(stderr, ", %" PRIu64 " trigger%s within the cooldown", suppressed,
			suppressed == 1 ? "" : "s");
	if (w->removed)
		fprintf(stderr, ", %u old one%s removed", w->removed, w->removed == 1 ? "" : "s");
	fprintf(stderr, "; the ring held at most %s of records\n",
		fmt_bytes(fs.peak_bytes, peak, sizeof(peak)));
	return w->failed > 0;
}
