# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gpuleak watch: a recorder that stays attached and writes a capture only when something
happens. Each test provokes one trigger in a real traced process (the stand-in runtime runs
its device out of memory as the real one does when full, the kernel's OOM killer in a memory
cgroup, a fault, a threshold, SIGUSR1) and checks the capture with `gpuleak report`: the
trigger on its first line, the live set at the trigger with exact bytes by site, the failing
call and its stack, the steps before it; and the bounds (ring, disk) with exact numbers."""
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import time

import harness
from test_files import fill, tmpfs
from harness import (Proc, check, check_sanitizers, env_for_targets, eq, gpuleak_env, leak_sites,
                     read_ndjson, run_plain, scenario, test, tmpfile)

MiB = 1 << 20
KiB = 1 << 10
KV = 16 * MiB   # oomloop's KV cache
LEAK = 64 * KiB  # what oomloop leaks per step in these tests
ACT = 32 * KiB   # its two activations of a step, together
STEP = ["--step", "sym:oomloop:decode_step"]


def gl():
    return harness.GPULEAK


def capacity(k):
    """A stand-in device on which oomloop's leak of step k is the first call to fail."""
    return str(KV + k * LEAK + ACT)


class Watch:
    """gpuleak watch -o DIR [args] on a scenario: with -- CMD (run mode) or, for pids=True, on
    a scenario started with the sync handshake and attached to with -p."""

    def __init__(self, args, cmd, env=None, attach=False, json_path=None, binary=None):
        self.dir = tempfile.mkdtemp(prefix="gpuleak-watch-")
        self.json = json_path or tmpfile(".ndjson")
        self.target = None
        base = [binary or gl(), "watch", "-o", self.dir, "--json", self.json] + list(args)
        if attach:
            self.target = Proc(cmd, env=env_for_targets(dict(SCENARIO_SYNC="1", **(env or {}))))
            m = self.target.wait_line(r"ready (\d+)")
            eq(int(m.group(1)), self.target.pid, "scenario pid")
            self.gl = Proc(base + ["-p", str(self.target.pid)], env=gpuleak_env(), stdin=False)
            self.gl.wait_line(r"gpuleak: watching:", stream="err")
            self.target.send()
        else:
            genv = gpuleak_env()
            genv.update(env or {})
            self.gl = Proc(base + ["--"] + cmd, env=genv, stdin=False)

    def wait_err(self, pattern, timeout=harness.TIMEOUT):
        return self.gl.wait_line(pattern, stream="err", timeout=timeout)

    def finish(self, expect_rc=0):
        if self.target:
            self.target.finish()
        rc = self.gl.finish()
        self.err = self.gl.text("err")
        check_sanitizers(self.err)
        eq(rc, expect_rc, f"gpuleak watch exit code (stderr: {self.err})")
        self.records = read_ndjson(self.json)
        return self

    def captures(self, cause=None):
        names = sorted(os.listdir(self.dir))
        for n in names:
            check(re.fullmatch(r"gpuleak-\d{8}T\d{6}\.\d{3}Z-\d+-[a-z-]+(-\d+)?\.glc", n),
                  f"capture named by time, pid and cause: {n}")
        return [os.path.join(self.dir, n) for n in names
                if cause is None or n.endswith(f"-{cause}.glc")]

    def cleanup(self):
        if self.target:
            self.target.kill()
        self.gl.kill(signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)
        if os.path.exists(self.json):
            os.unlink(self.json)


class Report:
    def __init__(self, path, extra=(), expect_rc=0):
        js = tmpfile(".ndjson")
        p = run_plain([gl(), "report", path, "--json", js] + list(extra))
        check_sanitizers(p.stderr)
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        self.records = read_ndjson(js)
        if os.path.exists(js):
            os.unlink(js)
        eq(p.returncode, expect_rc, f"report exit code (stderr: {p.stderr})")
        self.first = self.out.splitlines()[0] if self.out else ""

    def verdicts(self):
        return [r for r in self.records if r.get("type") == "verdict"]

    def verdict(self, pid=None):
        vs = [v for v in self.verdicts() if pid is None or v["pid"] == pid]
        eq(len(vs), 1, f"verdicts of pid {pid}")
        return vs[0]

    def trigger(self):
        t = self.verdicts()[0]["capture"]["trigger"]
        for v in self.verdicts():
            eq(v["capture"]["trigger"], t, "every verdict names the same trigger")
        return t


def blocks(path):
    """[(type, raw, count)] from `gpuleak report --blocks`."""
    p = run_plain([gl(), "report", "--blocks", path])
    eq(p.returncode, 0, f"report --blocks ({p.stderr})")
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^\s*\d+\s+([A-Z]+)\s+\w+\s+(\d+)\s+\d+\s+(\d+)$", p.stdout, re.M)]


