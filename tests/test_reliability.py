# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Reliability and scale: losses counted and bounded, faults survived (a target killed, gpuleak
signalled), PID reuse refused, the tracer's memory flat in a soak, many processes (-p lists,
--follow across fork and exec, rank skew), containers (pid namespaces, other roots), and the
fleet endpoint scraped by real clients (curl, promtool, Prometheus' own OpenMetrics parser)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import harness
from harness import (ROOT, Attached, Fail, Proc, check, check_sanitizers, eq, env_for_targets,
                     gpuleak_env, leak_sites, read_ndjson, run_gpuleak, run_plain, scenario, test,
                     tmpfile)
from test_capture import report, same_verdict, wait_captured_steps

MiB = 1 << 20
KiB = 1 << 10


def gl():
    return harness.GPULEAK


def summaries(records):
    return [r for r in records if r.get("type") == "summary"]


def by_comm_rank(verdicts):
    """Verdicts of processes that allocated, by pid."""
    return {v["pid"]: v for v in verdicts if v["allocs"]}


# ---- loss ----------------------------------------------------------------------------------

FLOOD_N, FLOOD_SIZE, FLOOD_K = 20000, 4096, 8


def flood(ringbuf=None):
    """flood, attached after its warm-up: exactly 4N + 2K traced calls (tests/scenarios),
    issued while gpuleak is stopped (a tracer starved of CPU): only the ring buffer holds
    them until it runs again. The target exits once gpuleak has drained the ring: its first
    interval record with anything in it comes after a drain, which empties the ring (the
    target makes no more calls), so the exit record finds room."""
    gl_args = ["--interval", "50ms"] + (["--ringbuf-size", ringbuf] if ringbuf else [])
    a = Attached("flood", [FLOOD_N, FLOOD_SIZE, FLOOD_K], gl_args=gl_args)
    try:
        a.wait_attached()
        tail = harness.NdjsonTail(a.json_path)
        os.kill(a.gl.pid, signal.SIGSTOP)
        try:
            a.target.send()
            a.target.wait_line("^done")
        finally:
            os.kill(a.gl.pid, signal.SIGCONT)
        harness.wait_interval(tail, lambda r: r["allocs"] + r["frees"] > 0,
                              "gpuleak to drain the ring buffer")
        a.target.send()
        res = a.finish()
    finally:
        a.cleanup()
    return res


@test
def flood_losses_add_up_to_what_was_issued():
    """A 4 KiB and a 1 MiB ring buffer and a burst of 80k records while the tracer cannot
    run: every record is either received or counted lost, the cost of each lost one is known
    (allocation or free, bytes), and the verdict's bounds hold the true live bytes. Each
    cudaMalloc is one allocation however many records it makes (the runtime's and the
    driver's): seen, or counted missed once — it was counted at both levels ("missed: 408742
    allocations" for 204,371)."""
    issued, user_allocs = 4 * FLOOD_N + 2 * FLOOD_K, FLOOD_N + FLOOD_K
    for ring in ("4KiB", "1MiB"):
        res = flood(ring)
        v = res.verdict()
        lost = v["losses"]["ringbuf_full"]
        if ring == "4KiB":
            # the ring's smallest record: a 40-byte short free behind its 8-byte ring header
            check(lost >= issued - 4096 // 48, f"all but what 4 KiB holds was lost: {v['losses']}")
        check(lost > 0, f"{ring}: records lost")
        eq(v["losses"]["lost_process_events"], 0, "the exit record came after the drain")
        eq(v["calls"] + lost, issued, f"{ring}: received + lost = issued")
        missed = v["losses"]["lost_allocs"]
        eq(v["allocs"] + missed, user_allocs,
           f"{ring}: the allocations seen and those missed are the cudaMalloc calls made")
        eq(v["losses"]["lost_allocs_unsized"], 0, "the size of every lost allocation is known")
        eq(v["approximate"], True, "approximate")
        u = v["uncertainty"]
        eq((u["records_lost"], u["allocs_missed"], u["frees_missed"]),
           (lost, missed, v["losses"]["lost_frees"]), "uncertainty counts")
        eq(u["alloc_bytes_missed"], missed * FLOOD_SIZE, f"{ring}: missed bytes, once each")
        truth = FLOOD_K * FLOOD_SIZE
        check(u["live_bytes_min"] <= truth <= u["live_bytes_max"],
              f"the true live bytes ({truth}) lie within the verdict's bounds: {u}, "
              f"live_bytes {v['live_bytes']}")
        check(u["live_bytes_min"] <= v["live_bytes"] <= u["live_bytes_max"],
              "bounds around live")
        m = re.search(r"^LOST \(results approximate\): ringbuf_full=(\d+)( |$)", res.out, re.M)
        check(m and int(m.group(1)) == lost, f"LOST line with the count: {res.out}")
        check(re.search(r"^  missed: %d allocations \(.*\), %d frees; live bytes are between "
                        % (missed, u["frees_missed"]), res.out, re.M),
              f"by how much, in the text: {res.out}")


@test
def no_loss_means_exact():
    """The same burst into the default ring buffer (64 MiB): it holds the whole burst until
    the tracer runs again; nothing lost, nothing approximate."""
    v = flood().verdict()
    eq(v["calls"], 4 * FLOOD_N + 2 * FLOOD_K, "every call received")
    eq(v["losses"]["ringbuf_full"], 0, "nothing lost")
    eq(v["approximate"], False, "exact")
    eq((v["uncertainty"]["live_bytes_min"], v["uncertainty"]["live_bytes_max"]),
       (FLOOD_K * FLOOD_SIZE, FLOOD_K * FLOOD_SIZE), "bounds collapse to the value")
    eq(leak_sites(v), {("cudaMalloc", "keep"): (FLOOD_K * FLOOD_SIZE, FLOOD_K)}, "leaks")


# ---- faults ---------------------------------------------------------------------------------

def proc_state(pid):
    """The state letter of /proc/PID/stat (R, S, T ...), None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def start_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


class Recording:
    """`gpuleak record -p PID` of a scenario started with the sync handshake, running."""

    def __init__(self, name, args, extra=()):
        self.cap, self.live = tmpfile(".glc"), tmpfile(".ndjson")
        self.target = Proc([scenario(name)] + [str(a) for a in args],
                           env=env_for_targets({"SCENARIO_SYNC": "1"}))
        self.target.wait_line(r"ready (\d+)")
        self.gl = Proc([gl(), "record", "-o", self.cap, "--json", self.live, "--interval", "0",
                        "-p", str(self.target.pid)] + list(extra), env=gpuleak_env(),
                       stdin=False)
        self.gl.wait_line(r"tracing pid %d" % self.target.pid, stream="err")
        self.target.send()

    def finish(self, expect_rc=0):
        rc = self.gl.finish()
        err = self.gl.text("err")
        check_sanitizers(err)
        eq(rc, expect_rc, f"gpuleak exit code (stderr: {err})")
        return read_ndjson(self.live)

    def cleanup(self):
        self.target.kill()
        self.gl.kill()
        for p in (self.cap, self.live):
            if os.path.exists(p):
                os.unlink(p)


def verdicts_only(path):
    """The verdict records of an NDJSON file, validated; the rest (a soak's hundreds of
    thousands of step records) is not read."""
    import json
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith('{"type":"verdict"'):
                rec = json.loads(line)
                errors = list(harness.validator().iter_errors(rec))
                check(not errors, f"verdict does not match the schema: {errors[:1]}")
                out.append(rec)
    return out


def one_verdict(records):
    vs = [r for r in records if r.get("type") == "verdict"]
    check(len(vs) == 1, f"one verdict, got {len(vs)}")
    return vs[0]


@test
def target_killed_mid_run_keeps_report_and_capture():
    """SIGKILL to the target mid-run: gpuleak reports it exited by that signal, with
    everything it saw, and the capture gives the same verdict offline."""
    r = Recording("loop", [100000, 65536])
    try:
        wait_captured_steps(r.cap, 5)
        os.kill(r.target.pid, signal.SIGKILL)
        live = one_verdict(r.finish())
        eq((live["state"], live["exit_status"]), ("exited", 128 + signal.SIGKILL),
           "killed by SIGKILL, status from the kernel")
        check(re.search(r"^pid %d \(loop\): exited with status 137 " % r.target.pid,
                        r.gl.text("out"), re.M), f"text report: {r.gl.text('out')}")
        sites = leak_sites(live)
        eq(sites[("cudaMalloc", "kv_cache_init")], (64 * MiB, 1), "the KV cache")
        b, n = sites[("cudaMalloc", "leaky_sampler")]
        check(n >= 5, f"the 5 steps seen in the capture before the kill, at least: {n}")
        eq(b, n * 65536, "one leak per step")
        eq(live["approximate"], False, "nothing lost")
        off = report(r.cap).verdict()
        same_verdict(live, off)
        eq((off["capture"]["finished"], off["capture"]["truncated"]), (True, False),
           "capture finished")
    finally:
        r.cleanup()


@test
def target_that_crashes_is_reported_with_its_fault():
    """A real fault (a write through a null pointer, SIGSEGV), in a process gpuleak started
    and in one it attached to: the exit status is the kernel's, and what it left is the
    verdict, exactly."""
    def expected(v, out, pid, how):
        eq((v["state"], v["exit_status"]), ("exited", 128 + signal.SIGSEGV), f"{how}: status")
        eq(leak_sites(v), {("cudaMalloc", "alloc_before_crash"): (2 * MiB, 1)}, f"{how}: leaks")
        eq((v["allocs"], v["frees"], v["approximate"]), (1, 0, False), f"{how}: counts")
        check(re.search(r"^pid %d \(crash\): exited with status 139 " % pid, out, re.M),
              f"{how}: text report:\n{out}")

    # the command gpuleak ran failed: exit status 4 (docs/verdict.md)
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("crash")], expect_rc=4)
    v = res.verdict()
    expected(v, res.out, v["pid"], "run")
    a = Attached("crash")
    try:
        a.wait_attached()
        res = a.finish()
        expected(res.verdict(), res.out, a.target.pid, "attach")
    finally:
        a.cleanup()


@test
def signals_to_gpuleak_detach_flush_report():
    """SIGINT, SIGTERM, SIGHUP: detach, drain, report, a finished capture, and the target
    runs on, not stopped. SIGKILL: the capture reads up to its last block, and the target
    still runs on."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
        r = Recording("loop", [100000, 4096])
        try:
            wait_captured_steps(r.cap, 10)      # in a whole block (written every second)
            r.gl.p.send_signal(sig)
            recs = r.finish(expect_rc=-signal.SIGKILL if sig == signal.SIGKILL else 0)
            time.sleep(0.1)
            check(proc_state(r.target.pid) not in (None, "T", "t", "Z"),
                  f"{sig.name}: the target runs on ({proc_state(r.target.pid)})")
            off = report(r.cap).verdict()
            if sig == signal.SIGKILL:
                eq(recs, [], "killed: no verdict")
                eq((off["capture"]["finished"], off["capture"]["truncated"]), (False, True),
                   "a capture cut short")
                check(off["allocs"] > 0, f"what the last whole block holds: {off['allocs']}")
                continue
            live = one_verdict(recs)
            eq(live["state"], "detached", f"{sig.name}: detached from a running target")
            same_verdict(live, off)
            eq(off["capture"]["finished"], True, f"{sig.name}: capture finished")
            n = leak_sites(live)[("cudaMalloc", "leaky_sampler")][1]
            check(n >= 10, f"{sig.name}: the 10 steps seen in the capture, at least ({n})")
        finally:
            r.cleanup()


@test
def pid_reuse_is_refused():
    """-p PID@TICKS: a pid now held by another process (made to reuse it through
    ns_last_pid) is refused with one line; the right one is traced."""
    first = Proc(["sleep", "60"], stdin=False)
    pid, ticks = first.pid, start_ticks(first.pid)
    first.kill()
    first.p.wait()
    time.sleep(0.05)    # start times have a 10 ms resolution: be a few ticks later
    second = None
    for _ in range(200):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = Proc([scenario("basic"), "2", "0", "4096"],
                 env=env_for_targets({"SCENARIO_SYNC": "1"}))
        if p.pid == pid:
            second = p
            break
        p.kill()
        p.p.wait()
    if second is None:
        raise Fail(f"could not get pid {pid} reused")
    try:
        second.wait_line("ready")
        check(start_ticks(pid) != ticks, "the two processes started at different ticks")
        p = run_plain([gl(), "attach", "-p", f"{pid}@{ticks}"])
        eq(p.returncode, 1, f"exit code ({p.stderr})")
        eq(p.stderr.strip().splitlines(),
           [f"gpuleak: pid {pid} is not the process asked for: it started at "
            f"{start_ticks(pid)} (clock ticks after boot), not {ticks}; the pid was reused"],
           "one line")
        # The process that does have the pid, named with its own start time.
        json_path = tmpfile(".ndjson")
        gl_p = Proc([gl(), "attach", "-p", f"{pid}@{start_ticks(pid)}", "--json", json_path,
                     "--interval", "0"], env=gpuleak_env(), stdin=False)
        gl_p.wait_line(r"tracing pid %d" % pid, stream="err")
        second.send()
        second.wait_line("^done")
        second.send()
        eq(gl_p.finish(), 0, f"exit code ({gl_p.text('err')})")
        v = one_verdict(read_ndjson(json_path))
        os.unlink(json_path)
        eq(leak_sites(v), {("cudaMalloc", "alloc_buffers"): (2 * 4096, 2)}, "traced")
    finally:
        second.kill()


def retained_init(v):
    """{function: (bytes, count)} of what a verdict retains as made before the first step."""
    return {r["site"].split("+")[0]: (r["bytes"], r["count"]) for r in v["retained"]
            if r["retained_by"] == "init"}


SOAK_STEPS, SOAK_EVERY = 8 * 16384, 8192


@test
def soak_keeps_the_tracers_memory_flat():
    """131,072 steps (--step sync) of 18 traced calls, as fast as they go, at a constant
    live set: the tracer's resident memory does not grow once it is warm, nothing is lost,
    and the verdict is exact. The target stops every 8,192 steps until gpuleak has seen them
    all (its metrics count the allocations and frees), and the tracer's RSS is read there:
    16 samples at known points of the work, on any machine. The plain build: ASan's
    quarantine would be what grows. (The step history keeps 16,384 steps; unbounded it
    grows ~100 B a step.)"""
    plain = os.path.join(ROOT, "gpuleak")
    json_path = tmpfile(".ndjson")
    g = Proc([plain, "run", "--step", "sync", "--interval", "0", "--metrics", ":0", "--json",
              json_path, "--", scenario("soak"), str(SOAK_STEPS), str(SOAK_EVERY)],
             env=gpuleak_env())
    rss = []
    try:
        url = g.wait_line(r"serving metrics on (http://\S+)", stream="err").group(1)
        g.wait_line(r"tracing pid", stream="err")
        for done in range(SOAK_EVERY, SOAK_STEPS + 1, SOAK_EVERY):
            g.wait_line(r"^at %d$" % done)
            # kv_cache_init, then 4 allocations and 4 frees a step
            wait_metrics(url, f"gpuleak to have seen {done} steps",
                         gpuleak_allocations_total=1 + 4 * done, gpuleak_frees_total=4 * done)
            with open(f"/proc/{g.pid}/status") as f:
                rss.append((done, int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))))
            g.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
    finally:
        g.kill()
    v = one_verdict(verdicts_only(json_path))
    os.unlink(json_path)
    eq(int(re.search(r"^steps (\d+)$", g.text("out"), re.M).group(1)), SOAK_STEPS, "steps made")
    eq(v["calls"], 4 + 18 * SOAK_STEPS, "every call: 2 at start-up, the KV cache, 18 per step")
    eq(v["losses"]["ringbuf_full"], 0, "nothing lost")
    eq(v["steps"], SOAK_STEPS + 1, "every step counted, the ones no longer kept included")
    eq(leak_sites(v), {}, "no leak")
    eq(retained_init(v), {"kv_cache_init": (64 * MiB, 1)},
       "live set: the KV cache, made before the first sync")
    # warm: from a quarter of the run, twice the steps the history keeps
    warm = [kb for done, kb in rss if done >= SOAK_STEPS // 4]
    eq(len(warm), 13, f"RSS read at every stop from a quarter of the run: {rss}")
    grew = max(warm) - warm[0]
    check(grew <= 1024, f"RSS grew {grew} KiB after warm-up ({warm[0]} KiB to {max(warm)} "
          f"KiB over {SOAK_STEPS} steps): {rss}")


@test
def soak_under_sanitizers():
    """The same bounded history, forgotten and refitted under ASan/UBSan: 40,000 steps,
    beyond twice what it keeps."""
    steps = 40000
    json_path = tmpfile(".ndjson")
    p = run_plain([gl(), "run", "--step", "sync", "--interval", "0", "--json", json_path, "--",
                   scenario("soak"), str(steps)])
    check_sanitizers(p.stderr)
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    v = one_verdict(verdicts_only(json_path))
    os.unlink(json_path)
    eq(v["steps"], steps + 1, "every step counted (+ the one before the first sync)")
    eq(v["calls"], 4 + 18 * steps, "every call")
    eq(retained_init(v), {"kv_cache_init": (64 * MiB, 1)}, "live set, made before the first sync")
    eq(v["growth"], [], "nothing grows")


# ---- many processes --------------------------------------------------------------------------

RANK_STEPS, RANK_LEAK = 12, MiB
STEP_OPTS = ["--step", "sym:ranks:decode_step", "--warmup-steps", "1", "--min-growth-steps", "3"]


def check_ranks(res, n, leaky, parent_pid=None, parent_attached=True):
    """What `ranks MODE n leaky 12 1M` leaves: a verdict per rank, one leaking, and a summary
    naming it as the skewed rank."""
    vs = res.verdicts()
    ranks = {v["pid"]: v for v in vs if v["allocs"]}
    eq(len(ranks), n, f"a verdict per rank: {[(v['pid'], v['comm'], v['allocs']) for v in vs]}")
    leakers = []
    for pid, v in ranks.items():
        eq(v["state"], "exited", "rank exited")
        eq(v["exit_status"], 0, "rank status")
        if parent_pid:
            eq(v["ppid"], parent_pid, "followed from the parent")
        eq(v["comm"], "ranks", "comm")
        sites = leak_sites(v)
        eq(retained_init(v), {"kv_cache_init": (16 * MiB, 1)},
           f"rank {pid}: KV cache, made before the first decode_step")
        check(("cudaMalloc", "kv_cache_init") not in sites, f"rank {pid}: the KV cache is no leak")
        eq(v["allocs"], 1 + 2 * RANK_STEPS + (RANK_STEPS if ("cudaMalloc", "leaky_sampler")
                                               in sites else 0), f"rank {pid}: allocations")
        eq(v["frees"], 2 * RANK_STEPS, f"rank {pid}: frees")
        eq(v["steps"], RANK_STEPS + 1, f"rank {pid}: a step per decode_step")
        if ("cudaMalloc", "leaky_sampler") in sites:
            leakers.append(pid)
            eq(sites[("cudaMalloc", "leaky_sampler")], (RANK_STEPS * RANK_LEAK, RANK_STEPS),
               "the leak")
            eq([(g["site"].split("+")[0], round(g["slope_bytes_per_step"])) for g in v["growth"]],
               [("leaky_sampler", RANK_LEAK)], "growth of the leaking rank")
        else:
            eq(v["growth"], [], f"rank {pid} is flat")
    eq(len(leakers), 1, "one leaking rank")
    if parent_pid and parent_attached:
        parent = [v for v in vs if v["pid"] == parent_pid]
        eq(len(parent), 1, "the parent has a verdict")
        eq((parent[0]["allocs"], parent[0]["state"]), (0, "exited"), "the parent")
    s = summaries(res.records)
    eq(len(s), 1, "one summary record")
    s = s[0]
    eq(s["processes"], len(vs), "summary covers every verdict")
    eq(s["live_bytes"], sum(v["live_bytes"] for v in vs), "summed live bytes")
    eq([(k["pid"], k["peers"], k["peer_median_bytes_per_s"]) for k in s["skew"]],
       [(leakers[0], n - 1, 0.0)], "rank skew: the leaking rank, against flat peers")
    check(re.search(r"^rank skew: pid %d \(ranks\) grows .*/s while its %d peers stay flat"
                    % (leakers[0], n - 1), res.out, re.M), f"skew in the text: {res.out}")
    check(re.search(r"^across %d processes:$" % len(vs), res.out, re.M), "summary table")


@test
def follow_forked_ranks():
    """run --follow: ranks forked from a parent that maps the runtime, each stopped at its
    fork until its probes are in place, traced to its exit; one leaks."""
    res = run_gpuleak(["run", "--follow", "--interval", "0"] + STEP_OPTS +
                      ["--", scenario("ranks"), "fork", "3", "1", str(RANK_STEPS), "1M"])
    parent = [v for v in res.verdicts() if not v["allocs"]][0]["pid"]
    check_ranks(res, 3, 1, parent)


@test
def follow_execed_ranks():
    """run --follow: ranks that exec a new program: stopped at the exec, attached as their
    libraries load (held at ld.so's rendezvous), one verdict each for the new program."""
    res = run_gpuleak(["run", "--follow", "--interval", "0"] + STEP_OPTS +
                      ["--", scenario("ranks"), "exec", "4", "2", str(RANK_STEPS), "1M"])
    parent = [v for v in res.verdicts() if not v["allocs"]][0]["pid"]
    check_ranks(res, 4, 2, parent)
    check(re.search(r"tracing pid \d+ \(child of %d, after exec\)" % parent, res.err),
          f"said: {res.err}")


@test
def attach_follow_a_running_server():
    """attach -p PARENT --follow: a server already running when gpuleak comes, forking its
    ranks afterwards."""
    json_path = tmpfile(".ndjson")
    t = Proc([scenario("ranks"), "fork", "2", "0", str(RANK_STEPS), "1M"],
             env=env_for_targets({"SCENARIO_SYNC": "1"}))
    try:
        t.wait_line("ready")
        g = Proc([gl(), "attach", "-p", str(t.pid), "--follow", "--interval", "0", "--json",
                  json_path] + STEP_OPTS, env=gpuleak_env(), stdin=False)
        g.wait_line(r"tracing pid %d" % t.pid, stream="err")
        t.send()
        t.wait_line("^done")
        t.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
        check_sanitizers(g.text("err"))
    finally:
        t.kill()
    res = harness.Result(0, g.text("out"), g.text("err"), read_ndjson(json_path))
    os.unlink(json_path)
    check_ranks(res, 2, 0, t.pid)


@test
def pid_list_traces_each_process():
    """-p A,B (and -p C): a verdict per process with its own numbers, and the summary."""
    json_path = tmpfile(".ndjson")
    shapes = [(3, 1, 4096), (5, 5, 8192), (2, 0, 65536)]
    ts = [Proc([scenario("basic")] + [str(x) for x in s],
               env=env_for_targets({"SCENARIO_SYNC": "1"})) for s in shapes]
    try:
        for t in ts:
            t.wait_line("ready")
        g = Proc([gl(), "attach", "-p", f"{ts[0].pid},{ts[1].pid}", "-p", str(ts[2].pid),
                  "--interval", "0", "--json", json_path], env=gpuleak_env(), stdin=False)
        for t in ts:
            g.wait_line(r"tracing pid %d" % t.pid, stream="err")
        for t in ts:
            t.send()
            t.wait_line("^done")
            t.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
        check_sanitizers(g.text("err"))
    finally:
        for t in ts:
            t.kill()
    recs = read_ndjson(json_path)
    os.unlink(json_path)
    vs = {v["pid"]: v for v in recs if v.get("type") == "verdict"}
    eq(sorted(vs), sorted(t.pid for t in ts), "a verdict per pid")
    for t, (n, m, size) in zip(ts, shapes):
        v = vs[t.pid]
        eq((v["state"], v["exit_status"], v["ppid"]), ("exited", 0, 0), "exited")
        eq(leak_sites(v), {("cudaMalloc", "alloc_buffers"): ((n - m) * size, n - m)}
           if n > m else {}, f"pid {t.pid}: what basic {n} {m} {size} leaves")
        eq((v["allocs"], v["frees"]), (n, m), "calls")
    s = summaries(recs)
    eq(len(s), 1, "summary")
    eq(s[0]["live_bytes"], 2 * 4096 + 2 * 65536, "summed")
    eq(s[0]["skew"], [], "no skew: nothing grows")
    # A bad pid in a list attaches nothing.
    with open("/proc/sys/kernel/pid_max") as f:
        bad = int(f.read()) + 1
    p = run_plain([gl(), "attach", "-p", f"{os.getpid()},{bad}"])
    eq(p.returncode, 1, "exit code")
    eq(p.stderr.strip().splitlines(), [f"gpuleak: no such process: {bad}"], "one line")


# ---- containers ------------------------------------------------------------------------------

def container_root(scenario_name):
    """A root directory holding a scenario, the stand-in libraries it loads and the C library:
    copies, at other inodes than the files the host traces, as in a container image."""
    root = tempfile.mkdtemp(prefix="gpuleak-root-")
    for d in ("bin", "lib", "lib64", "lib/x86_64-linux-gnu", "proc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy(scenario(scenario_name), os.path.join(root, "bin"))
    for lib in ("libcudart.so.13", "libcuda.so.1"):
        shutil.copy(os.path.join(harness.LIB, lib), os.path.join(root, "lib"))
    shutil.copy("/lib/x86_64-linux-gnu/libc.so.6", os.path.join(root, "lib/x86_64-linux-gnu"))
    shutil.copy("/lib64/ld-linux-x86-64.so.2", os.path.join(root, "lib64"))
    return root


def need_unshare():
    if not shutil.which("unshare"):
        return "skip"
    return None


@test
def target_in_a_container():
    """A target in its own pid namespace (pid 1 there) and root directory, its libraries
    copies the host never mapped: attach by its host pid; probes go on its own files, the
    step marker is named by its path inside the container."""
    if need_unshare():
        return "skip"
    steps, size = 6, 65536
    root = container_root("loop")
    json_path = tmpfile(".ndjson")
    t = Proc(["unshare", "--pid", "--fork", "--mount-proc", f"--root={root}", "/bin/loop",
              str(steps), str(size)], env=env_for_targets({"SCENARIO_SYNC": "1"}))
    try:
        t.wait_line(r"^ready 1$")
        with open(f"/proc/{t.pid}/task/{t.pid}/children") as f:
            pid = int(f.read().split()[0])
        g = Proc([gl(), "attach", "-p", str(pid), "--interval", "0", "--json", json_path,
                  "--step", "sym:/bin/loop:decode_step"], env=gpuleak_env(), stdin=False)
        g.wait_line(r"tracing pid %d \(pid 1 in its namespace\)" % pid, stream="err")
        t.send()
        t.wait_line("^done")
        t.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
        check_sanitizers(g.text("err"))
    finally:
        t.kill()
        shutil.rmtree(root)
    v = one_verdict(read_ndjson(json_path))
    os.unlink(json_path)
    eq((v["pid"], v["ns_pid"]), (pid, 1), "host pid, and its pid in the container")
    # What loop leaves (test_capture.loop_expected) but the count of calls: attached to a
    # running process, the driver's first calls after the runtime dlopen()s it come before
    # the probes on it (run mode and --follow hold the process there; attach does not).
    eq((v["live_bytes"], v["live_count"]), (64 * MiB + steps * size, 1 + steps), "live")
    eq((v["allocs"], v["frees"], v["pending_bytes"]), (1 + 3 * steps, 2 * steps, 0), "calls")
    eq(leak_sites(v), {("cudaMalloc", "leaky_sampler"): (steps * size, steps)}, "leak sites")
    eq(retained_init(v), {"kv_cache_init": (64 * MiB, 1)}, "made before the first step")
    eq({l["module"] for l in v["leaks"] + v["retained"]}, {"loop"},
       "sites named from the container's files")
    eq((v["step_source"], v["steps"]), ("sym", steps + 1), "marker found inside its root")
    check(re.search(r"^pid %d \(loop, pid 1 in its namespace\): exited" % pid, g.text("out"),
                    re.M), f"text: {g.text('out')}")


@test
def gpuleak_in_its_own_pid_namespace():
    """gpuleak itself in a container with its own pid namespace (a sidecar): the kernel's pids
    are translated to the ones it sees, for probes and for followed children."""
    if need_unshare():
        return "skip"
    from test_capture import loop_expected
    steps, size = 6, 65536
    json_path = tmpfile(".ndjson")
    p = run_plain(["unshare", "--pid", "--fork", "--mount-proc", gl(), "run", "--interval", "0",
                   "--json", json_path, "--", scenario("loop"), str(steps), str(size)])
    check_sanitizers(p.stderr)
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    v = one_verdict(read_ndjson(json_path))
    check(v["pid"] < 10, f"a pid of its namespace: {v['pid']}")
    loop_expected(v, steps, size)
    p = run_plain(["unshare", "--pid", "--fork", "--mount-proc", gl(), "run", "--follow",
                   "--interval", "0", "--json", json_path] + STEP_OPTS +
                  ["--", scenario("ranks"), "fork", "3", "0", str(RANK_STEPS), "1M"])
    check_sanitizers(p.stderr)
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    res = harness.Result(0, p.stdout, p.stderr, read_ndjson(json_path))
    os.unlink(json_path)
    parent = [v for v in res.verdicts() if not v["allocs"]][0]["pid"]
    check(parent < 10, f"pids of its namespace: {parent}")
    check_ranks(res, 3, 0, parent)


# ---- privileges and the kernel ---------------------------------------------------------------

@test
def capabilities_short_of_bpf_perfmon_and_sys_admin():
    """Not root and short of CAP_BPF, CAP_PERFMON or CAP_SYS_ADMIN (uprobe_multi links need
    it: with only the first two the kernel refuses every attach): one actionable line."""
    for caps in ("+bpf", "+perfmon", "+bpf,+perfmon", "+bpf,+sys_admin"):
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            f"--inh-caps={caps}", f"--ambient-caps={caps}", gl(), "attach", "-p",
                            str(os.getpid())], capture_output=True, text=True, timeout=30)
        eq(p.returncode, 1, f"{caps}: exit code ({p.stderr})")
        eq(p.stderr.strip().splitlines(),
           ["gpuleak: loading BPF programs and attaching uprobes needs root, or CAP_BPF, "
            "CAP_PERFMON and CAP_SYS_ADMIN: run it with sudo"], f"{caps}: one line")


