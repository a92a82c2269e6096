// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reliability on hand-made inputs: the error bounds of a lossy verdict, records of the
 * previous format, the timeline's bounded history over many steps, and the kernel checks on
 * a made-up sysfs. The end-to-end tests (tests/test_reliability.py) cover the same live.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "gpuleak.h"
#include "live/process.h"
#include "engine/timeline.h"
#include "tracker/tracker.h"

#define PID 200
#define TID 201

static uint64_t clock_ns = 1000;

/* A call record with header flags (enum gl_hdr_flags). */
static int call_flags(struct tracker *t, uint8_t kind, uint16_t api, uint64_t addr, uint64_t size,
		      uint16_t flags)
{
	struct gl_call_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr.size = sizeof(r);
	r.hdr.kind = kind;
	r.hdr.api = api;
	r.hdr.flags = flags;
	r.hdr.pid = PID;
	r.hdr.tid = TID;
	r.hdr.ts_ns = clock_ns += 10;
	r.addr = addr;
	r.size = size;
	r.caller = 0x401000;
	r.stack_id = -1;
	return tracker__apply(t, &r.hdr);
}

static int call(struct tracker *t, uint8_t kind, uint16_t api, uint64_t addr, uint64_t size)
{
	return call_flags(t, kind, api, addr, size, 0);
}

static void loss(struct tracker *t, size_t rec_size, const uint64_t *counts, int n)
{
	struct gl_loss_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr.size = rec_size;
	r.hdr.kind = GL_REC_LOSS;
	r.hdr.pid = PID;
	r.hdr.ts_ns = clock_ns += 10;
	memcpy(r.counts, counts, n * sizeof(*counts));
	tracker__apply(t, &r.hdr);
}

/* Lost frees can only overstate live bytes, by at most the largest live allocations. */
static void bounds_of_lost_records(void)
{
	uint64_t counts[GL_STAT_MAX] = {0};
	struct uncertainty u;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	call(t, GL_REC_ALLOC, GL_API_CUDA_MALLOC, 0x10000, 100);
	call(t, GL_REC_ALLOC, GL_API_CUDA_MALLOC, 0x20000, 700);
	call(t, GL_REC_ALLOC, GL_API_CUDA_MALLOC, 0x30000, 300);
	call(t, GL_REC_ALLOC, GL_API_CUDA_MALLOC, 0x40000, 500);
	p = tracker__proc(t, PID);
	CHECK(!tproc__uncertainty(t, p, &u), "bounds");
	CHECK(!u.approximate, "nothing lost: exact");
	CHECK_U64(u.live_overstated_max, 0, "no lost free");
	counts[GL_STAT_RB_FULL] = 3;
	counts[GL_STAT_LOST_FREES] = 2;
	counts[GL_STAT_LOST_ALLOCS] = 1;
	counts[GL_STAT_LOST_ALLOC_BYTES] = 4096;
	loss(t, sizeof(struct gl_loss_rec), counts, GL_STAT_MAX);
	CHECK(!tproc__uncertainty(t, p, &u), "bounds");
	CHECK(u.approximate && u.under_known, "approximate, both ends known");
	CHECK_U64(u.live_overstated_max, 700 + 500, "the two largest live allocations");
	CHECK_U64(u.live_understated_max, 4096, "the bytes of the lost allocation");
	counts[GL_STAT_LOST_FREES] = 9;
	counts[GL_STAT_LOST_ALLOCS_UNSIZED] = 1;
	loss(t, sizeof(struct gl_loss_rec), counts, GL_STAT_MAX);
	CHECK(!tproc__uncertainty(t, p, &u), "bounds");
	CHECK_U64(u.live_overstated_max, 1600, "more lost frees than live: all of it");
	CHECK(!u.under_known, "an allocation of unknown size leaves the upper end open");
	tracker__free(t);
}

