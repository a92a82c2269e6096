# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Persistent-buffer rules and deferred-free windows, through the real tool on real
processes: the four properties a leak gate needs, every error class, rule violations,
and bad rules."""
import json
import os
import re

import harness
from harness import Attached, check, eq, leak_sites, run_gpuleak, run_plain, scenario, test

MiB = 1 << 20
TIMELINE = ["--step", "sym:timeline:step_boundary", "--interval", "0"]


def timeline_run(args, rules=(), steps=24, leak_a=MiB, kv_steps=10, expect_rc=0):
    """timeline STEPS LEAK_A 0 0 0 GAP KV_STEPS with rules."""
    gl = ["run"] + TIMELINE
    for r in rules:
        gl += ["--rule", r]
    gl += args + ["--", scenario("timeline"), str(steps), str(leak_a), "0", "0", "0", "5",
                  str(kv_steps)]
    return run_gpuleak(gl, expect_rc=expect_rc)


def growth_sites(v):
    return {g["site"].split("+")[0]: g for g in v["growth"]}


@test
def kv_cache_class_is_never_a_step_leak():
    """(1) A KV cache that fills over the first steps and then stays."""
    v = timeline_run([]).verdict()
    check("kv_cache_grow" in growth_sites(v),
          f"without a rule the filling KV cache looks like growth: {list(growth_sites(v))}")
    v = timeline_run([], rules=["persistent site=kv_cache_grow", "persistent site=kv_cache_init"]).verdict()
    eq(sorted(growth_sites(v)), ["leak_a"], "growth leaks with the KV cache declared persistent")
    eq(leak_sites(v), {("cudaMalloc", "leak_a"): (24 * MiB, 24)}, "leaks at session end")
    retained = {(r["site"].split("+")[0]): (r["bytes"], r["count"]) for r in v["retained"]}
    eq(retained, {"kv_cache_grow": (10 * 8 * MiB, 10), "kv_cache_init": (64 * MiB, 1)},
       "retained at session end, not leaks")
    eq(v["persistent_bytes"], 144 * MiB, "persistent bytes")
    eq(v["violations"], [], "no violations")
    check(all(r["rule"].startswith("persistent site=") for r in v["retained"]), "rule named")


@test
def async_free_with_late_sync_is_pending_then_freed():
    """(2) and (4): pending from cudaFreeAsync until the late sync, counted all along."""
    a = Attached("asyncfree", ["late_sync"], gl_args=["--interval", "100ms"])
    try:
        a.wait_attached()
        tail = harness.NdjsonTail(a.json_path)
        a.target.send()
        a.target.wait_line("freed")
        # gpuleak's own interval records show the free pending while the sync has not come
        seen = harness.wait_interval(tail, lambda r: r["pending_bytes"] == MiB,
                                     "an interval record with the 1 MiB free pending")
        eq(seen["live_bytes"], 0, "pending memory is not live")
        a.target.send()
        a.target.wait_line("done")
        a.target.send()
        v = a.finish().verdict()
    finally:
        a.cleanup()
    eq(v["pending_bytes"], 0, "freed at the sync")
    eq(v["frees"], 1, "one free")
    eq(v["double_frees"], 0, "no double free")
    eq(v["live_bytes"], 0, "live")


@test
def real_per_step_leak_is_caught_exactly():
    """(3) with the KV cache declared persistent, the real leak still shows, exact bytes."""
    v = timeline_run([], rules=["persistent site=kv_cache_*"], leak_a=3 * MiB).verdict()
    g = growth_sites(v)["leak_a"]
    eq(g["slope_bytes_per_step"], 3.0 * MiB, "slope")
    eq(g["first_step"], 0, "from the first step")
    eq(leak_sites(v), {("cudaMalloc", "leak_a"): (24 * 3 * MiB, 24)}, "bytes at the end")


@test
def pending_free_past_its_window():
    """(4) the window: a free never completed is a violation, and stays pending."""
    v = run_gpuleak(["run", "--interval", "0", "--rule",
                     "deferred api=cudaFreeAsync* until=stream-sync window=50ms", "--",
                     scenario("asyncfree"), "never"]).verdict()
    eq(v["pending_bytes"], MiB, "still pending at exit")
    eq([(x["kind"], x["bytes"]) for x in v["violations"]], [("free_never_completed", MiB)],
       "violation")
    v = run_gpuleak(["run", "--interval", "0", "--rule",
                     "deferred api=cudaFreeAsync* until=stream-sync window=5s", "--",
                     scenario("asyncfree"), "late_sync"]).verdict()
    eq(v["violations"], [], "completed within its window")
    # until=device-sync: a stream sync does not complete it
    v = run_gpuleak(["run", "--interval", "0", "--rule",
                     "deferred api=cudaFreeAsync* until=device-sync", "--",
                     scenario("asyncfree"), "late_sync"]).verdict()
    eq(v["pending_bytes"], MiB, "a stream sync does not complete a device-sync free")


def error_class_line(out):
    """The summary line of the error classes, as numbers by name."""
    lines = [l for l in out.splitlines() if l.startswith("frees of untracked pointers")]
    check(len(lines) == 1, f"one error-class line in the summary: {out}")
    return dict((name.strip(), int(n)) for name, n in
                (part.rsplit(":", 1) for part in lines[0].split(";")))


@test
def error_classes_are_counted():
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("asyncfree"), "double"])
    v = res.verdict()
    eq((v["double_frees"], v["frees"], v["pending_bytes"]), (1, 1, 0), "double free")
    eq(error_class_line(res.out)["double frees"], 1, "double free in the summary")
    # freed again after the free completed, and a plain cudaFree twice: double, not unknown
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("asyncfree"), "double_after"])
    v = res.verdict()
    eq((v["double_frees"], v["unknown_frees"], v["frees"], v["live_bytes"]), (2, 0, 2, 0),
       "frees of pointers already freed")
    eq(error_class_line(res.out)["double frees"], 2, "in the summary")
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("asyncfree"), "reuse"])
    v = res.verdict()
    eq((v["async_reuse"], v["double_frees"], v["live_bytes"], v["pending_bytes"]), (1, 0, 0, 0),
       "stream-ordered reuse closes the pending free")
    # the terminal says so too, beside the other classes, as the JSON counts it
    eq(error_class_line(res.out), {
        "frees of untracked pointers (allocated before attach)": 0, "double frees": 0,
        "live address returned again": 0,
        "pending free's block reused by its stream (legal)": 1}, "summary line")


@test
def rule_matchers_phase_size_api_pid():
    """Every matcher, end to end: phase=init (before the first step), phase=steps<N,
    size>=/size<=, api= globs, site=, and pid= for one process of several."""
    v = timeline_run([], rules=[
        "persistent phase=init",
        "persistent phase=steps<5 api=cudaMalloc size>=8MiB size<=8MiB",
        "ignore api=cudaMal* size<=1MiB site=leak_a"]).verdict()
    by = lambda key: {(e["site"].split("+")[0]): (e["bytes"], e["count"]) for e in v[key]}
    eq(by("retained"), {"kv_cache_init": (64 * MiB, 1), "kv_cache_grow": (5 * 8 * MiB, 5)},
       "the 64 MiB before the first step, and the 8 MiB blocks of steps 0..4")
    eq(by("leaks"), {"kv_cache_grow": (5 * 8 * MiB, 5)}, "steps 5..9 of the KV cache")
    eq(by("ignored"), {"leak_a": (24 * MiB, 24)}, "leak_a: api glob, size and site")
    eq((v["persistent_bytes"], v["ignored_bytes"]), (104 * MiB, 24 * MiB), "totals")
    # pid=: only the process named; another pid leaves the same process's leak alone
    for other, want in ((False, {}), (True, {("cudaMalloc", "leak_one_mib"): (3 * MiB, 3)})):
        a = Attached("leak3", gl_args=lambda pid, o=other: [
            "--rule", f"ignore pid={pid + 1 if o else pid} site=leak_one_mib"])
        try:
            a.wait_attached()
            v = a.finish().verdict()
            eq(leak_sites(v), want, f"pid= {'another' if other else 'this'} process")
        finally:
            a.cleanup()


@test
def deferred_until_event_stream_or_device_sync():
    """until= says what completes a deferred free. `asyncfree event`: A freed on S, an
    event recorded on S and synchronized; B freed on S, S synchronized."""
    def run(*rules):
        args = ["run", "--interval", "0"]
        for r in rules:
            args += ["--rule", r]
        v = run_gpuleak(args + ["--", scenario("asyncfree"), "event"]).verdict()
        return v["frees"], v["pending_bytes"], v["async_reuse"]
    eq(run(), (2, 0, 0), "built in: the event completes A, the stream B")
    eq(run("deferred api=cudaFreeAsync* until=event-sync"), (1, MiB, 0),
       "event-sync: A by its event; B's stream sync is no event: pending at exit")
    eq(run("deferred api=cudaFreeAsync* until=stream-sync"), (2, 0, 0),
       "stream-sync: an event recorded on the stream after the free is the stream's")
    eq(run("deferred api=cudaFreeAsync* until=device-sync"), (1, MiB, 1),
       "device-sync: neither; B reuses A's block (stream-ordered reuse closes A), B pending")


@test
def end_marker_ends_the_session():
    """--end sym:FILE:SYMBOL: a process's session ends where it calls SYMBOL, as at a detach:
    what is live then is judged (release=session-end), nothing after it counts, and the
    program runs on. Live and from a capture the same."""
    from test_capture import record, report, same_verdict
    rule = "persistent site=kv_cache_init release=session-end"
    v = run_gpuleak(["run", "--interval", "0", "--rule", rule, "--",
                     scenario("session"), "5"]).verdict()
    eq(v["state"], "exited", "without --end the session lasts to the exit")
    eq(leak_sites(v), {("cudaMalloc", "serve_step"): (5 * MiB, 5),
                       ("cudaMalloc", "after_shutdown"): (2 * MiB, 1)},
       "the KV cache was freed in the shutdown; what came after it counts")
    eq(v["violations"], [], "gone at the end: no violation")
    r = record(["--end", "sym:session:engine_shutdown", "--rule", rule, "--",
                scenario("session"), "5"])
    try:
        live = r.verdict()
        eq(live["state"], "ended", "ended at its end marker")
        eq(leak_sites(live), {("cudaMalloc", "serve_step"): (5 * MiB, 5),
                              ("cudaMalloc", "kv_cache_init"): (64 * MiB, 1)},
           "as of the marker: the KV cache still live, what followed not counted")
        eq([(x["kind"], x["site"].split("+")[0], x["bytes"]) for x in live["violations"]],
           [("not_released_at_session_end", "kv_cache_init", 64 * MiB)],
           "release=session-end is checked at the marker")
        check(re.search(r"^pid \d+ \(session\): session ended at its end marker after",
                        r.out, re.M), f"text report:\n{r.out}")
        check("session-end marker on engine_shutdown" in r.err, f"the marker said: {r.err}")
        same_verdict(live, report(r.path, ["--rule", rule]).verdict())
    finally:
        r.cleanup()
    rep = report_missing_end()
    check("no end marker calls recorded" in rep, f"report --end without markers: {rep}")


def report_missing_end():
    """The stderr of `report --end` on a capture recorded without it."""
    from test_capture import record, report
    r = record(["--", scenario("session"), "1"])
    try:
        return report(r.path, ["--end", "sym:session:engine_shutdown"]).err
    finally:
        r.cleanup()


@test
def once_and_max_violations():
    v = timeline_run([], rules=["persistent site=kv_cache_grow once",
                                "persistent site=leak_a max=10MiB"]).verdict()
    kinds = [(x["kind"], x["site"].split("+")[0], x["bytes"]) for x in v["violations"]]
    eq(kinds, [("once", "kv_cache_grow", 8 * MiB)] * 9 + [("max", "leak_a", 11 * MiB)],
       "every second kv allocation breaks once; leak_a crosses 10 MiB once")
    eq(v["violations"][-1]["source"], "--rule #2:1", "the rule's source")


@test
def rules_beyond_the_64th_are_used():
    """Classes are matched with every rule: the 70th decides here, for persistent and for
    ignore, and its constraint (max=) holds."""
    path = harness.tmpfile(".rules")
    with open(path, "w") as f:
        for i in range(68):
            f.write(f"persistent site=no_such_function_{i}\n")
        f.write("ignore site=leak_a\n")
        f.write("persistent site=kv_cache_* max=100MiB\n")
    try:
        v = timeline_run(["--rules", path]).verdict()
    finally:
        os.unlink(path)
    eq(v["leaks"], [], "leak_a ignored by rule 69, the KV cache persistent by rule 70")
    eq(v["ignored_bytes"], 24 * MiB, "ignored by rule 69")
    eq(v["persistent_bytes"], 144 * MiB, "persistent by rule 70")
    eq([(x["kind"], x["source"], x["bytes"], x["count"]) for x in v["violations"]],
       [("max", f"{path}:70", 104 * MiB, 6)],
       "the 70th rule's max=: 64 MiB init + 5 x 8 MiB steps crosses 100 MiB")


@test
def too_many_rules_is_an_error_naming_the_first_one_over():
    path = harness.tmpfile(".rules")
    limit = 65527  # RULES_USER_MAX: 16-bit rule numbers, 8 kept for the built-ins
    with open(path, "w") as f:
        f.write("# one more than the limit, spread over a file and --rule\n")
        for i in range(limit - 1):
            f.write(f"ignore site=f{i}\n")
        f.write("  ignore site=the_last_one_that_fits\n")
        f.write("  ignore site=one_too_many\n")
    try:
        p = run_plain([harness.GPULEAK, "run", "--rules", path, "--", "true"])
        eq(p.returncode, 2, "usage error")
        eq(p.stderr.splitlines()[0],
           f"gpuleak: {path}:{limit + 2}:3: too many rules: at most {limit} in all "
           "(--rules, --rule and --preset together)", "FILE:LINE:COL of the first one over")
        # the limit counts every source: one --rule before the file leaves no room for its last
        p = run_plain([harness.GPULEAK, "run", "--rule", "ignore site=x", "--rules", path,
                       "--", "true"])
        eq(p.returncode, 2, "usage error with a --rule first")
        check(f"{path}:{limit + 1}:3: too many rules" in p.stderr, p.stderr)
    finally:
        os.unlink(path)


@test
def release_at_session_end():
    v = timeline_run([], rules=["persistent site=kv_cache_grow release=session-end"]).verdict()
    kinds = [(x["kind"], x["bytes"], x["count"]) for x in v["violations"]]
    eq(kinds, [("not_released_at_session_end", 80 * MiB, 10)], "must be gone at the end")
    check(("cudaMalloc", "kv_cache_grow") in leak_sites(v), "and then it is a leak")


@test
def ignore_rules_keep_counts_out_of_verdicts():
    v = timeline_run([], rules=["ignore site=leak_a", "persistent site=kv_cache_*"]).verdict()
    eq(v["leaks"], [], "no leaks")
    eq(v["ignored_bytes"], 24 * MiB, "counted")
    eq(v["live_bytes"], 24 * MiB + 144 * MiB, "live bytes include everything")
    eq(v["growth"], [], "ignored sites are not growth candidates")


@test
def rules_from_files_and_presets():
    path = harness.tmpfile(".rules")
    with open(path, "w") as f:
        f.write("# the KV cache stays until the end\n"
                "persistent site=kv_cache_grow   # filled at the first tokens\n"
                "\n"
                "persistent site=kv_cache_init size>=64MiB\n")
    try:
        v = timeline_run(["--rules", path]).verdict()
    finally:
        os.unlink(path)
    eq(sorted(growth_sites(v)), ["leak_a"], "rules from a file")
    for name in ("vllm", "hf-transformers", "ort-webgpu", "llama.cpp"):
        p = run_plain([harness.GPULEAK, "run", "--preset", name, "--", "true"])
        check("preset" not in p.stderr and p.returncode == 0,
              f"preset {name} loads: rc={p.returncode} {p.stderr}")


@test
def malformed_rules_stop_before_attaching():
    t = harness.Proc([scenario("basic"), "1", "0", "64"],
                     env=harness.env_for_targets({"SCENARIO_SYNC": "1"}))
    try:
        t.wait_line("ready")
        path = harness.tmpfile(".rules")
        with open(path, "w") as f:
            f.write("persistent site=a\nignore size>=12parsecs\n")
        p = run_plain([harness.GPULEAK, "attach", "-p", str(t.pid), "--rules", path])
        os.unlink(path)
    finally:
        t.kill()
    eq(p.returncode, 2, "usage error")
    check(p.stderr.startswith(f"gpuleak: {path}:2:14: bad size '12parsecs'"),
          f"FILE:LINE:COL: {p.stderr!r}")
    check("tracing" not in p.stderr, "nothing attached")
    for rule, where in (("persistant api=x", "1:1"), ("deferred api=x", "1:1"),
                        ("persistent max=1GiB window=1s api=x", "1:21"),
                        ('persistent site="unterminated', "1:17")):
        p = run_plain([harness.GPULEAK, "run", "--rule", rule, "--", "true"])
        eq(p.returncode, 2, f"exit code for {rule!r}")
        check(f"--rule #1:{where}:" in p.stderr, f"position for {rule!r}: {p.stderr!r}")


@test
def cache_rules_take_an_api_and_a_pid_only():
    """A cache rule names a caching allocator's calls (the ort-webgpu preset's: ONNX Runtime's
    buffers, judged on what the program never released): api= needed, pid= allowed, any other
    matcher refused with one line and its position, before anything runs."""
    why = "a cache rule takes api= (needed) and pid= only"
    for rule in ("cache api=wgpu* size>=1KiB", "cache pid=3", "cache api=x lib=liba.so",
                 "cache api=x phase=init"):
        p = run_plain([harness.GPULEAK, "run", "--rule", rule, "--", "true"])
        eq((p.returncode, p.stderr), (2, f"gpuleak: --rule #1:1:1: {why}\n"), rule)
    p = run_plain([harness.GPULEAK, "run", "--rule", "cachey api=x", "--", "true"])
    eq(p.stderr, "gpuleak: --rule #1:1:1: unknown rule kind 'cachey' (persistent, deferred, "
       "ignore or cache)\n", "the kinds")


@test
def label_rules_on_real_dawn():
    if not os.path.exists(os.path.join(harness.BIN, "wgpu_decode")):
        return "skip"
    v = run_gpuleak(["run", "--interval", "0", "--step", "sym:wgpu_decode:decode_step",
                     "--rule", "persistent label=kv_cache*", "--",
                     scenario("wgpu_decode"), "20"]).verdict()
    retained = [(r["label"], r["bytes"], r["count"]) for r in v["retained"]]
    eq(retained, [("kv_cache", 32 * MiB, 4)], "the kv_cache-labelled buffers are retained")
    eq([(l["label"], l["bytes"]) for l in v["leaks"]], [("logits", 20 * MiB)],
       "the per-step logits buffers are the leak")
    eq([g["site"].split("+")[0] for g in v["growth"]], ["leaky_logits"], "and the growth")
    eq(v["persistent_bytes"], 32 * MiB, "persistent bytes")


@test
def fuzz_rules_parser_short():
    """200,000 inputs of libFuzzer on the rules parser over its committed seeds and corpus:
    no crash, a rejected file adds nothing and names LINE:COL, an accepted rule parses back
    to itself (`make fuzz-rules` runs it for long)."""
    harness.run_fuzzer("rules", 200000)


@test
def once_and_max_on_real_dawn():
    """WebGPU creations are held to once= and max= like CUDA allocations: the label that
    follows a creation decides the class, and the class is checked then."""
    if not os.path.exists(os.path.join(harness.BIN, "wgpu_decode")):
        return "skip"
    res = run_gpuleak(["run", "--interval", "0", "--fail-on-leak",
                       "--rule", "persistent label=kv_cache* once",
                       "--rule", "persistent label=logits max=1MiB", "--",
                       scenario("wgpu_decode"), "20"], expect_rc=3)
    v = res.verdict()
    eq([(x["kind"], x["site"].split("+")[0], x["bytes"], x["count"], x["source"])
        for x in v["violations"]],
       [("once", "kv_cache_init", 8 * MiB, 1, "--rule #1:1")] * 3 +
       [("max", "leaky_logits", 2 * MiB, 2, "--rule #2:1")],
       "kv_cache buffers 2, 3 and 4 break once; the second logits buffer crosses 1 MiB")
    eq(v["persistent_bytes"], 32 * MiB + 20 * MiB, "persistent bytes")
    eq([(g["violation"], g["site"].split("+")[0]) for g in v["gate"]["violations"]],
       [("once", "kv_cache_init")] * 3 + [("max", "leaky_logits")], "the gate names them")
    # A creation is judged with its label, not before it arrives: the kv_cache buffers
    # would otherwise pass through the big-buffer class while weights (16 MiB) is live.
    v = run_gpuleak(["run", "--interval", "0",
                     "--rule", "persistent label=kv_cache*",
                     "--rule", "persistent api=wgpuDeviceCreateBuffer size>=8MiB once", "--",
                     scenario("wgpu_decode"), "3"]).verdict()
    eq(v["violations"], [], "no violation of a class a buffer never stays in")
    eq([(r["label"], r["bytes"], r["count"]) for r in v["retained"]],
       [("kv_cache", 32 * MiB, 4)], "the kv_cache class")


@test
def once_and_max_when_the_label_is_set_later_on_real_dawn():
    """wgpu labels: a buffer labelled by wgpuBufferSetLabel, and a texture by
    wgpuTextureSetLabel, after creation, join their class then and are checked then."""
    if not os.path.exists(os.path.join(harness.BIN, "wgpu")):
        return "skip"
    size = 4096
    v = run_gpuleak(["run", "--interval", "0",
                     "--rule", "persistent label=renamed max=1KiB",
                     "--rule", "persistent label=*e* once", "--",
                     scenario("wgpu"), "labels", str(size)]).verdict()
    eq([(x["kind"], x["api"], x["site"].split("+")[0], x["bytes"], x["count"])
        for x in v["violations"]], [
        ("once", "wgpuDeviceCreateBuffer", "alloc_kv", size, 1),
        ("once", "wgpuDeviceCreateBuffer", "alloc_kv", size, 1),
        ("max", "wgpuDeviceCreateBuffer", "alloc_late", size, 1),     # wgpuBufferSetLabel
        ("once", "wgpuDeviceCreateBuffer", "alloc_long", size, 1),
        ("once", "wgpuDeviceCreateTexture", "alloc_tex", 16384, 1),   # wgpuTextureSetLabel
    ], "violations in order, with the classes SetLabel gave")