# ---- the fleet endpoint ----------------------------------------------------------------------

CONTRIB = os.path.join(ROOT, "contrib", "prometheus")
METRICS_OPTS = ["--step", "sync", "--warmup-steps", "1", "--min-growth-steps", "3",
                "--rule", "persistent site=kv_cache_init"]


def scrape(url):
    """The samples of one scrape, or None when gpuleak did not answer (every connection slot
    taken, say)."""
    p = run_plain(["curl", "-sS", "--max-time", "10", url])
    return parse_prometheus_text(p.stdout) if p.returncode == 0 else None


def wait_metrics(url, what, **want):
    """Scrapes until each metric named in want, summed over its samples, has that value: to
    wait until gpuleak has seen a count of work (the timeout only bounds a hang)."""
    last = {}

    def poll():
        got = scrape(url)
        if got is not None:
            last.update({name: total(got, name) for name in want})
            last["dropped"] = total(got, "gpuleak_dropped_total")
            if all(last[name] == v for name, v in want.items()):
                return got
        return None
    try:
        return harness.wait_for(what, poll)
    except harness.Fail as e:
        # What it had seen by then tells a hang from a loss from a miscount.
        raise harness.Fail(f"{e}; last scrape: {last}, wanted {want}") from None


def curl(url, accept=None):
    cmd = ["curl", "-sS", "--max-time", "10", "-D", "-", url]
    if accept:
        cmd[1:1] = ["-H", f"Accept: {accept}"]
    p = run_plain(cmd)
    eq(p.returncode, 0, f"curl {url}: {p.stderr}")
    head, _, body = p.stdout.replace("\r\n", "\n").partition("\n\n")
    return head, body