def window_raw_bytes(path, snapshot_records):
    """Encoded bytes of the window's RECORDS blocks: those after the snapshot's records."""
    seen = raw = 0
    for kind, size, count in blocks(path):
        if kind != "RECORDS":
            continue
        if seen >= snapshot_records:
            raw += size
        seen += count
    return raw


def wait_nth(proc, pattern, n, timeout=harness.TIMEOUT):
    """The n-th (1-based) line of proc's stderr matching pattern, once there is one."""
    rx = re.compile(pattern)

    def poll():
        proc._pump(0.05)
        got = [m for m in map(rx.search, proc.lines["err"]) if m]
        return got[n - 1] if len(got) >= n else None
    return harness.wait_for(f"{n} x /{pattern}/", poll, timeout)


def step_records(rep, pid):
    return [r for r in rep.records if r.get("type") == "step" and r["pid"] == pid]


@test
def watch_oom_capture_holds_the_leak_and_the_failing_call():
    """A decode loop leaking 64 KiB a step on a device of 16 MiB + 3000 leaks + its working
    set: cudaMalloc returns cudaErrorMemoryAllocation at step 3000, and the capture says so on
    its first line, holds the leak's 3000 x 64 KiB at its site, the failing call with its
    stack and the driver call under it that ran out, and the steps before it, growing by
    exactly 64 KiB; the ring (64 KiB) held only the last steps, the rest came as a snapshot,
    checked exact, and the report ends with the live analysis's bytes."""
    k = 3000
    w = Watch(["--ring", "64KiB"] + STEP, [scenario("oomloop"), "loop", "64K", "20"],
              env={"GPULEAK_STANDIN_DEVICE_MEM": capacity(k)})
    try:
        w.wait_err(r"gpuleak: oom: pid (\d+) \(oomloop\): cudaMalloc of 64\.0 KiB returned "
                   r"cudaErrorMemoryAllocation \(2\) at leaky_sampler\+0x[0-9a-f]+ \(oomloop\); "
                   r"in it cuMemAlloc_v2 of 64\.0 KiB returned CUDA_ERROR_OUT_OF_MEMORY \(2\) "
                   r"at .*, step 3000: wrote (\S+)")
        w.finish(expect_rc=4)  # the job failed: as run
        check("oom at step 3000: 2" in w.gl.text("out"), f"the scenario's own word: {w.gl.text('out')[-300:]}")
        caps = w.captures()
        eq(len(caps), 1, f"one capture: {caps}")
        check(caps[0].endswith("-oom.glc"), caps[0])
        eq(stat.S_IMODE(os.stat(caps[0]).st_mode), 0o600, "capture mode")
        live = [v for v in w.records if v.get("type") == "verdict"]
        eq(len(live), 1, "one live verdict at the end")
        pid = live[0]["pid"]
        events = [r for r in w.records if r.get("type") == "capture"]
        eq([(e["cause"], e["pid"], e["path"], e["written"], e["bytes"]) for e in events],
           [("oom", pid, caps[0], True, os.path.getsize(caps[0]))], "--json: the capture")
        check(f"-{pid}-oom.glc" in caps[0], f"named by the pid: {caps[0]}")
        rep = Report(caps[0], STEP)
        check(re.match(r"trigger: oom at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC: pid %d "
                       r"\(oomloop\): cudaMalloc of 64\.0 KiB returned cudaErrorMemoryAllocation"
                       % pid, rep.first), f"first line: {rep.first}")
        check(re.search(r"^  the failing call's stack, innermost first:\n"
                        r"    leaky_sampler\+0x[0-9a-f]+ \(oomloop\)\n    run_loop\+", rep.out,
                        re.M), f"the failing call's stack: {rep.out[:1500]}")
        v = rep.verdict()
        eq(leak_sites(v), {("cudaMalloc", "leaky_sampler"): (k * LEAK, k)}, "the leak, exactly")
        eq([(x["site"].split("+")[0], x["bytes"], x["retained_by"]) for x in v["retained"]],
           [("kv_cache_init", KV, "init")], "the KV cache, made before the first step")
        eq(v["live_bytes"], KV + k * LEAK, "live bytes at the trigger")
        eq(v["live_bytes"], live[0]["live_bytes"], "the live analysis's")
        eq((v["state"], v["failed_calls"]), ("running", 1), "running, one failed call")
        t = rep.trigger()
        eq((t["cause"], t["pid"]), ("oom", pid), "trigger")
        eq((t["call"]["api"], t["call"]["error"], t["call"]["ret"], t["call"]["size"]),
           ("cudaMalloc", "cudaErrorMemoryAllocation", 2, LEAK), "the failing call")
        check(t["call"]["site"].startswith("leaky_sampler+"), t["call"])
        eq([f.split("+")[0] for f in t["call"]["stack"][:3]],
           ["leaky_sampler", "run_loop", "main"], "its stack")
        eq(t["inner"], {"api": "cuMemAlloc_v2", "ret": 2}, "the call under it that ran out")
        eq(t["snapshot_exact"], True, "snapshot checked exact")
        check(t["snapshot_records"] > 0, "the ring could not hold the session: a snapshot")
        check(window_raw_bytes(caps[0], t["snapshot_records"]) <= 64 * KiB,
              "the window is what the ring held, at most --ring")
        # the steps before it: the window's, numbered as live, each growing by the leak
        steps = step_records(rep, pid)
        check(len(steps) >= 10, f"steps in the window: {len(steps)}")
        eq(steps[-1]["step"], k, "the window ends in the step whose leak failed")
        eq({s["allocated_bytes"] - s["freed_bytes"] for s in steps[1:-1]}, {LEAK},
           "each whole step before it keeps one leak")
        eq(steps[-1]["allocated_bytes"] - steps[-1]["freed_bytes"], 0, "the failing one keeps nothing")
        eq([g["site"].split("+")[0] for g in v["growth"]], ["leaky_sampler"], "growth")
        g = v["growth"][0]
        check(abs(g["slope_bytes_per_step"] - LEAK) < 0.001 * LEAK,
              f"growth in the window: 64 KiB a step, got {g['slope_bytes_per_step']}")
        check(g["first_step"] >= steps[0]["step"] - 1, f"judged in the window: {g}")
        eq(v["steps"], len(steps), "the window's steps")
        check("checked exact" in rep.out.splitlines()[1], rep.out.splitlines()[1])
        check("live analysis had" not in rep.err, f"no mismatch said: {rep.err}")
    finally:
        w.cleanup()