/* An allocation whose out-pointer could not be read is missed memory of a known size. */
static void unreadable_out_pointer_is_a_missed_allocation(void)
{
	uint64_t counts[GL_STAT_MAX] = {0};
	struct uncertainty u;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	call(t, GL_REC_ALLOC, GL_API_CUDA_MALLOC, 0x10000, 100);
	/* BPF leaves the address 0 when it cannot read it */
	CHECK(!call_flags(t, GL_REC_ALLOC, GL_API_CUDA_MALLOC, 0, 1 << 20, GL_HF_ADDR_READ_FAIL),
	      "record with an unread address");
	counts[GL_STAT_READ_FAIL] = 1;
	loss(t, sizeof(struct gl_loss_rec), counts, GL_STAT_MAX);
	p = tracker__proc(t, PID);
	if (!CHECK(p, "process"))
		goto cleanup;
	CHECK_U64(p->live_bytes, 100, "not live: it has no address to free it by");
	CHECK(!tproc__uncertainty(t, p, &u), "bounds");
	CHECK(u.approximate && u.under_known, "approximate, bounded");
	CHECK_U64(u.allocs_missed, 1, "one allocation missed");
	CHECK_U64(u.live_understated_max, 1 << 20, "by its bytes");
cleanup:
	tracker__free(t);
}

/* gpuleak 0.1 wrote 8 loss counters and 56-byte process records: still read. */
static void records_of_the_previous_format(void)
{
	uint64_t counts[8] = {5, 0, 0, 0, 0, 0, 0, 0};
	struct gl_proc_rec pr;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	memset(&pr, 0, sizeof(pr));
	pr.hdr.size = GL_PROC_REC_V1_SIZE;
	pr.hdr.kind = GL_REC_PROC;
	pr.hdr.pid = PID;
	pr.hdr.ts_ns = clock_ns += 10;
	pr.event = GL_PROC_ATTACH;
	pr.ppid = 77; /* beyond the old record: must not be read */
	strcpy(pr.comm, "old");
	CHECK(!tracker__apply(t, &pr.hdr), "56-byte process record");
	loss(t, GL_LOSS_REC_V1_SIZE, counts, 8);
	p = tracker__proc(t, PID);
	if (!CHECK(p, "process"))
		goto cleanup;
	CHECK(p->attached && !strcmp(p->comm, "old"), "attached, named");
	CHECK_U64(p->ppid, 0, "no ppid in an old record");
	CHECK_U64(p->loss[GL_STAT_RB_FULL], 5, "old loss counters");
	CHECK_U64(p->loss[GL_STAT_LOST_FREES], 0, "counters it did not have are zero");
	CHECK_U64(t->bad_records, 0, "nothing rejected");
	/* An exec ends the process: a reused pid after it is another process. */
	pr.hdr.size = sizeof(pr);
	pr.event = GL_PROC_EXEC;
	tracker__apply(t, &pr.hdr);
	CHECK(p->exited && p->execed, "ended by exec");
	pr.event = GL_PROC_ATTACH;
	tracker__apply(t, &pr.hdr);
	CHECK(tracker__proc(t, PID) != p, "what it exec'd is a new process");
	CHECK_U64(tracker__proc(t, PID)->ppid, 77, "ppid of a new record");
cleanup:
	tracker__free(t);
}

/*
 * 40000 steps (a sync each) with one site leaking 64 bytes a step: the timeline keeps a
 * bounded number of them, counts all, and still finds the leak at its slope.
 */