def parse_prometheus_text(body):
    """{(name, frozenset(labels)): value} of the 0.0.4 text format, by its own rules."""
    out = {}
    rx = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        m = rx.match(line)
        check(m, f"sample line: {line!r}")
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def total(samples, name, **want):
    """Sum of a metric's samples whose labels include want."""
    return sum(v for (n, labels), v in samples.items()
               if n == name and set(want.items()) <= {(k, v) for k, v in labels})


class Served:
    """A scenario held at "done", traced by gpuleak attach --metrics 127.0.0.1:0."""

    def __init__(self, name, args, extra=(), exe=None):
        self.json_path = tmpfile(".ndjson")
        self.target = Proc([exe or scenario(name)] + [str(a) for a in args],
                           env=env_for_targets({"SCENARIO_SYNC": "1"}))
        self.target.wait_line("ready")
        self.gl = Proc([gl(), "attach", "-p", str(self.target.pid), "--metrics", ":0",
                        "--interval", "0", "--json", self.json_path] + list(extra),
                       env=gpuleak_env(), stdin=False)
        self.url = self.gl.wait_line(r"serving metrics on (http://\S+)", stream="err").group(1)
        self.gl.wait_line(r"tracing pid %d" % self.target.pid, stream="err")

    def run_to_done(self, allocs=None, frees=None):
        """The target runs to "done"; with allocs and frees, until gpuleak has seen them all
        too (its metrics say so)."""
        self.target.send()
        self.target.wait_line("^done")
        if allocs is not None:
            wait_metrics(self.url, "gpuleak to have seen every call",
                         gpuleak_allocations_total=allocs, gpuleak_frees_total=frees)

    def finish(self):
        self.target.send()
        rc = self.gl.finish()
        check_sanitizers(self.gl.text("err"))
        eq(rc, 0, f"gpuleak exit code ({self.gl.text('err')})")
        recs = read_ndjson(self.json_path)
        os.unlink(self.json_path)
        return one_verdict(recs)

    def cleanup(self):
        self.target.kill()
        self.gl.kill()