@test
def watch_sigusr1_captures_on_demand():
    """SIGUSR1 to gpuleak writes a capture of the whole (small) session at once; a second one
    within --cooldown is said once and not written."""
    w = Watch([], [scenario("loop"), "50", "1M"], attach=True)
    try:
        w.target.wait_line(r"^done")
        os.kill(w.gl.pid, signal.SIGUSR1)
        m = w.wait_err(r"gpuleak: signal: SIGUSR1 to gpuleak \(pid %d\): on demand: wrote (\S+)"
                       % w.gl.pid)
        os.kill(w.gl.pid, signal.SIGUSR1)
        w.wait_err(r"gpuleak: signal again .*: within --cooldown of the last signal capture, "
                   r"not written")
        w.target.send()
        w.finish()
        caps = w.captures()
        eq(caps, [m.group(1)], "one capture")
        check(caps[0].endswith(f"-{w.target.pid}-signal.glc"), caps[0])
        rep = Report(caps[0])
        check(rep.first.startswith("trigger: signal at ") and "on demand" in rep.first,
              rep.first)
        v = rep.verdict(w.target.pid)
        eq(leak_sites(v), {("cudaMalloc", "kv_cache_init"): (64 * MiB, 1),
                           ("cudaMalloc", "leaky_sampler"): (50 * MiB, 50)}, "live at the signal")
        t = rep.trigger()
        eq((t["snapshot_records"], "call" in t), (0, False), "the whole session, no call")
        check("1 capture written" in w.err and "1 trigger within the cooldown" in w.err, w.err)
    finally:
        w.cleanup()


@test
def watch_live_above_threshold():
    """--live-above 16 MiB + 100 x 64 KiB fires at the allocation that reaches it (the leak of
    step 99, whose activations stay below it), once; the OOM at step 400 writes its own."""
    bound = KV + 100 * LEAK
    w = Watch(["--live-above", str(bound), "--on", "oom"] + STEP,
              [scenario("oomloop"), "loop", "64K", "20"],
              env={"GPULEAK_STANDIN_DEVICE_MEM": capacity(400)})
    try:
        w.wait_err(r"gpuleak: oom: .*step 400: wrote")
        w.finish(expect_rc=4)  # the job failed: as run
        eq(len(w.captures()), 2, f"two captures: {w.captures()}")
        cap = w.captures("live-above")
        eq(len(cap), 1, "one live-above capture")
        rep = Report(cap[0], STEP)
        check(re.match(r"trigger: live-above at .*: pid \d+ \(oomloop\): 22\.2 MiB live "
                       r"\(--live-above 22\.2 MiB\) after cudaMalloc of 64\.0 KiB at "
                       r"leaky_sampler\+0x[0-9a-f]+ \(oomloop\), step 99$", rep.first), rep.first)
        v = rep.verdict()
        eq(v["live_bytes"], bound, "live bytes at the trigger: the bound, exactly")
        eq(leak_sites(v), {("cudaMalloc", "leaky_sampler"): (100 * LEAK, 100)}, "the leak")
        eq(rep.trigger()["call"]["api"], "cudaMalloc", "the allocation that crossed it")
        oom = Report(w.captures("oom")[0], STEP).verdict()
        eq(oom["live_bytes"], KV + 400 * LEAK, "the OOM's")
    finally:
        w.cleanup()


