# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Capture now, analyse later: `gpuleak record` writes a capture of a real traced process,
`gpuleak report` analyses it offline. The same records give the same verdict live and
offline; a capture cut short reads up to its last whole block; a damaged one up to the
damaged block, exit 1, one line naming where; a corrupt header is a one-line error naming
the offset; never a crash."""
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile

import harness
from harness import (OUT, Fail, Proc, check, check_sanitizers, eq, gpuleak_env, leak_sites,
                     read_ndjson, run_plain, scenario, test, tmpfile, env_for_targets)

MiB = 1 << 20


def gl():
    return harness.GPULEAK


class Recorded:
    """One `gpuleak record` run: the capture path, the live verdict(s), the outputs."""

    def __init__(self, path, p, records):
        self.path, self.rc, self.out, self.err = path, p.returncode, p.stdout, p.stderr
        self.records = records

    def verdict(self):
        vs = [r for r in self.records if r.get("type") == "verdict"]
        check(len(vs) == 1, f"one live verdict, got {len(vs)}; stderr:\n{self.err}")
        return vs[0]

    def cleanup(self):
        if os.path.exists(self.path):
            os.unlink(self.path)


def record(target_args, extra=(), path=None, expect_rc=0, env=None, cwd=None):
    """gpuleak record -o PATH --json LIVE [extra] TARGET_ARGS (`-- CMD...` or `-p PID`)."""
    path = path or tmpfile(".glc")
    live = tmpfile(".ndjson")
    cmd = [gl(), "record", "-o", path, "--json", live, "--interval", "0"] + list(extra) + \
        list(target_args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=harness.TIMEOUT,
                       env=env or gpuleak_env(), cwd=cwd)
    check_sanitizers(p.stderr)
    res = Recorded(path, p, read_ndjson(live))
    if os.path.exists(live):
        os.unlink(live)
    if expect_rc is not None:
        eq(p.returncode, expect_rc, f"exit code of {' '.join(cmd)} (stderr: {p.stderr})")
    return res


class Report:
    def __init__(self, p, records):
        self.rc, self.out, self.err, self.records = p.returncode, p.stdout, p.stderr, records

    def verdict(self):
        vs = [r for r in self.records if r.get("type") == "verdict"]
        check(len(vs) == 1, f"one offline verdict, got {len(vs)}; stderr:\n{self.err}")
        return vs[0]


def report(path, extra=(), expect_rc=0):
    js = tmpfile(".ndjson")
    cmd = [gl(), "report", path, "--json", js] + list(extra)
    p = run_plain(cmd)
    check_sanitizers(p.stderr)
    res = Report(p, read_ndjson(js))
    if os.path.exists(js):
        os.unlink(js)
    if expect_rc is not None:
        eq(p.returncode, expect_rc, f"exit code of {' '.join(cmd)} (stderr: {p.stderr})")
    return res


LIVE_ONLY = ("slow_probe_sites", "moved_probe_sites")


def same_verdict(live, offline):
    """The whole verdict object is the same live and offline, except "capture": only a
    report of a capture has it (which file, host, whether it was cut short), and where the
    probes sat (LIVE_ONLY), a property of the tracing session, not of its records."""
    check("capture" not in live, "a live verdict has no capture member")
    check("capture" in offline, "an offline verdict says which capture it comes from")
    for k in LIVE_ONLY:
        check(k in live and k not in offline, f"{k} in live verdicts only")
    live = {k: v for k, v in live.items() if k not in LIVE_ONLY}
    off = {k: v for k, v in offline.items() if k != "capture"}
    if live != off:
        diff = {k: (live.get(k), off.get(k)) for k in set(live) | set(off)
                if live.get(k) != off.get(k)}
        raise Fail(f"live and offline verdicts differ (live, offline): {diff}")


def captured(path):
    """The verdict of a capture that may still be written (up to its last whole block), or
    None while it has none to give."""
    js = tmpfile(".ndjson")
    p = run_plain([gl(), "report", path, "--json", js])
    try:
        check_sanitizers(p.stderr)
        vs = [r for r in read_ndjson(js) if r.get("type") == "verdict"] if not p.returncode else []
        return vs[0] if len(vs) == 1 else None
    finally:
        if os.path.exists(js):
            os.unlink(js)


def wait_captured_steps(path, steps):
    """Waits until the capture being written holds `steps` steps of the loop scenario in
    whole blocks (its leaky_sampler allocations); returns that verdict."""
    def poll():
        v = captured(path)
        got = v and leak_sites(v).get(("cudaMalloc", "leaky_sampler"), (0, 0))[1]
        return v if got and got >= steps else None
    return harness.wait_for(f"{steps} loop steps in whole blocks of {path}", poll)


def blocks(path):
    """[(offset, type, stored_len, count)] from `gpuleak report --blocks`."""
    p = run_plain([gl(), "report", "--blocks", path])
    eq(p.returncode, 0, f"report --blocks exit code ({p.stderr})")
    out = []
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(\d+)\s+([A-Z]+)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\d+)$", line)
        if m:
            out.append((int(m.group(1)), m.group(2), int(m.group(5)), int(m.group(6))))
    check(out, f"blocks listed: {p.stdout}")
    return out


def loop_expected(v, steps, size):
    """What loop STEPS SIZE leaves behind (tests/scenarios/loop.c)."""
    eq(v["live_bytes"], 64 * MiB + steps * size, "live bytes")
    eq(v["live_count"], 1 + steps, "live count")
    eq(v["allocs"], 1 + 3 * steps, "allocs (kv cache, 2 activations + 1 leak per step)")
    eq(v["frees"], 2 * steps, "frees (the activations)")
    # stream create, kv cache, 3 mallocs + 2 frees + 1 sync per step; each runtime call and
    # the driver call the runtime makes under it
    eq(v["calls"], 2 * (2 + 6 * steps), "traced calls, both layers")
    eq(v["pending_bytes"], 0, "pending bytes")
    eq(leak_sites(v), {("cudaMalloc", "kv_cache_init"): (64 * MiB, 1),
                       ("cudaMalloc", "leaky_sampler"): (steps * size, steps)}, "leak sites")
    eq(v["state"], "exited", "state")
    eq(v["dropped_events"], 0, "dropped events")


@test
def record_then_report_gives_the_live_verdict():
    steps, size = 6, 65536
    r = record(["--", scenario("loop"), str(steps), str(size)])
    try:
        live = r.verdict()
        loop_expected(live, steps, size)
        check(re.search(r"wrote .*: \d+ records in \d+ blocks", r.err), f"summary: {r.err}")
        rep = report(r.path)
        off = rep.verdict()
        same_verdict(live, off)
        eq(off["capture"]["finished"], True, "capture finished")
        eq(off["capture"]["truncated"], False, "capture truncated")
        # the text report is the live one, after a summary of the capture
        check(re.search(r"^capture .*: recorded .* by gpuleak", rep.out, re.M),
              f"capture summary: {rep.out}")
        check(re.search(r"pid \d+ \(loop\) started .*loop %d %d" % (steps, size), rep.out),
              f"command line in the summary: {rep.out}")
        live_tail = r.out[r.out.index("\npid "):]
        check(rep.out.endswith(live_tail), f"offline text report equals the live one:\n"
              f"live:\n{live_tail}\noffline:\n{rep.out}")
    finally:
        r.cleanup()


@test
def report_takes_analysis_options_of_its_own():
    """Re-analysis with other settings is what captures are for: one capture of `loop`,
    recorded with no rules and default steps, reported three ways."""
    steps, size = 12, MiB
    r = record(["--", scenario("loop"), str(steps), str(size)])
    try:
        live = r.verdict()
        base = report(r.path).verdict()
        same_verdict(live, base)
        eq(base["persistent_bytes"], 0, "no rules: nothing persistent")
        # 1. a rule the recording did not have: the KV cache is retained, not a leak
        kv = report(r.path, ["--rule", "persistent site=kv_cache_init"]).verdict()
        eq(leak_sites(kv), {("cudaMalloc", "leaky_sampler"): (steps * size, steps)},
           "leaks with the KV cache declared persistent")
        eq([(x["site"].split("+")[0], x["bytes"], x["count"], x["rule"]) for x in kv["retained"]],
           [("kv_cache_init", 64 * MiB, 1, "persistent site=kv_cache_init")], "retained")
        eq(kv["persistent_bytes"], 64 * MiB, "persistent bytes")
        eq(kv["live_bytes"], base["live_bytes"], "the same memory is live either way")
        # 2. other steps and the CI gate: a growth leak of exactly SIZE per sync, exit 3
        g = report(r.path, ["--step", "sync", "--warmup-steps", "1", "--min-growth-steps", "3",
                            "--fail-on-leak", "--rule", "persistent site=kv_cache_init"],
                   expect_rc=3)
        v = g.verdict()
        eq((v["step_source"], v["steps"]), ("sync", steps + 1),
           "one step per cudaStreamSynchronize, + the last one")
        growth = {x["site"].split("+")[0]: x for x in v["growth"]}
        eq(sorted(growth), ["leaky_sampler"], "growth sites")
        check(abs(growth["leaky_sampler"]["slope_bytes_per_step"] - size) < 0.01 * size,
              f"slope {growth['leaky_sampler']['slope_bytes_per_step']} bytes/step")
        eq((v["gate"]["enabled"], v["gate"]["failed"]), (True, True), "gate")
        eq([x["kind"] for x in v["gate"]["violations"]], ["growth"], "gate violations")
        check(re.search(r"^step +\d+", g.out, re.M) or "steps:" in g.out,
              f"step lines or summary in the text report: {g.out}")
        # the same with a growth allowance over SIZE: passes
        report(r.path, ["--step", "sync", "--fail-on-leak", "--max-growth", "2MiB"],
               expect_rc=0)
        # 3. a malformed rule is a usage error naming its position, before reading anything
        bad = report(r.path, ["--rule", "persistent size>=lots"], expect_rc=2)
        check("--rule #1" in bad.err, f"names the rule: {bad.err}")
    finally:
        r.cleanup()


@test
def recorded_step_markers_give_the_live_timeline():
    """--step sym: offline re-uses the marker calls the recording made: with the recording's
    options (steps and a rule on a site name) the timeline and the verdict are the live
    ones; without markers recorded, report says why."""
    opts = ["--step", "sym:loop:decode_step", "--warmup-steps", "1", "--min-growth-steps", "3",
            "--rule", "persistent site=kv_cache_init"]
    r = record(opts + ["--", scenario("loop"), "10", "65536"])
    try:
        live = r.verdict()
        eq(live["step_source"], "sym", "live step source")
        off = report(r.path, opts).verdict()
        same_verdict(live, off)
        eq([x["site"].split("+")[0] for x in off["growth"]], ["leaky_sampler"], "growth")
        eq(off["persistent_bytes"], 64 * MiB, "the rule matched the recorded site name")
        steps_live = [x for x in r.records if x.get("type") == "step"]
        rep = report(r.path, opts)
        steps_off = [x for x in rep.records if x.get("type") == "step"]
        eq(len(steps_off), len(steps_live), "step records")
        eq(steps_off, steps_live, "every step record is the live one")
    finally:
        r.cleanup()
    # Recorded without markers: the step source cannot be placed, as live (exit 2, one line),
    # never a green gate on the one step the capture is (it was exit 0, a warning).
    r = record(["--", scenario("loop"), "4", "65536"])
    try:
        for step, line in (
                ("sym:loop:decode_step",
                 "--step sym:loop:decode_step: no step marker calls recorded: --step sym: "
                 "re-uses the markers of the recording (record with --step sym:FILE:SYMBOL)"),
                ("nvtx:decode",
                 "--step nvtx:decode: no NVTX range 'decode' recorded: NVTX ranges are in a "
                 "capture only when it was recorded with --step nvtx:NAME")):
            rep = report(r.path, ["--step", step, "--fail-on-leak"], expect_rc=2)
            eq(rep.err.splitlines(), [f"gpuleak: {r.path}: {line}"],
               f"--step {step}: one line")
            eq(rep.records, [], f"--step {step}: no verdicts written")
    finally:
        r.cleanup()


@test
def record_attached_process():
    n, m, size = 7, 3, 8192
    t = Proc([scenario("basic"), str(n), str(m), str(size)],
             env=env_for_targets({"SCENARIO_SYNC": "1"}))
    path, live = tmpfile(".glc"), tmpfile(".ndjson")
    gl_proc = None
    try:
        t.wait_line(r"ready (\d+)")
        gl_proc = Proc([gl(), "record", "-o", path, "--json", live, "--interval", "0", "-p",
                        str(t.pid)], env=gpuleak_env(), stdin=False)
        gl_proc.wait_line(r"tracing pid %d" % t.pid, stream="err")
        t.send()
        t.wait_line("done")
        t.send()
        t.finish()
        eq(gl_proc.finish(), 0, f"record exit code ({gl_proc.text('err')})")
        check_sanitizers(gl_proc.text("err"))
        lv = [x for x in read_ndjson(live) if x["type"] == "verdict"]
        eq(len(lv), 1, "one live verdict")
        eq(lv[0]["live_bytes"], (n - m) * size, "live bytes")
        eq(lv[0]["allocs"], n, "allocs")
        off = report(path)
        same_verdict(lv[0], off.verdict())
        check(re.search(r"pid %d \(basic\) started .*basic %d %d %d" % (t.pid, n, m, size),
                        off.out), f"attach mode reads the command line: {off.out}")
    finally:
        t.kill()
        if gl_proc:
            gl_proc.kill(signal.SIGTERM)
        for f in (path, live):
            if os.path.exists(f):
                os.unlink(f)


@test
def record_exit_status_3_when_the_gate_fails():
    """record is run with a gate: 3 when it fails, with the capture complete, and --help
    says so."""
    r = record(["--", scenario("leak3")], extra=["--fail-on-leak", "--max-live-at-exit", "0"],
               expect_rc=3)
    try:
        eq([(x["kind"], x["bytes"]) for x in r.verdict()["gate"]["violations"]],
           [("live_at_exit", 3 * MiB)], "the live verdict's gate")
        check("incomplete" not in r.err, f"the capture was finished: {r.err}")
        rep = report(r.path, ["--fail-on-leak", "--max-live-at-exit", "0"], expect_rc=3)
        same_verdict(r.verdict(), rep.verdict())
    finally:
        r.cleanup()
    p = run_plain([gl(), "record", "--help"])
    check("2 usage error, 3 --fail-on-leak found leaks" in " ".join(p.stdout.split()),
          f"exit status 3 in record --help: {p.stdout}")


@test
def recorded_webgpu_labels_give_the_live_violations():
    """A capture keeps what says a label follows a creation (GL_HF_LABEL): offline, the
    WebGPU classes are checked as live."""
    if not os.path.exists(os.path.join(harness.BIN, "wgpu_decode")):
        return "skip"
    rules = ["--rule", "persistent label=kv_cache* once", "--rule",
             "persistent label=logits max=1MiB"]
    r = record(["--", scenario("wgpu_decode"), "5"], extra=rules)
    try:
        live = r.verdict()
        eq([(x["kind"], x["site"].split("+")[0], x["bytes"]) for x in live["violations"]],
           [("once", "kv_cache_init", 8 * MiB)] * 3 + [("max", "leaky_logits", 2 * MiB)],
           "live violations")
        same_verdict(live, report(r.path, rules).verdict())
    finally:
        r.cleanup()


@test
def capture_file_is_private_and_never_clobbered():
    r = record(["--", scenario("leak3")])
    try:
        eq(stat.S_IMODE(os.stat(r.path).st_mode), 0o600, "capture file mode")
        again = record(["--", scenario("leak3")], path=r.path, expect_rc=1)
        check("File exists" in again.err and "--force" in again.err,
              f"refuses to overwrite: {again.err}")
        os.chmod(r.path, 0o644)
        forced = record(["--", scenario("leak3")], extra=["--force"], path=r.path)
        eq(stat.S_IMODE(os.stat(r.path).st_mode), 0o600, "mode after --force")
        same_verdict(forced.verdict(), report(r.path).verdict())
    finally:
        r.cleanup()


@test
def report_needs_no_privileges():
    """Under sudo the capture belongs to the user who ran sudo, who reports it unprivileged."""
    env = gpuleak_env()
    env.update(SUDO_UID="65534", SUDO_GID="65534")
    r = record(["--", scenario("leak3")], env=env)
    try:
        st = os.stat(r.path)
        eq((st.st_uid, st.st_gid), (65534, 65534), "owner of the capture")
        eq(stat.S_IMODE(st.st_mode), 0o600, "mode")
        js = tmpfile(".ndjson")
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            gl(), "report", r.path, "--json", js], capture_output=True,
                           text=True, timeout=60, env=gpuleak_env())
        check_sanitizers(p.stderr)
        eq(p.returncode, 0, f"report as nobody ({p.stderr})")
        vs = [x for x in read_ndjson(js) if x["type"] == "verdict"]
        os.unlink(js)
        same_verdict(r.verdict(), vs[0])
    finally:
        r.cleanup()


@test
def report_after_the_binaries_are_gone():
    """Record a copy of the scenario and its libraries, delete them, then report: every
    site is still named from the capture."""
    tmp = tempfile.mkdtemp(prefix="gpuleak-gone-")
    path = tmpfile(".glc")
    try:
        os.makedirs(os.path.join(tmp, "bin"))
        shutil.copy2(scenario("leak3"), os.path.join(tmp, "bin", "leak3"))
        shutil.copytree(os.path.join(OUT, "tests", "lib"), os.path.join(tmp, "lib"))
        r = record(["--", os.path.join(tmp, "bin", "leak3")], path=path)
        live = r.verdict()
        shutil.rmtree(tmp)
        rep = report(path)
        off = rep.verdict()
        same_verdict(live, off)
        eq(leak_sites(off), {("cudaMalloc", "leak_one_mib"): (3 * MiB, 3)}, "leak sites")
        check(re.fullmatch(r"leak_one_mib\+0x[0-9a-f]+ \(leak3\)", off["leaks"][0]["site"]),
              f"site named function+0xoff (module): {off['leaks'][0]}")
        eq(off["leaks"][0]["module"], "leak3", "module")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if os.path.exists(path):
            os.unlink(path)


@test
def truncated_at_every_block_boundary_and_inside_blocks():
    steps = 12
    r = record(["--", scenario("loop"), str(steps), "65536"], extra=["--block-size", "256"])
    cut = tmpfile(".glc")
    try:
        bl = blocks(r.path)
        size = os.path.getsize(r.path)
        nrec = sum(c for _, t, _, c in bl if t == "RECORDS")
        check(len([b for b in bl if b[1] == "RECORDS"]) >= 4, f"several record blocks: {bl}")
        eq(bl[-1][1], "END", "last block")
        ends = [o + 28 + s for o, _, s, _ in bl]
        points = set()
        for (o, _, s, _), end in zip(bl, ends):
            points |= {o, o + 1, o + 14, o + 28, o + 28 + s // 2, end - 1}
        prev_allocs = -1
        for at in sorted(p for p in points if 264 <= p < size):
            with open(r.path, "rb") as f, open(cut, "wb") as g:
                g.write(f.read(at))
            rep = report(cut)
            whole = max([264] + [e for e in ends if e <= at])
            records = sum(c for (o, t, s, c), e in zip(bl, ends) if t == "RECORDS" and e <= at)
            check(f"capture truncated at offset {whole} (the recorder finished, the file was "
                  f"cut short later)" in rep.err, f"cut at {at}: message: {rep.err}")
            vs = [x for x in rep.records if x["type"] == "verdict"]
            if not records:
                continue
            v = vs[0]
            eq(v["capture"]["truncated"], True, f"cut at {at}: truncated")
            eq(v["capture"]["truncated_at"], whole, f"cut at {at}: truncated_at")
            eq(v["capture"]["records"], records, f"cut at {at}: records of whole blocks")
            check(v["allocs"] >= prev_allocs, f"cut at {at}: allocs only grow")
            prev_allocs = v["allocs"]
        eq(report(r.path).verdict()["capture"]["records"], nrec, "all records uncut")
        # inside the file header there is nothing to report
        with open(r.path, "rb") as f, open(cut, "wb") as g:
            g.write(f.read(100))
        rep = report(cut, expect_rc=1)
        check("offset 100: file ends inside the 264-byte capture header" in rep.err,
              f"cut header: {rep.err}")
    finally:
        r.cleanup()
        if os.path.exists(cut):
            os.unlink(cut)


@test
def bit_flips_report_what_comes_before_the_damage():
    """A flip in the file header is an error, one line naming the offset. A flip in a block
    (its header or its payload: CRCs catch either) was an error too, the whole capture lost:
    now the blocks before it are reported, exit 1, with one line saying where the damage
    starts (block number, byte offset, what is wrong), and the verdicts say so too."""
    r = record(["--", scenario("loop"), "4", "65536"], extra=["--block-size", "512"])
    bad = tmpfile(".glc")
    try:
        data = bytearray(open(r.path, "rb").read())
        bl = blocks(r.path)
        points = list(range(0, 264, 13))
        for o, _, s, _ in bl:
            points += [o, o + 5, o + 9, o + 13, o + 17, o + 22, o + 27]
            points += [o + 28 + s * k // 4 for k in range(4) if s]
        for i, at in enumerate(points):
            data[at] ^= 1 << (i % 8)
            open(bad, "wb").write(data)
            data[at] ^= 1 << (i % 8)
            rep = report(bad, expect_rc=None)
            eq(rep.rc, 1, f"flip at {at}: exit code (stderr {rep.err})")
            lines = rep.err.strip().splitlines()
            if at < 264:
                eq(len(lines), 1, f"flip at {at}: one line: {rep.err}")
                check(re.match(r"gpuleak: .*: (offset \d+: .+|.*not a gpuleak capture.*)$",
                               lines[0]), f"flip at {at}: names the offset: {rep.err}")
                eq(rep.records, [], f"flip at {at}: no verdict without a header")
                continue
            k = max(n for n, (o, _, _, _) in enumerate(bl) if o <= at)
            off = bl[k][0]
            before = sum(c for o, t, _, c in bl[:k] if t == "RECORDS")
            m = [re.fullmatch(r"gpuleak: (.*): damaged from block (\d+) at offset (\d+) "
                              r"\((.+)\); reporting the (\d+) records before it", line)
                 for line in lines]
            m = [x for x in m if x]
            eq(len(m), 1, f"flip at {at}: one line for the damage: {rep.err}")
            eq((m[0].group(1), int(m[0].group(2)), int(m[0].group(3)), int(m[0].group(5))),
               (bad, k + 1, off, before), f"flip at {at}: where, and what is reported")
            if not before:
                continue
            c = rep.verdict()["capture"]
            eq((c["truncated"], c["truncated_at"], c["damaged_at"], c["damaged_block"],
                c["records"], c["damage"]), (True, off, off, k + 1, before, m[0].group(4)),
               f"flip at {at}: the verdict's capture member")
        # --blocks: the blocks before the damage, then the damage, exit 1
        k = next(n for n, b in enumerate(bl) if b[1] == "RECORDS" and n > 0)
        data[bl[k][0] + 28] ^= 1
        open(bad, "wb").write(data)
        p = run_plain([gl(), "report", "--blocks", bad])
        eq(p.returncode, 1, f"--blocks of a damaged capture ({p.stderr})")
        eq(len([line for line in p.stdout.splitlines() if re.match(r"\s+\d+\s+[A-Z]+ ", line)]),
           k, "the blocks before it listed")
        eq(p.stderr, f"gpuleak: {bad}: damaged from block {k + 1} at offset {bl[k][0]} "
           f"(RECORDS block: payload CRC mismatch (corrupt data))\n", "--blocks says where")
    finally:
        r.cleanup()
        if os.path.exists(bad):
            os.unlink(bad)


@test
def killed_recorder_keeps_all_but_the_last_second():
    """SIGKILL the recorder mid-run: the capture is INCOMPLETE, reports up to its last
    whole block, and names the sites (symbols are written as sites appear)."""
    path = tmpfile(".glc")
    p = Proc([gl(), "record", "-o", path, "--interval", "0", "--", scenario("loop"), "1000",
              "65536"], env=gpuleak_env(), stdin=False)
    try:
        p.wait_line(r"tracing pid (\d+)", stream="err")
        wait_captured_steps(path, 20)
        p.kill(signal.SIGKILL)   # the recorder and its child: same process group
        p.p.wait(timeout=10)
        rep = report(path)
        m = re.search(r"capture truncated at offset (\d+) \(incomplete: recorder did not "
                      r"finish\)", rep.err)
        check(m, f"truncation message: {rep.err}")
        v = rep.verdict()
        eq(v["capture"]["finished"], False, "finished")
        eq(v["state"], "running", "the capture never saw the end")
        # blocks are written every second: it was killed after one with 20 steps had been
        steps = v["allocs"] // 3
        check(steps >= 20, f"at least the steps of the whole blocks: {v['allocs']} allocs")
        sites = leak_sites(v)
        eq(sites.get(("cudaMalloc", "kv_cache_init")), (64 * MiB, 1), f"named: {sites}")
        check(("cudaMalloc", "leaky_sampler") in sites, f"named: {sites}")
    finally:
        p.kill(signal.SIGKILL)
        if os.path.exists(path):
            os.unlink(path)


@test
def disk_full_keeps_whole_blocks():
    """ENOSPC mid-capture: the capture stops at a whole block, tracing goes on, exit 1."""
    mnt = tempfile.mkdtemp(prefix="gpuleak-full-")
    try:
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", mnt],
                           capture_output=True, text=True)
        if m.returncode:
            return "skip"
        path = os.path.join(mnt, "c.glc")
        r = record(["--", scenario("loop"), "60", "65536"], extra=["--block-size", "64"],
                   path=path, expect_rc=1)
        check(re.search(r"writing .*c\.glc: No space left on device; the capture stops at "
                        r"offset \d+", r.err), f"message: {r.err}")
        loop_expected(r.verdict(), 60, 65536)
        rep = report(path)
        check("capture truncated at offset" in rep.err and "incomplete" in rep.err,
              f"truncated: {rep.err}")
        check(rep.verdict()["allocs"] > 0, "what was written is reported")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
        os.rmdir(mnt)


@test
def not_a_capture_or_another_version():
    tmp = tempfile.mkdtemp(prefix="gpuleak-bad-")
    try:
        text = os.path.join(tmp, "notes.txt")
        open(text, "w").write("hello\n" * 100)
        empty = os.path.join(tmp, "empty.glc")
        open(empty, "w").close()
        cases = [(text, "offset 0: not a gpuleak capture"),
                 (empty, "offset 0: empty file, not a gpuleak capture"),
                 (os.path.join(tmp, "missing.glc"), "No such file or directory"),
                 (tmp, "not a regular file")]
        r = record(["--", scenario("leak3")])
        newer = os.path.join(tmp, "v2.glc")
        data = bytearray(open(r.path, "rb").read())
        r.cleanup()
        data[8:12] = bytes([2, 0, 0, 0])  # major 2, minor 0
        open(newer, "wb").write(data)
        cases.append((newer, "offset 8: capture format 2.0; this gpuleak reads 1.x"))
        for path, needle in cases:
            rep = report(path, expect_rc=1)
            check(needle in rep.err, f"{path}: '{needle}' in {rep.err!r}")
            eq(len(rep.err.strip().splitlines()), 1, f"{path}: one line")
    finally:
        shutil.rmtree(tmp)


@test
def record_and_report_usage():
    for args, needle in ((["record", "--", "true"], "record needs -o FILE"),
                         (["record", "-o", "/tmp/x.glc"], "record needs -p PID or a command"),
                         (["record", "-o", "/tmp/x.glc", "-p", "1", "--", "true"],
                          "record takes -p PID or a command, not both"),
                         (["report"], "report needs a capture file"),
                         (["report", "a", "b"], "report reads one capture file")):
        p = run_plain([gl()] + args)
        eq(p.returncode, 2, f"exit code of gpuleak {' '.join(args)}")
        check(needle in p.stderr, f"'{needle}' in stderr of {args}: {p.stderr!r}")
    for cmd in ("record", "report"):
        p = run_plain([gl(), cmd, "--help"])
        eq(p.returncode, 0, f"{cmd} --help")
        for word in ("EXAMPLES", "EXIT STATUS"):
            check(word in p.stdout, f"{word} in {cmd} --help")
    p = run_plain([gl(), "--help"])
    check("gpuleak record" in p.stdout and "gpuleak report" in p.stdout, "top-level help")


@test
def report_intervals_from_recorded_time():
    r = record(["--", scenario("loop"), "10", "65536"])
    try:
        rep = report(r.path, ["--interval", "50ms"])
        rows = re.findall(r"^\[\s*([\d.]+)s\] pid \d+: live", rep.out, re.M)
        check(len(rows) >= 3, f"interval tables at recorded times: {rep.out}")
        ivs = [x for x in rep.records if x["type"] == "interval"]
        eq(len(ivs), len(rows), "one NDJSON interval per table")
        same_verdict(r.verdict(), rep.verdict())
    finally:
        r.cleanup()


@test
def fuzz_capture_reader_short():
    """40,000 inputs of libFuzzer over the committed corpus (`make fuzz` runs it for long)."""
    harness.run_fuzzer("capture", 40000)