@test
def metrics_endpoint_scraped_by_real_clients():
    """curl scrapes both formats; promtool lints the Prometheus text, Prometheus' Python
    client parses the OpenMetrics; the values are the verdict's."""
    steps, size = 12, 65536
    s = Served("loop", [steps, size], METRICS_OPTS)
    try:
        check(s.url.startswith("http://127.0.0.1:"), f"loopback unless told otherwise: {s.url}")
        s.run_to_done(allocs=1 + 3 * steps, frees=2 * steps)
        head, text = curl(s.url)
        check("Content-Type: text/plain; version=0.0.4" in head, f"0.0.4 by default: {head}")
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                              capture_output=True, timeout=30)
        eq(lint.returncode, 0, f"promtool check metrics: {lint.stdout}{lint.stderr}")
        head, om = curl(s.url, "application/openmetrics-text; version=1.0.0; charset=utf-8")
        check("Content-Type: application/openmetrics-text; version=1.0.0" in head, head)
        check(om.endswith("# EOF\n"), "OpenMetrics ends with # EOF")
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
        fams = {f.name: f for f in text_string_to_metric_families(om)}
        for name, typ in (("gpuleak_live_bytes", "gauge"), ("gpuleak_dropped", "counter"),
                          ("gpuleak_build", "info"), ("gpuleak_allocations", "counter")):
            eq(fams[name].type, typ, f"{name} type")
        om_samples = {(x.name, frozenset(x.labels.items())): x.value
                      for f in fams.values() for x in f.samples}
        samples = parse_prometheus_text(text)
        # (Records analysed grow between two scrapes: time passing is a record too.)
        moving = ("gpuleak_build", "gpuleak_records")
        eq({k: v for k, v in om_samples.items() if not k[0].startswith(moving)},
           {k: v for k, v in samples.items() if not k[0].startswith(moving)},
           "both formats carry the same samples")
        v = s.finish()
    finally:
        s.cleanup()
    pid = str(v["pid"])
    for metric, key in (("gpuleak_live_bytes", "live_bytes"),
                        ("gpuleak_live_allocations", "live_count"),
                        ("gpuleak_persistent_bytes", "persistent_bytes"),
                        ("gpuleak_pending_bytes", "pending_bytes"),
                        ("gpuleak_allocations_total", "allocs"),
                        ("gpuleak_frees_total", "frees"),
                        ("gpuleak_failed_calls_total", "failed_calls")):
        eq(total(samples, metric, pid=pid), v[key], f"{metric} = verdict {key}")
    eq(v["persistent_bytes"], 64 * MiB, "the KV cache is persistent by rule")
    eq(total(samples, "gpuleak_live_bytes", pid=pid, api="cudaMalloc", device="0"),
       64 * MiB + steps * size, "per API and device")
    growth = {g["site"].split("+")[0]: g for g in v["growth"]}
    eq(sorted(growth), ["leaky_sampler"], "the verdict's growth leak")
    eq(total(samples, "gpuleak_suspect_bytes", pid=pid), growth["leaky_sampler"]["bytes"],
       "suspect bytes: the growing site's live bytes")
    check(abs(total(samples, "gpuleak_growth_bytes_per_step", pid=pid) -
              growth["leaky_sampler"]["slope_bytes_per_step"]) < 0.01 * size,
          "growth per step as the verdict fits it")
    eq(total(samples, "gpuleak_findings", pid=pid, kind="growth_leaks"), len(v["growth"]),
       "growth leaks found")
    eq(total(samples, "gpuleak_findings", pid=pid, kind="leak_sites"), len(v["leaks"]),
       "leaking sites")
    for reason, n in v["losses"].items():
        if reason != "lost_alloc_bytes":
            eq(total(samples, "gpuleak_dropped_total", pid=pid, reason=reason), n,
               f"dropped {reason}")
    eq(total(samples, "gpuleak_approximate", pid=pid), 0, "exact")