@test
def watch_live_above_per_exec_image():
    """A process that exec()s its own program (reexec, under `setarch -R`: the images share
    their call site's address): --live-above 1 MiB is armed anew for each image, whose live
    bytes are its own (3, 2, then 1 MiB), so each writes one capture, of that image alone."""
    w = Watch(["--live-above", "1M", "--cooldown", "0"],
              ["setarch", "-R", scenario("reexec"), "3", "1M"])
    try:
        w.finish()
        caps = w.captures("live-above")
        eq(len(caps), 3, f"one capture per image: {caps}")
        for gen, cap in zip((3, 2, 1), caps):
            rep = Report(cap)
            check(re.match(rf"trigger: live-above at .*: pid \d+ \(reexec\): {gen}\.00 MiB live "
                           r"\(--live-above 1\.00 MiB\) after cudaMalloc of", rep.first), rep.first)
            v = rep.verdicts()[-1]
            eq((v["comm"], v["live_bytes"], leak_sites(v)),
               ("reexec", gen * MiB, {("cudaMalloc", "hold_gen"): (gen * MiB, 1)}),
               f"image {gen}: its own allocation at the trigger")
    finally:
        w.cleanup()


@test
def watch_oom_soon():
    """--oom-within 1h on a device of --device-mem: once the leak's growth is established the
    time to OOM is known (judged every second: the loop runs 2000 steps of 2 ms, several
    seconds), and a capture says which device runs out, with the live bytes it had; the OOM
    writes its own later."""
    k = 2000
    w = Watch(["--oom-within", "1h", "--device-mem", capacity(k), "--on", "oom"] + STEP,
              [scenario("oomloop"), "loop", "64K", "2000"],
              env={"GPULEAK_STANDIN_DEVICE_MEM": capacity(k)})
    try:
        w.wait_err(r"gpuleak: oom: .*step 2000: wrote")
        w.finish(expect_rc=4)  # the job failed: as run
        soon = w.captures("oom-soon")
        eq(len(soon), 1, f"one oom-soon capture: {w.captures()}")
        rep = Report(soon[0], STEP)
        m = re.match(r"trigger: oom-soon at .*: pid \d+ \(oomloop\): device 0 runs out in "
                     r"~[\d.]+ s \(~(\d+) steps; --oom-within 3600 s\): .* used, growing "
                     r"64\.0 KiB/step, step (\d+)$", rep.first)
        check(m, rep.first)
        v = rep.verdict()
        n = leak_sites(v)[("cudaMalloc", "leaky_sampler")][1]
        eq(v["live_bytes"], KV + n * LEAK, "its live bytes: the KV cache and the leaks so far")
        check(n < k and int(m.group(1)) > 0, f"before the OOM: {n} leaks, {m.group(1)} steps")
        eq(len(w.captures("oom")), 1, "and the OOM's own")
    finally:
        w.cleanup()


@test
def watch_rank_of_three_second_fails():
    """Three ranks (fork + exec, --follow); the second leaks until its device is full. The
    capture of its OOM holds all three ranks as they were: the failing one with its leak, the
    other two running with their KV cache alone."""
    k = 300
    w = Watch(["--follow", "--ring", "128KiB"] + STEP,
              [scenario("oomloop"), "ranks", "3", "1", "64K", "200"],
              env={"GPULEAK_STANDIN_DEVICE_MEM": capacity(k)})
    try:
        m = w.wait_err(r"gpuleak: oom: pid (\d+) \(oomloop\): cudaMalloc .*step 300: wrote (\S+)")
        w.finish()
        failing = int(m.group(1))
        caps = w.captures()
        eq(caps, [m.group(2)], "one capture, of the failing rank's OOM")
        check(caps[0].endswith(f"-{failing}-oom.glc"), caps[0])
        rep = Report(caps[0], STEP)
        vs = rep.verdicts()
        parent = [v for v in vs if not v["ppid"]]
        eq([(v["live_bytes"], v["allocs"]) for v in parent], [(0, 0)],
           "the parent (traced from its start, no GPU calls)")
        vs = [v for v in vs if v["ppid"]]
        eq(len(vs), 3, f"all three ranks: {[(v['pid'], v['comm']) for v in vs]}")
        eq({v["ppid"] for v in vs}, {parent[0]["pid"]}, "ranks of the parent")
        by = {v["pid"]: v for v in vs}
        eq(leak_sites(by[failing]), {("cudaMalloc", "leaky_sampler"): (k * LEAK, k)},
           "the failing rank's leak")
        for pid, v in by.items():
            if pid == failing:
                continue
            # A rank may be cut in the middle of its decode step: what that step holds then
            # (up to its two 16 KiB activations, freed before the step ends) is live too.
            in_step = [(x["site"].split("+")[0], x["bytes"]) for x in v["leaks"]]
            check(v["state"] == "running" and all(site == "decode_step" and b <= 32 * KiB
                                                  for site, b in in_step),
                  f"rank {pid}: running, its KV cache and at most one step's activations: "
                  f"{v['state']}, {in_step}")
            eq(v["live_bytes"], KV + sum(b for _, b in in_step),
               f"rank {pid}: its KV cache and what its step holds")
            eq([x["site"].split("+")[0] for x in v["retained"]], ["kv_cache_init"],
               f"rank {pid}: retained")
        summary = [r for r in rep.records if r.get("type") == "summary"]
        eq(len(summary), 1, "a summary across the processes")
        eq(summary[0]["processes"], 4, "of the parent and its three ranks")
    finally:
        w.cleanup()