static void bounded_step_history(void)
{
	struct timeline_opts o = {.source = STEP_SYNC, .warmup_steps = 3, .min_growth_steps = 5};
	struct gl_proc_rec pr;
	struct timeline *tl = NULL;
	struct tracker *t;
	struct growth *g = NULL;
	size_t n, ng = 0;
	uint64_t i;

	if (!CHECK(!tracker__new(&t), "new") || !CHECK(!timeline__new(&o, t, &tl), "timeline"))
		goto cleanup;
	memset(&pr, 0, sizeof(pr));
	pr.hdr.size = sizeof(pr);
	pr.hdr.kind = GL_REC_PROC;
	pr.hdr.pid = PID;
	pr.hdr.ts_ns = clock_ns;
	pr.event = GL_PROC_ATTACH;
	tracker__apply(t, &pr.hdr);
	timeline__on_record(tl, &pr.hdr);
	for (i = 0; i < 40000; i++) {
		struct gl_call_rec r;

		call(t, GL_REC_ALLOC, GL_API_CUDA_MALLOC, 0x100000 + 64 * i, 64);
		memset(&r, 0, sizeof(r));
		r.hdr.size = sizeof(r);
		r.hdr.kind = GL_REC_SYNC;
		r.hdr.api = GL_API_CUDA_DEVICE_SYNCHRONIZE;
		r.hdr.pid = PID;
		r.hdr.tid = TID;
		r.hdr.ts_ns = clock_ns += 10;
		r.aux2 = r.hdr.ts_ns - 5;
		tracker__apply(t, &r.hdr);
		timeline__on_record(tl, &r.hdr);
	}
	timeline__steps(tl, tracker__proc(t, PID), &n);
	CHECK(n <= 16384, "steps kept: %zu", n);
	CHECK_U64(timeline__nr_steps(tl, tracker__proc(t, PID)), 40000,
		  "every step a sync closed counted");
	if (!CHECK(!timeline__growth(tl, tracker__proc(t, PID), &g, &ng), "growth") ||
	    !CHECK(ng == 1, "one leak"))
		goto cleanup;
	CHECK(g[0].slope_per_step > 63.9 && g[0].slope_per_step < 64.1, "slope %.2f",
	      g[0].slope_per_step);
	CHECK_U64(g[0].end_bytes, 40000 * 64, "its live bytes now");
cleanup:
	free(g);
	timeline__free(tl);
	tracker__free(t);
}

static int touch(const char *dir, const char *rel)
{
	char path[4096], *slash;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	return close(creat(path, 0644));
}

static void kernel_checks(void)
{
	char dir[] = "/tmp/gpuleak-sysfs-XXXXXX", why[512];

	if (!CHECK(mkdtemp(dir), "temporary sysfs"))
		return;
	CHECK(process__check_kernel(dir, why, sizeof(why)) == -ENOENT, "empty: refused");
	CHECK(strstr(why, "no BTF") && strstr(why, "CONFIG_DEBUG_INFO_BTF"), "says BTF: %s", why);
	touch(dir, "kernel/btf/vmlinux");
	CHECK(process__check_kernel(dir, why, sizeof(why)) == -ENOENT, "no uprobes: refused");
	CHECK(strstr(why, "no uprobes") && strstr(why, "CONFIG_UPROBES"), "says uprobes: %s", why);
	touch(dir, "bus/event_source/devices/uprobe/type");
	CHECK(!process__check_kernel(dir, why, sizeof(why)), "both: accepted");
	CHECK(!process__check_kernel("/sys", why, sizeof(why)), "this kernel: %s", why);
	CHECK_U64(process__boot_ns_to_ticks(12345678901ULL),
		  12345678901ULL / (1000000000ULL / sysconf(_SC_CLK_TCK)), "ns to ticks");
	CHECK_U64(process__ns_pid(getpid()), 0, "in our own namespace");
	snprintf(why, sizeof(why), "rm -rf %s", dir);
	CHECK(!system(why), "cleanup");
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"reliability_bounds_of_lost_records", bounds_of_lost_records},
	    {"reliability_unreadable_out_pointer_is_a_missed_allocation",
	     unreadable_out_pointer_is_a_missed_allocation},
	    {"reliability_records_of_the_previous_format", records_of_the_previous_format},
	    {"reliability_bounded_step_history", bounded_step_history},
	    {"reliability_kernel_checks", kernel_checks},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