@test
def metrics_label_values_are_escaped():
    """A target named with a backslash, a double quote and a newline (its comm, from the
    name it was exec'd by: a link to the loop scenario): in both formats the comm label has
    them escaped as the exposition formats say (\\\\, \\", \\n), promtool accepts the text
    and Prometheus' client reads the OpenMetrics label back as the comm itself."""
    comm = 'a\\b"c\nd'
    d = tempfile.mkdtemp(prefix="gpuleak-test-")
    link = os.path.join(d, comm)
    os.symlink(scenario("loop"), link)
    s = Served("loop", [2, 65536], ["--step", "sync"], exe=link)
    try:
        s.run_to_done(allocs=1 + 3 * 2, frees=2 * 2)
        pid = s.target.pid
        want = 'comm="a\\\\b\\"c\\nd"'
        _, text = curl(s.url)
        _, om = curl(s.url, "application/openmetrics-text; version=1.0.0; charset=utf-8")
        for fmt, body in (("0.0.4", text), ("OpenMetrics", om)):
            lines = [l for l in body.splitlines() if l.startswith("gpuleak_live_bytes{") and
                     f'pid="{pid}"' in l]
            check(lines and all(want in l for l in lines), f"{fmt}: {want} in {lines}")
            check(comm not in body, f"{fmt}: the raw comm is nowhere")
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                              capture_output=True, timeout=30)
        eq(lint.returncode, 0, f"promtool check metrics: {lint.stdout}{lint.stderr}")
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
        comms = {x.labels["comm"] for f in text_string_to_metric_families(om)
                 for x in f.samples if x.labels.get("pid") == str(pid)}
        eq(comms, {comm}, "the comm label read back")
        s.finish()
    finally:
        s.cleanup()
        shutil.rmtree(d)