@test
def watch_fault_after_the_oom():
    """The framework aborts on its OOM (SIGABRT): one capture of the OOM, one of the fault,
    whose process has exited with status 134."""
    w = Watch(STEP, [scenario("oomloop"), "loop", "64K", "20"],
              env={"GPULEAK_STANDIN_DEVICE_MEM": capacity(50), "SCENARIO_OOM": "abort"})
    try:
        w.wait_err(r"gpuleak: fault: pid \d+ \(oomloop\): died of SIGABRT.*: wrote")
        w.finish(expect_rc=4)  # the job failed: as run
        eq([c.rsplit("-", 1)[1] for c in w.captures()], ["oom.glc", "fault.glc"],
           f"captures: {w.captures()}")
        rep = Report(w.captures("fault")[0], STEP)
        check(re.match(r"trigger: fault at .*: pid \d+ \(oomloop\): died of SIGABRT", rep.first),
              rep.first)
        v = rep.verdict()
        eq((v["state"], v["exit_status"]), ("exited", 134), "died of SIGABRT")
        eq(v["live_bytes"], KV + 50 * LEAK, "its memory as it died")
    finally:
        w.cleanup()


@contextlib.contextmanager
def memory_cgroup(limit):
    """A memory cgroup of limit bytes (v1's memory controller, or v2's where it is enabled),
    as (its directory, the file a pid is written to), or None where none can be made."""
    v1 = "/sys/fs/cgroup/memory"
    v2 = "/sys/fs/cgroup"
    base = knob = None
    if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
        base, knob = v1, "memory.limit_in_bytes"
    else:
        try:
            with open(os.path.join(v2, "cgroup.subtree_control")) as f:
                if "memory" in f.read().split():
                    base, knob = v2, "memory.max"
        except OSError:
            pass
    path = None
    if base:
        try:
            path = tempfile.mkdtemp(prefix="gpuleak-test-", dir=base)
            with open(os.path.join(path, knob), "w") as f:
                f.write(str(limit))
        except OSError:
            if path:
                os.rmdir(path)
            path = None
    try:
        yield (path, "cgroup.procs") if path else None
    finally:
        # its processes are gone (the OOM killer's, or killed by the test): then it goes
        for _ in range(100):
            if not path:
                break
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.05)


@test
def watch_oom_killer():
    """The kernel's OOM killer (a 48 MiB memory cgroup; the leak's pages are written) chooses
    the traced process: the capture is of its state just before the kill (tp_btf/mark_victim,
    no tracefs needed), and its exit follows with status 137."""
    with memory_cgroup(48 * MiB) as cg:
        if not cg:
            return "skip"
        path, procs = cg
        env = {"SCENARIO_SYNC": "1", "SCENARIO_TOUCH": "1", "GPULEAK_STANDIN_DEVICE_MEM": "4G"}
        target = Proc([scenario("oomloop"), "loop", "1M", "2000"], env=env_for_targets(env))
        d = tempfile.mkdtemp(prefix="gpuleak-watch-")
        js = tmpfile(".ndjson")
        g = None
        try:
            target.wait_line(r"ready (\d+)")
            with open(os.path.join(path, procs), "w") as f:
                f.write(str(target.pid))
            g = Proc([gl(), "watch", "-o", d, "--json", js, "-p", str(target.pid)] + STEP,
                     env=gpuleak_env(), stdin=False)
            g.wait_line(r"gpuleak: watching: .* on oom,oom-kill,fault,signal", stream="err")
            target.send()
            eq(target.finish(), -signal.SIGKILL, "the OOM killer's SIGKILL")
            eq(g.finish(), 0, f"gpuleak exit code: {g.text('err')}")
            check_sanitizers(g.text("err"))
            caps = sorted(glob.glob(os.path.join(d, "*.glc")))
            eq([c.rsplit("-", 2)[1:] for c in caps], [["oom", "kill.glc"]], f"captures: {caps}")
            rep = Report(caps[0], STEP)
            check(re.match(r"trigger: oom-kill at .*: pid %d \(oomloop\): chosen by the kernel's "
                           r"OOM killer" % target.pid, rep.first), rep.first)
            v = rep.verdict()
            n = leak_sites(v)[("cudaMalloc", "leaky_sampler")][1]
            check(0 < n <= 48, f"leaks before the kill: {n}")
            eq(v["live_bytes"], KV + n * MiB, "its live bytes, as many leaks as it made")
            eq(v["state"], "running", "captured before it died")
            live = [r for r in read_ndjson(js) if r.get("type") == "verdict"]
            eq((live[0]["state"], live[0]["exit_status"]), ("exited", 137), "then killed")
        finally:
            target.kill()
            if g:
                g.kill()
            shutil.rmtree(d, ignore_errors=True)
            if os.path.exists(js):
                os.unlink(js)


@test
def watch_webgpu_error_object():
    """Dawn returns error objects for invalid creations (out of memory looks the same to a
    probe): the first writes a capture, the three after it fall in the cooldown."""
    w = Watch(["--on", "oom"], [scenario("wgpu"), "errors", "4096"])
    try:
        w.wait_err(r"gpuleak: wgpu-error: pid \d+ \(wgpu\): wgpuDeviceCreateBuffer returned an "
                   r"error object \(out of memory, or a validation error\) at .*: wrote")
        w.finish()
        caps = w.captures("wgpu-error")
        eq(len(w.captures()), 1, f"one capture: {w.captures()}")
        rep = Report(caps[0])
        check(rep.first.startswith("trigger: wgpu-error at "), rep.first)
        eq(rep.trigger()["call"]["api"], "wgpuDeviceCreateBuffer", "the creation")
        check("3 triggers within the cooldown" in w.err, w.err)
    finally:
        w.cleanup()


@test
def watch_nccl_call_failing_on_it():
    """A decode loop leaking 1 MiB a step by cudaMalloc, with a communicator (6 MiB of the
    driver's and VMM's, 64 KiB pinned) and a 2 MiB ncclMemAlloc a step: on a device of
    6 MiB + (K + 2) MiB + 512 KiB, ncclMemAlloc is the call that fails at step K, with
    ncclUnhandledCudaError, its cuMemCreate inside it with CUDA_ERROR_OUT_OF_MEMORY. The
    capture names the NCCL call, its stack and the driver call under it, and holds the
    leak's K + 1 MiB and the communicator, once, with the 6 MiB and 64 KiB it owns, though
    it was made long before the window (from the snapshot, checked exact)."""
    k = 600
    comm = 6 * MiB + 64 * KiB
    step = ["--step", "sym:nccl_comm:nccl_step"]
    w = Watch(["--ring", "64KiB"] + step, [scenario("nccl_comm"), "oom"],
              env={"GPULEAK_STANDIN_DEVICE_MEM": str((6 + k + 2) * MiB + 512 * KiB)})
    try:
        w.wait_err(r"gpuleak: oom: pid \d+ \(nccl_comm\): ncclMemAlloc of 2\.00 MiB returned "
                   r"ncclUnhandledCudaError \(1\) at nccl_scratch\+0x[0-9a-f]+ \(nccl_comm\); "
                   r"in it cuMemCreate of 2\.00 MiB returned CUDA_ERROR_OUT_OF_MEMORY \(2\) "
                   r"at .*, step %d: wrote" % k)
        w.finish(expect_rc=4)
        check(f"nccl oom at step {k}: 1" in w.gl.text("out"), w.gl.text("out")[-300:])
        caps = w.captures()
        eq([c.rsplit("-", 1)[1] for c in caps], ["oom.glc"], f"one capture: {caps}")
        rep = Report(caps[0], step)
        check(rep.first.startswith("trigger: oom at ") and "ncclMemAlloc of 2.00 MiB" in rep.first,
              rep.first)
        t = rep.trigger()
        eq((t["call"]["api"], t["call"]["ret"], t["call"]["error"], t["call"]["size"]),
           ("ncclMemAlloc", 1, "ncclUnhandledCudaError", 2 * MiB), "the failing NCCL call")
        eq([f.split("+")[0] for f in t["call"]["stack"][:3]], ["nccl_scratch", "nccl_step", "main"],
           "its stack")
        eq(t["inner"], {"api": "cuMemCreate", "ret": 2}, "the driver call under it that ran out")
        check(t["snapshot_records"] > 0, "the communicator was made before the window")
        eq(t["snapshot_exact"], True, "the snapshot checked exact, though the window may start "
           "inside an ncclMemFree, with its layers not yet released")
        v = rep.verdict()
        eq(leak_sites(v), {("cudaMalloc", "alloc_buffer"): ((k + 1) * MiB, k + 1)},
           "the leak, exactly")
        eq([(c["api"], c["state"], c["site"].split("+")[0], c["live_bytes"], c["live_count"])
            for c in v["communicators"]],
           [("ncclCommInitRank", "live", "nccl_init", comm, 6)], "the communicator, once")
        eq(v["live_bytes"], (k + 1) * MiB + comm, "live at the trigger")
        eq([(f["api"], f["error_name"], f["count"]) for f in v["failures"]],
           [("ncclMemAlloc", "ncclUnhandledCudaError", 1)], "the failed call")
        eq(step_records(rep, v["pid"])[-1]["step"], k, "the window ends in the failing step")
        check("live analysis had" not in rep.err, f"no mismatch said: {rep.err}")
    finally:
        w.cleanup()


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