@test
def metrics_never_hold_tracing_up():
    """Clients that connect and send nothing, or stop reading, fill every connection slot:
    tracing goes on, exact, a real client is answered once they are dropped (5 s), and a
    malformed or taken address is one line."""
    s = Served("flood", [2000, 4096, 4])
    idle = []
    try:
        for _ in range(12):
            c = socket.create_connection(("127.0.0.1", int(s.url.split(":")[2].split("/")[0])))
            idle.append(c)
        s.run_to_done()
        # Turned away while the idle ones hold every slot; answered, with every call
        # counted, once they are dropped.
        wait_metrics(s.url, "a real client answered once the idle ones are dropped",
                     gpuleak_allocations_total=2000 + 4, gpuleak_frees_total=2000)
        head, text = curl(s.url)
        check(head.startswith("HTTP/1.1 200"), head)
        v = s.finish()
    finally:
        for c in idle:
            c.close()
        s.cleanup()
    eq(v["calls"], 4 * 2000 + 2 * 4, "every call traced while the endpoint was busy")
    eq(leak_sites(v), {("cudaMalloc", "keep"): (4 * 4096, 4)}, "exact")
    p = run_plain([gl(), "run", "--metrics", "localhost", "--", "true"])
    # the command line's fault: a usage error before anything is loaded
    eq((p.returncode, p.stderr.strip().splitlines()[0]),
       (2, "gpuleak run: invalid --metrics 'localhost' (PORT, :PORT, ADDR:PORT or [IPv6]:PORT, "
           "a port of 0..65535)"), "malformed")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        p = run_plain([gl(), "run", "--metrics", f":{port}", "--", "true"])
    eq(p.returncode, 1, "exit code")
    eq(p.stderr.strip().splitlines(),
       [f"gpuleak: --metrics :{port}: cannot listen on 127.0.0.1 port {port}: Address already "
        "in use"], "port taken")