@test
def watch_ring_bounds_under_a_flood():
    """200 000 allocate/free pairs through a 256 KiB ring: the recorder never holds more than
    256 KiB of records (its own count, and the window's blocks in the capture), gpuleak's
    resident memory grows by less than the ring, the BPF ring buffer's pages (8 MiB, mapped
    twice) and 4 MiB (the plain build: ASan's quarantine would be what grows), and the
    capture ends with the live analysis's bytes."""
    ring, ringbuf = 256 * KiB, 8 * MiB
    w = Watch(["--ring", "256KiB"], [scenario("flood"), "200000", "4096", "8"], attach=True,
              binary=os.path.join(harness.ROOT, "gpuleak"))
    try:
        rss0 = vm_rss_kib(w.gl.pid)
        w.target.wait_line(r"^done")
        os.kill(w.gl.pid, signal.SIGUSR1)
        w.wait_err(r"gpuleak: signal: .*: wrote")
        rss1 = vm_rss_kib(w.gl.pid)
        w.target.send()
        w.finish()
        m = re.search(r"the ring held at most ([\d.]+) KiB of records", w.err)
        check(m and float(m.group(1)) * KiB <= ring, f"ring bound: {w.err[-400:]}")
        cap = w.captures()[0]
        rep = Report(cap)
        t = rep.trigger()
        check(t["snapshot_records"] > 0, "the flood overran the ring: a snapshot")
        raw = window_raw_bytes(cap, t["snapshot_records"])
        check(0 < raw <= ring, f"window bytes on disk before zlib: {raw}")
        check(os.path.getsize(cap) <= ring + 64 * KiB,
              f"capture size {os.path.getsize(cap)}: the window and a small snapshot")
        v = rep.verdict(w.target.pid)
        live = [x for x in w.records if x.get("type") == "verdict"][0]
        if not live["approximate"]:
            eq(leak_sites(v), {("cudaMalloc", "keep"): (8 * 4096, 8)}, "kept")
        eq(v["live_bytes"], live["live_bytes"], "the report ends with the live bytes")
        check((rss1 - rss0) * KiB < ring + 2 * ringbuf + 4 * MiB,
              f"gpuleak's RSS grew by {rss1 - rss0} KiB over the flood")
    finally:
        w.cleanup()


@test
def watch_disk_full_says_so_and_goes_on():
    """A capture that does not fit on the disk is said in one line, nothing of it is left,
    and watching goes on: the next one, once there is room, is written; exit status 1."""
    with tmpfs("256k") as mnt:
        if not mnt:
            return "skip"
        d = os.path.join(mnt, "caps")
        os.mkdir(d)
        filler = fill(mnt)
        target = Proc([scenario("loop"), "30", "1M"], env=env_for_targets({"SCENARIO_SYNC": "1"}))
        js = tmpfile(".ndjson")
        g = None
        try:
            target.wait_line(r"ready (\d+)")
            g = Proc([gl(), "watch", "-o", d, "--cooldown", "0", "--json", js, "-p",
                      str(target.pid)], env=gpuleak_env(), stdin=False)
            g.wait_line(r"gpuleak: watching:", stream="err")
            target.send()
            target.wait_line(r"^done")
            os.kill(g.pid, signal.SIGUSR1)
            g.wait_line(r"gpuleak: signal \(.*\): capture not written: %s/gpuleak-\S+-signal\.glc: "
                        r"No space left on device; watching goes on" % re.escape(d), stream="err")
            eq(os.listdir(d), [], "nothing left of it")
            os.unlink(filler)
            os.kill(g.pid, signal.SIGUSR1)
            m = g.wait_line(r"gpuleak: signal: .*: wrote (\S+)", stream="err")
            target.send()
            target.finish()
            eq(g.finish(), 1, "a capture was not written: exit 1")
            err = g.text("err")
            check_sanitizers(err)
            eq(len(re.findall(r"No space left on device", err)), 1, "said once")
            events = [r for r in read_ndjson(js) if r.get("type") == "capture"]
            eq([(e["written"], e.get("error")) for e in events],
               [(False, "No space left on device"), (True, None)], "--json: both")
            eq(sorted(os.listdir(d)), [os.path.basename(m.group(1))], "the second one")
            v = Report(m.group(1)).verdict()
            eq(v["live_bytes"], 64 * MiB + 30 * MiB, "and it is whole")
            check("1 capture written" in err and "1 not written" in err, err)
        finally:
            target.kill()
            if g:
                g.kill()
            if os.path.exists(js):
                os.unlink(js)