@test
def prometheus_files_check_and_their_alerts_fire():
    """The sample scrape configuration and rules load in promtool, and the rules' own unit
    tests (time series in, alerts out) pass."""
    if not shutil.which("promtool"):
        return "skip"
    for args in (["check", "config", "prometheus.yml"], ["check", "rules", "gpuleak.rules.yml"],
                 ["test", "rules", "gpuleak.rules.test.yml"]):
        p = subprocess.run(["promtool"] + args, cwd=CONTRIB, capture_output=True, text=True,
                           timeout=60)
        eq(p.returncode, 0, f"promtool {' '.join(args)}: {p.stdout}{p.stderr}")


@test
def prometheus_scrapes_gpuleak():
    """A real Prometheus server, with the sample rules, scrapes gpuleak: the target is up
    (it negotiated OpenMetrics and parsed it), and its stored values are the verdict's."""
    prom = shutil.which("prometheus")
    if not prom:
        return "skip"
    import json
    import urllib.parse
    import urllib.request
    steps, size = 12, 65536
    s = Served("loop", [steps, size], METRICS_OPTS)
    work = tempfile.mkdtemp(prefix="gpuleak-prom-")
    server = None
    try:
        s.run_to_done(allocs=1 + 3 * steps, frees=2 * steps)
        target = s.url.split("/")[2]
        shutil.copy(os.path.join(CONTRIB, "gpuleak.rules.yml"), work)
        with open(os.path.join(CONTRIB, "prometheus.yml")) as f:
            conf = f.read()
        # The sample, pointed at this gpuleak, scraped every second.
        conf = re.sub(r"(?s)      - targets:.*?\n        labels:", f"      - targets: ['{target}']"
                      "\n        labels:", conf)
        conf = conf.replace("scrape_interval: 15s", "scrape_interval: 1s").replace(
            "scrape_timeout: 10s", "scrape_timeout: 1s")
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write(conf)
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            port = sk.getsockname()[1]
        server = Proc([prom, f"--config.file={work}/prometheus.yml",
                       f"--storage.tsdb.path={work}/data",
                       f"--web.listen-address=127.0.0.1:{port}"], stdin=False)
        api = f"http://127.0.0.1:{port}/api/v1/"

        def query(q):
            with urllib.request.urlopen(api + "query?query=" + urllib.parse.quote(q),
                                        timeout=5) as r:
                return json.load(r)["data"]["result"]

        deadline, got = time.time() + 30, []
        while time.time() < deadline:
            try:
                got = query('sum by (pid) (gpuleak_live_bytes{job="gpuleak"})')
                if got:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        check(got, f"Prometheus stored gpuleak's samples; its log: {server.text('err')[-2000:]}")
        with urllib.request.urlopen(api + "targets", timeout=5) as r:
            tg = json.load(r)["data"]["activeTargets"]
        eq([(t["health"], t["lastError"]) for t in tg], [("up", "")], "scrape health")
        persistent = query('sum(gpuleak_persistent_bytes{job="gpuleak"})')
        findings = query('gpuleak_findings{kind="growth_leaks"}')
        v = s.finish()
    finally:
        if server:
            server.kill(signal.SIGTERM)
            server.finish()
        s.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    eq([(r["metric"]["pid"], float(r["value"][1])) for r in got],
       [(str(v["pid"]), float(v["live_bytes"]))], "live bytes stored by Prometheus")
    eq(float(persistent[0]["value"][1]), float(v["persistent_bytes"]), "persistent bytes")
    eq(float(findings[0]["value"][1]), float(len(v["growth"])), "growth leaks")


@test
def recorded_ranks_give_the_live_verdicts_and_summary():
    """record --follow: the capture holds every rank (their command lines, maps, records);
    gpuleak report gives each rank's verdict and the summary as they were live."""
    from test_capture import record
    r = record(["--follow"] + STEP_OPTS + ["--", scenario("ranks"), "exec", "3", "1",
                                           str(RANK_STEPS), "1M"])
    try:
        live = {v["pid"]: v for v in r.records if v.get("type") == "verdict"}
        eq(len(live), 4, "the parent and three ranks")
        rep = report(r.path, STEP_OPTS)
        off = {v["pid"]: v for v in rep.records if v.get("type") == "verdict"}
        eq(sorted(off), sorted(live), "the same processes offline")
        for pid in live:
            same_verdict(live[pid], off[pid])
        eq(summaries(rep.records), summaries(r.records), "the same summary")
        check(re.search(r"^rank skew: pid \d+ \(ranks\) grows", rep.out, re.M), rep.out)
    finally:
        r.cleanup()