@test
def watch_keeps_the_disk_within_its_bounds():
    """--max-captures 2: with an earlier watch's capture and a file of someone else's in the
    directory, three signals leave the last two captures, the oldest removed first, and the
    other file untouched; --max-disk keeps their bytes under it the same way."""
    d = tempfile.mkdtemp(prefix="gpuleak-watch-")
    old = os.path.join(d, "gpuleak-20000101T000000.000Z-1-oom.glc")
    other = os.path.join(d, "notes.txt")
    for p in (old, other):
        with open(p, "w") as f:
            f.write("x" * 100)
    target = Proc([scenario("loop"), "10", "1M"], env=env_for_targets({"SCENARIO_SYNC": "1"}))
    g = None
    try:
        target.wait_line(r"ready (\d+)")
        g = Proc([gl(), "watch", "-o", d, "--cooldown", "0", "--max-captures", "2", "-p",
                  str(target.pid)], env=gpuleak_env(), stdin=False)
        g.wait_line(r"gpuleak: watching: .*at most 2 captures and 1\.00 GiB; 1 there now",
                    stream="err")
        target.send()
        target.wait_line(r"^done")
        written = []
        for i in range(3):
            os.kill(g.pid, signal.SIGUSR1)
            written.append(wait_nth(g, r"gpuleak: signal: .*: wrote (\S+)", i + 1).group(1))
        target.send()
        target.finish()
        eq(g.finish(), 0, f"exit code: {g.text('err')}")
        err = g.text("err")
        eq(sorted(os.listdir(d)), sorted([os.path.basename(w) for w in written[1:]] + ["notes.txt"]),
           "the last two, and the other file")
        eq(re.findall(r"removed (\S+) \(the oldest capture\)", err), [old, written[0]],
           "oldest first")
        check("2 old ones removed" in err, err)
    finally:
        target.kill()
        if g:
            g.kill()
        shutil.rmtree(d, ignore_errors=True)


@test(root=False)
def watch_usage():
    """What watch refuses, with the exit status and one line each."""
    d = tempfile.mkdtemp(prefix="gpuleak-watch-")
    f = os.path.join(d, "file")
    link = os.path.join(d, "link")
    open(f, "w").close()
    os.symlink(d, link)
    try:
        for args, rc, msg in (
                (["-p", "1"], 2, "watch needs -o DIR"),
                (["-o", d], 2, "watch needs -p PID or a command"),
                (["-o", d, "--on", "oom,bogus", "-p", "1"], 2, "invalid --on 'oom,bogus'"),
                (["-o", d, "--ring", "1KiB", "-p", "1"], 2, "invalid --ring '1KiB'"),
                (["-o", d, "--max-captures", "0", "-p", "1"], 2, "invalid --max-captures"),
                (["-o", "-", "-p", "1"], 2, "-o DIR: a directory the captures go into")):
            p = run_plain([gl(), "watch"] + args)
            eq(p.returncode, rc, f"watch {args}: {p.stderr}")
            check(msg in p.stderr, f"watch {args}: {p.stderr}")
        if os.geteuid() == 0:
            for target, msg in ((f, "not a directory"), (link, "a symbolic link")):
                p = run_plain([gl(), "watch", "-o", target, "--", "/bin/true"])
                eq(p.returncode, 1, f"watch -o {target}: {p.stderr}")
                check(msg in p.stderr, p.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@test
def watch_python_frames_in_a_snapshot():
    """A Python decode loop (1 MiB kept a step by custom_attention_forward) watched with a
    64 KiB ring and --live-above 900 MiB: the leak's stack was first seen at step 0, long out
    of the ring when the trigger fires, and the capture still names it by its Python function,
    file and line, with its Python callers, as the live analysis does."""
    import test_python as tp
    pys = tp.interpreters(required=False)
    if not pys:
        return "skip"
    name, py, ver = pys[-1]
    w = Watch(["--ring", "64KiB", "--live-above", "900MiB", "--on", "none", "--step", "sync"],
              [py, tp.WORKLOAD, "decode", "1000"], env={"GPULEAK_CUDART": tp.CUDART})
    try:
        w.wait_err(r"gpuleak: live-above: .*: wrote")
        w.finish()
        rep = Report(w.captures("live-above")[0], ["--step", "sync"])
        t = rep.trigger()
        check(t["snapshot_records"] > 0, "the leak's first steps had left the ring")
        v = rep.verdict()
        leak = tp.entry(v, tp.site("custom_attention_forward", "leak"))
        eq(leak["bytes"], 900 * MiB, f"{name}: live at the trigger")
        eq(tp.py_frames(leak["stacks"][0]),
           [("custom_attention_forward", tp.L["leak"]),
            (tp.qual(ver, "Decoder.forward"), tp.L["forward"]),
            ("decode", tp.L["decode"]), ("main", tp.L["main_decode"]),
            ("<module>", tp.L["module"])], f"{name}: its Python callers, named offline")
    finally:
        w.cleanup()
