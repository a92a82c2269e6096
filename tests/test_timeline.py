# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Leak timelines: steps from a symbol, NVTX, syncs and time; per-site growth with exact
slopes; sawtooth requests; a leak that starts late; time to OOM; the CI gate's exit codes.
Every NDJSON record is checked against docs/gpuleak.schema.json by the harness."""
import os
import re

import harness
from harness import Attached, check, eq, leak_sites, run_gpuleak, run_plain, scenario, test

MiB = 1 << 20
SYM = ["--step", "sym:timeline:step_boundary"]


def timeline(gl_args, steps, leak_a, leak_b=0, start_b=0, req=0, gap=5, expect_rc=0,
             req_leak=0):
    args = ["run", "--interval", "0"] + gl_args + [
        "--", scenario("timeline"), str(steps), str(leak_a), str(leak_b), str(start_b), str(req),
        str(gap), "0", str(req_leak)]
    return run_gpuleak(args, expect_rc=expect_rc)


def growth(v):
    return {g["site"].split("+")[0]: g for g in v["growth"]}


def within(actual, expected, rel, what):
    check(abs(actual - expected) <= rel * expected,
          f"{what}: {actual} not within {rel:.0%} of {expected}")


@test
def one_site_47_mib_per_step_among_noise():
    res = timeline(SYM, 20, 47 * MiB)
    v = res.verdict()
    g = growth(v)
    eq(sorted(g), ["leak_a"], "only the leaking site grows (noise, kv_cache_init do not)")
    within(g["leak_a"]["slope_bytes_per_step"], 47 * MiB, 0.01, "slope")
    check(g["leak_a"]["r2"] > 0.999, f"linear: r2 {g['leak_a']['r2']}")
    eq(g["leak_a"]["first_step"], 0, "first step")
    check(g["leak_a"]["slope_bytes_per_s"] > 0, "a slope per second too")
    steps = [r for r in res.records if r["type"] == "step"]
    eq([s["step"] for s in steps], list(range(-1, 20)), "init + 20 steps, one NDJSON record each")
    eq(v["steps"], 21, "steps in the verdict")
    eq(v["step_source"], "sym", "step source")
    leak = [l for l in v["leaks"] if l["site"].startswith("leak_a+")][0]
    within(leak["slope_bytes_per_step"], 47 * MiB, 0.01, "slope on the leak entry")
    eq(leak["bytes"], 20 * 47 * MiB, "leaked bytes")


@test
def two_sites_at_different_rates_one_from_step_30():
    v = timeline(SYM, 45, 3 * MiB, leak_b=MiB, start_b=30).verdict()
    g = growth(v)
    eq(sorted(g), ["leak_a", "leak_b"], "both grow")
    within(g["leak_a"]["slope_bytes_per_step"], 3 * MiB, 0.01, "leak_a slope")
    within(g["leak_b"]["slope_bytes_per_step"], MiB, 0.01, "leak_b slope")
    eq(g["leak_a"]["first_step"], 0, "leak_a starts at once")
    eq(g["leak_b"]["first_step"], 30, "leak_b starts at step 30")
    eq([x["site"].split("+")[0] for x in v["growth"]], ["leak_a", "leak_b"], "fastest first")


@test
def sawtooth_requests_are_not_leaks():
    v = timeline(SYM, 40, 0, req=5).verdict()
    eq(v["growth"], [], "growth inside a request that returns to baseline is no leak")


REQ = ["--request", "sym:timeline:request_begin,request_end"]


@test
def requests_sample_sites_between_requests():
    """--request: a request's working set (1 MiB per step, freed at its end) never enters
    the step series; what requests leave behind (3 MiB each) is a leak with its bytes per
    request. Without --request the working set shows in the suspect column mid-request."""
    res = timeline(SYM + REQ, 40, 0, req=5, req_leak=3 * MiB)
    v = res.verdict()
    steps = [r for r in res.records if r["type"] == "step"]
    eq(v["requests"], 8, "requests completed: 40 steps of 5-step requests")
    eq(sum(s["requests"] for s in steps), 8, "requests over the step records")
    eq([s["requests_in_flight"] for s in steps[1:6]], [1, 1, 1, 1, 0],
       "in flight during a request, none after its end")
    eq(sorted(growth(v)), ["request_leak"], "only what requests leave behind grows")
    within(growth(v)["request_leak"]["bytes_per_request"], 3 * MiB, 0.001, "bytes per request")
    eq(leak_sites(v)[("cudaMalloc", "request_leak")], (24 * MiB, 8), "leaked by requests")
    check(all(s["suspect_bytes"] % (3 * MiB) == 0 for s in steps),
          f"suspect bytes are request leaks only: {[s['suspect_bytes'] for s in steps]}")
    check(any(s["suspect_bytes"] for s in steps), "and they are suspect")
    res = timeline(SYM, 40, 0, req=5, req_leak=3 * MiB)
    steps = [r for r in res.records if r["type"] == "step"]
    eq(res.verdict()["requests"], 0, "no requests without --request")
    check(any(s["suspect_bytes"] % (3 * MiB) for s in steps),
          "without --request the working set of requests shows as suspect mid-request")


@test
def steps_from_nvtx_ranges():
    res = timeline(["--step", "nvtx:step"], 12, 2 * MiB)
    v = res.verdict()
    eq(v["step_source"], "nvtx", "step source")
    eq(v["steps"], 13, "init + one step per 'step' range")
    within(growth(v)["leak_a"]["slope_bytes_per_step"], 2 * MiB, 0.01, "slope over NVTX steps")


@test
def nvtx_in_attach_mode_says_there_is_nothing_to_probe():
    a = Attached("timeline", [3, 0, 0, 0, 0, 1], gl_args=["--step", "nvtx:step"])
    try:
        a.gl.wait_line("no NVTX entry points to probe", stream="err")
        a.target.send()
        a.target.wait_line("done")
        a.target.send()
        a.finish()
    finally:
        a.cleanup()


@test
def steps_from_syncs_and_time():
    v = run_gpuleak(["run", "--interval", "0", "--step", "sync", "--",
                     scenario("loop"), "12", str(MiB)]).verdict()
    eq(v["step_source"], "sync", "sync steps")
    eq(v["steps"], 13, "one step per cudaStreamSynchronize (+ init)")
    within(growth(v)["leaky_sampler"]["slope_bytes_per_step"], MiB, 0.01, "slope per sync")
    res = timeline(["--step", "interval:50ms"], 80, MiB, gap=10)
    v = res.verdict()
    eq(v["step_source"], "interval", "interval steps")
    # Against the run's own clock, not the 10 ms the scenario sleeps: a loaded machine
    # makes fewer steps per second, and leaks fewer bytes per second.
    check(abs(v["steps"] - v["duration_s"] / 0.05) <= 2,
          f"one step per 50 ms of the {v['duration_s']} s traced: {v['steps']}")
    leak_a = [(r["t_s"], x["live_bytes"]) for r in res.records if r["type"] == "step"
              for x in r["sites"] if x["site"].startswith("leak_a+")]
    rate = (leak_a[-1][1] - leak_a[0][1]) / (leak_a[-1][0] - leak_a[0][0])
    within(growth(v)["leak_a"]["slope_bytes_per_s"], rate, 0.25,
           "the rate leak_a's live bytes grew at, first step to last")


def step_sites(step):
    """{(function, api): (live, allocated, freed, net)} of a step record's sites."""
    return {(x["site"].split("+")[0], x["api"]): (x["live_bytes"], x["allocated_bytes"],
                                                 x["freed_bytes"], x["net_bytes"])
            for x in step["sites"]}


NO_OTHERS = {"count": 0, "allocated_bytes": 0, "freed_bytes": 0, "net_bytes": 0}


@test
def step_records_name_the_sites_that_changed():
    """loop 6 1MiB with a step per cudaStreamSynchronize: each step allocates and frees 2 x
    2 MiB at decode_step (completed by the sync that ends it) and leaks 1 MiB at
    leaky_sampler after it; the init step holds the 64 MiB KV cache."""
    steps = [r for r in run_gpuleak(["run", "--interval", "0", "--step", "sync", "--",
                                     scenario("loop"), "6", str(MiB)]).records
             if r["type"] == "step"]
    eq([s["step"] for s in steps], list(range(-1, 6)), "init + 6 steps")
    eq([(x["site"].split("+")[0], x["class"]) for x in steps[0]["sites"]],
       [("kv_cache_init", "init"), ("decode_step", "init")], "made before the first sync")
    eq({x["class"] for s in steps[1:] for x in s["sites"]}, {"none"}, "made in steps")
    eq(step_sites(steps[0]), {("kv_cache_init", "cudaMalloc"): (64 * MiB, 64 * MiB, 0, 64 * MiB),
                              ("decode_step", "cudaMallocAsync"): (0, 4 * MiB, 4 * MiB, 0)},
       "init step: the KV cache, one step's activations")
    for k in range(1, 6):
        eq(step_sites(steps[k]), {
            ("leaky_sampler", "cudaMalloc"): (k * MiB, MiB, 0, MiB),
            ("decode_step", "cudaMallocAsync"): (0, 4 * MiB, 4 * MiB, 0)},
            f"step {k - 1}: the leak first (largest net), then the activations")
        eq([x["site"].split("+")[0] for x in steps[k]["sites"]], ["leaky_sampler", "decode_step"],
           f"step {k - 1}: order")
    eq(step_sites(steps[6]), {("leaky_sampler", "cudaMalloc"): (6 * MiB, MiB, 0, MiB)},
       "last step: the leak after the last sync")
    for s in steps:
        eq(s["other_sites"], NO_OTHERS, f"step {s['step']}: no other sites")
        eq((sum(x["allocated_bytes"] for x in s["sites"]),
            sum(x["freed_bytes"] for x in s["sites"])),
           (s["allocated_bytes"], s["freed_bytes"]), f"step {s['step']}: sites add up")


@test
def step_records_list_eight_sites_and_sum_the_rest():
    """apis: 9 allocation sites, all in one step (no boundary within the run). The 8 of
    largest |net| are named; alloc_host (3000 B allocated and freed) is the rest."""
    res = run_gpuleak(["run", "--interval", "0", "--step", "interval:1h", "--",
                       scenario("apis")])
    steps = [r for r in res.records if r["type"] == "step"]
    eq(len(steps), 1, "one step")
    st = steps[0]
    eq([(x["site"].split("+")[0], x["net_bytes"]) for x in st["sites"]],
       [("alloc_pitch", 10240), ("alloc_on_device1", 8000), ("alloc_from_pool", 6000),
        ("alloc_host_alloc", 4000), ("alloc_managed", 2000), ("alloc_malloc", 1000),
        ("alloc_async_ptsz", 0), ("alloc_async", 0)],
       "largest |net| first, then most allocated + freed")
    eq(step_sites(st)[("alloc_async_ptsz", "cudaMallocAsync_ptsz")], (0, 7000, 7000, 0),
       "allocated and freed in the step")
    eq(st["other_sites"], {"count": 1, "allocated_bytes": 3000, "freed_bytes": 3000,
                           "net_bytes": 0}, "the ninth site, summed")
    eq((st["allocated_bytes"], st["freed_bytes"]), (46240, 15000), "the step's own totals")


@test
def time_to_oom_projection():
    v = timeline(SYM + ["--device-mem", "2GiB"], 20, 10 * MiB).verdict()
    p = v["projection"]
    eq(p["capacity_bytes"], 2 << 30, "capacity")
    eq(p["used_bytes"], 64 * MiB + 200 * MiB, "traced device bytes in use")
    within(p["growth_bytes_per_step"], 10 * MiB, 0.01, "growth per step")
    expected = ((2 << 30) - 264 * MiB) / (10 * MiB)
    within(v["projected_oom_steps"], expected, 0.01, "steps to OOM")
    check(p["seconds_to_oom"] > 0, "a time too")
    v = timeline(SYM, 8, MiB).verdict()
    eq(v["projection"], None, "no device size, no NVML: no projection")


@test
def terminal_step_lines_trend_growth_and_oom():
    """What an engineer watching the terminal sees: a line per step (live, persistent,
    pending, suspect bytes and a sparkline of live), the growing sites with their slopes,
    and the time to OOM."""
    res = run_gpuleak(["run", "--interval", "0"] + SYM +
                      ["--device-mem", "1GiB", "--rule", "persistent site=kv_cache_grow", "--",
                       scenario("timeline"), "12", str(MiB), "0", "0", "0", "5", "4"])
    rows = re.findall(r"^ +[\d.]+s +(\d+) +(-?\d+) +([\d.]+ [KMG]?i?B) +([\d.]+ [KMG]?i?B) +"
                      r"([\d.]+ [KMG]?i?B) +([\d.]+ [KMG]?i?B) +([▁▂▃▄▅▆▇█]+)$", res.out, re.M)
    eq([int(r[1]) for r in rows], list(range(-1, 12)), "a line per step, the set-up first")
    # 64 MiB before the first step; 8 MiB of KV cache per step for 4 steps, 1 MiB of leak_a
    eq([r[2] for r in rows], ["64.0 MiB", "73.0 MiB", "82.0 MiB", "91.0 MiB"] +
       [f"{m} MiB" for m in range(100, 109)], "live")
    eq([r[3] for r in rows], ["0 B", "8.00 MiB", "16.0 MiB", "24.0 MiB"] + ["32.0 MiB"] * 9,
       "persistent: the KV cache rule")
    eq({r[4] for r in rows}, {"0 B"}, "nothing pending")
    # leak_a is suspect once it has grown past the warm-up (3) for min-growth-steps (5)
    eq([r[5] for r in rows], ["0 B"] * 8 + ["8.00 MiB", "9.00 MiB", "10.0 MiB", "11.0 MiB",
                                            "12.0 MiB"], "suspect")
    eq([len(r[6]) for r in rows], list(range(1, 14)), "the sparkline grows a bar per step")
    check(all(r[6].startswith("▁") and r[6].endswith("█") for r in rows[1:]),
          "from the lowest step to this one, the highest (live only rises here)")
    check("    TIME     PID   STEP       LIVE    PERSIST    PENDING    SUSPECT  TREND" in res.out,
          "the header")
    m = re.search(r"^ +1\.00 MiB/st +[\d.]+ [KMG]iB/s +1\.000 +0 +12\.0 MiB  "
                  r"leak_a\+0x[0-9a-f]+ \(timeline\) \(cudaMalloc\)$", res.out, re.M)
    check(m, f"growing sites: 1 MiB per step, r2 1, from step 0, 12 MiB now:\n{res.out}")
    check(re.search(r"^device 0: 108 MiB of 1\.00 GiB in use; OOM in ~916 steps \(~[\d.]+ "
                    r"[a-z]+\)$", res.out, re.M),
          f"(1024 - 108) MiB left at 1 MiB per step: 916 steps:\n{res.out}")


@test
def gate_waits_for_the_warmup():
    """A KV cache that fills during the first 3 steps (8 MiB each) and then stays: with
    --warmup-steps 0 its filling is growth and the gate fails; with the warm-up covering
    those steps it passes. --min-growth-steps 2 so that 3 steps of filling are enough."""
    def run(warmup, rc):
        return run_gpuleak(["run", "--interval", "0"] + SYM +
                           ["--fail-on-leak", "--warmup-steps", str(warmup),
                            "--min-growth-steps", "2", "--", scenario("timeline"), "12", "0",
                            "0", "0", "0", "5", "3"], expect_rc=rc)
    res = run(0, 3)
    v = res.verdict()
    eq(sorted(growth(v)), ["kv_cache_grow"], "filling counted as growth without a warm-up")
    eq([g["kind"] for g in v["gate"]["violations"]], ["growth"], "the gate names it")
    check(re.search(r"^GATE: kv_cache_grow\+0x[0-9a-f]+ \(timeline\) grows ", res.out, re.M),
          f"and says so:\n{res.out}")
    v = run(3, 0).verdict()
    eq((v["growth"], v["gate"]["failed"]), ([], False), "past the warm-up it is flat: passes")


@test
def ci_gate_exit_codes():
    res = timeline(SYM + ["--fail-on-leak"], 12, MiB, expect_rc=3)
    gate = res.verdict()["gate"]
    eq((gate["enabled"], gate["failed"]), (True, True), "gate failed")
    eq([x["kind"] for x in gate["violations"]], ["growth"], "the growth leak")
    check("GATE:" in res.out, "says why on stdout")
    res = timeline(SYM + ["--fail-on-leak", "--max-growth", "2MiB"], 12, MiB)
    eq(res.verdict()["gate"]["failed"], False, "growth under --max-growth passes")
    res = timeline(SYM + ["--fail-on-leak", "--max-growth", "2MiB", "--max-live-at-exit", "0"],
                   12, MiB, expect_rc=3)
    eq([x["kind"] for x in res.verdict()["gate"]["violations"]], ["live_at_exit"],
       "bytes leaked at exit")
    res = timeline(SYM + ["--fail-on-leak", "--max-live-at-exit", "0"], 12, 0)
    eq(res.rc, 0, "clean run passes the gate: the KV cache, made before the first step, is "
       "retained by init")
    res = timeline(SYM + ["--fail-on-leak", "--rule", "persistent site=kv_cache_init once",
                          "--rule", "persistent site=leak_a max=4MiB"], 12, MiB, expect_rc=3)
    gate = res.verdict()["gate"]["violations"]
    eq([{k: x[k] for k in ("kind", "violation", "rule", "source", "api", "bytes", "count")}
        for x in gate],
       [{"kind": "rule", "violation": "max", "rule": "persistent site=leak_a max=4MiB",
         "source": "--rule #2:1", "api": "cudaMalloc", "bytes": 5 * MiB, "count": 5}],
       "a rule violation fails the gate, naming its rule")
    check(gate[0]["site"].startswith("leak_a+0x"), f"and its site: {gate[0]['site']}")
    gate_lines = [l for l in res.out.splitlines() if l.startswith("GATE:")]
    eq(gate_lines, [f"GATE: rule violation: max, 5.00 MiB at {gate[0]['site']} "
                    "[--rule #2:1: persistent site=leak_a max=4MiB]"], "on stdout too")
    p = run_plain([harness.GPULEAK, "run", "--help"])
    check("3 --fail-on-leak found leaks" in " ".join(p.stdout.split()), "exit codes in --help")


def retained(v):
    """{(function, retained_by): (bytes, count)} of a verdict's retained entries."""
    return {(r["site"].split("+")[0], r["retained_by"]): (r["bytes"], r["count"])
            for r in v["retained"]}


@test
def memory_made_before_the_first_step_is_retained_by_init():
    """timeline 12 1MiB: kv_cache_init allocates 64 MiB before the first step_boundary and
    keeps it. With steps the program marks (sym:, nvtx:, sync) that is init, not a leak,
    unless a rule decides; time slices mark no phase of the program."""
    gate = ["--fail-on-leak", "--max-growth", "2MiB", "--max-live-at-exit", "12MiB"]
    res = timeline(SYM + gate, 12, MiB)
    v = res.verdict()
    eq(leak_sites(v), {("cudaMalloc", "leak_a"): (12 * MiB, 12)}, "leaks: made in steps")
    eq(retained(v), {("kv_cache_init", "init"): (64 * MiB, 1)}, "retained by init")
    eq((v["init_bytes"], v["init_count"], v["persistent_bytes"]), (64 * MiB, 1, 0),
       "init bytes, nothing persistent")
    eq(v["live_bytes"], 76 * MiB, "all of it still live")
    within(growth(v)["leak_a"]["slope_bytes_per_step"], MiB, 0.01, "growth as before")
    eq(v["gate"]["failed"], False, "12 MiB leaked, within --max-live-at-exit 12MiB")
    check("of which made before the first step: 64.0 MiB in 1 (retained by init)" in res.out,
          f"said in the text report:\n{res.out}")
    check(re.search(r"64\.0 MiB +1 +cudaMalloc .*kv_cache_init\+0x\w+ \(timeline\) "
                    r"\(before the first step\)", res.out), f"and listed:\n{res.out}")
    # NVTX ranges mark steps too
    v = timeline(["--step", "nvtx:step"], 12, MiB).verdict()
    eq(retained(v), {("kv_cache_init", "init"): (64 * MiB, 1)}, "nvtx: retained by init")
    # A rule says otherwise: it must be gone at the end, so it is a leak (and a violation).
    res = timeline(SYM + gate + ["--rule", "persistent site=kv_cache_init release=session-end"],
                   12, MiB, expect_rc=3)
    v = res.verdict()
    eq(leak_sites(v), {("cudaMalloc", "leak_a"): (12 * MiB, 12),
                       ("cudaMalloc", "kv_cache_init"): (64 * MiB, 1)}, "the rule decides")
    eq((v["init_bytes"], v["retained"]), (0, []), "nothing retained by init")
    eq([x["kind"] for x in v["gate"]["violations"]], ["live_at_exit", "rule"],
       "76 MiB leaked at exit, and the rule's violation")
    # A persistent rule, phase=init or not, keeps it as the rule's.
    v = timeline(SYM + ["--rule", "persistent site=kv_cache_init phase=init"], 12, MiB).verdict()
    eq(retained(v), {("kv_cache_init", "rule"): (64 * MiB, 1)}, "retained by the rule")
    eq((v["init_bytes"], v["persistent_bytes"]), (0, 64 * MiB), "persistent, not init")
    # Time slices: the first slice is no phase of the program.
    res = timeline(["--step", "interval:50ms"] + gate, 12, MiB, expect_rc=3)
    v = res.verdict()
    eq(leak_sites(v), {("cudaMalloc", "leak_a"): (12 * MiB, 12),
                       ("cudaMalloc", "kv_cache_init"): (64 * MiB, 1)}, "interval: leaks")
    eq((v["init_bytes"], v["retained"]), (0, []), "interval: no init")


@test
def bad_step_specs():
    for spec in ("interval:soon", "sym:nofile", "bogus", "nvtx:"):
        p = run_plain([harness.GPULEAK, "run", "--step", spec, "--", "true"])
        eq(p.returncode, 2, f"--step {spec}")
        check("--step" in p.stderr, f"message for {spec}: {p.stderr}")
    p = run_plain([harness.GPULEAK, "run", "--step", "sym:/nonexistent:f", "--", "true"])
    eq((p.returncode, p.stderr),
       (2, "gpuleak: --step sym:/nonexistent:f: /nonexistent: No such file or directory\n"),
       "a marker on a missing file is a usage error")


# ---- shutdown: what a program releases after its last allocation is not a step ----

SHUTDOWN_STEPS = (["--step", "sym:shutdown:decode_step"], ["--step", "sync"])
SHUTDOWN_REQ = ["--request", "sym:shutdown:begin_request,end_request"]


def shutdown(gl_args, steps, keep, end, req=0, expect_rc=0, cmd="run"):
    args = [cmd] + (["-o", gl_args.pop(0)] if cmd == "record" else []) + [
        "--interval", "0"] + gl_args + ["--", scenario("shutdown"), str(steps), str(keep), end,
                                         str(req)]
    return run_gpuleak(args, expect_rc=expect_rc)


def fn(name):
    return name.split("+")[0]


def check_leak_released_at_shutdown(v, how, api, ended, peak_step, what):
    """shutdown 40 1MiB END: 1 MiB kept per step, all of it (and the 16 MiB KV cache)
    released after the last allocation, keep_step(39)."""
    eq(v["live_bytes"], 0, f"{what}: nothing live at exit")
    eq([(fn(g["site"]), g["slope_bytes_per_step"], g["r2"], g["first_step"], g["bytes"],
         g["live_bytes"]) for g in v["growth"]],
       [("keep_step", float(MiB), 1.0, 0, 40 * MiB, 0)],
       f"{what}: 1 MiB per step, exactly, up to the last allocation; none of it live at exit")
    g = v["growth"][0]
    eq(g["ended"], ended, f"{what}: how its memory ended")
    eq(g["shutdown"], {"released_bytes": 40 * MiB, "released_count": 40,
                       "by": [{"how": how, "api": api, "bytes": 40 * MiB, "count": 40}]},
       f"{what}: released at shutdown")
    eq([(s["frames"][0]["function"], s["frames"][1]["function"], s["bytes"], s["count"],
         s["bytes_per_step"]) for s in g["stacks"]],
       [("keep_step", "main", 40 * MiB, 40, float(MiB))], f"{what}: the growing stack")
    sd = v["shutdown"]
    eq((sd["step"], sd["live_bytes"], sd["live_count"], sd["released_bytes"],
        sd["released_count"], sd["by"]),
       (39, 56 * MiB, 41, 56 * MiB, 41, [{"how": how, "api": api, "bytes": 56 * MiB,
                                         "count": 41}]),
       f"{what}: the shutdown: after keep_step(39), 40 blocks and the KV cache")
    eq([(p["device"], p["webgpu"], p["bytes"], p["count"], p["step"], p["live_bytes"])
        for p in v["peak"]], [(0, None, 57 * MiB, 41, peak_step, 0)],
       f"{what}: the peak: 39 blocks, the KV cache and step 39's scratch")
    eq([(fn(s["site"]), s["bytes"], s["count"], s["class"]) for s in v["peak"][0]["sites"]],
       [("keep_step", 39 * MiB, 39, "none"), ("kv_cache_init", 16 * MiB, 1, "init"),
        ("scratch", 2 * MiB, 1, "none")], f"{what}: the live set at the peak, by site")
    eq([(x["kind"], x["bytes_per_step"]) for x in v["gate"]["violations"]],
       [("growth", float(MiB))], f"{what}: the gate fails on the growth")


@test
def cleanup_at_shutdown_does_not_cancel_growth():
    """shutdown.c keeps 1 MiB per decode step and, after its last step, releases everything:
    cudaFree of every block and of the KV cache, then cudaDeviceSynchronize (under --step sync
    a step that only frees), or cudaDeviceReset. The growth is judged on the steps up to the
    last allocation, exactly as when the program exits with its memory live; the verdict says
    how the memory ended. Live (sym: and sync steps) and from a capture."""
    for end, how, api, ended in (
            ("free", "freed", "cudaFree", "freed at shutdown (cudaFree)"),
            ("reset", "owner", "cudaDeviceReset", "released at shutdown by cudaDeviceReset")):
        for step, nsteps, peak_step in zip(SHUTDOWN_STEPS, (41, 42 if end == "free" else 41),
                                           (39, 38)):
            what = f"{end}, {step[1]}"
            res = shutdown(["--fail-on-leak"] + step, 40, MiB, end, expect_rc=3)
            v = res.verdict()
            eq(v["steps"], nsteps, f"{what}: steps")
            check_leak_released_at_shutdown(v, how, api, ended, peak_step, what)
            check(re.search(r"^ +1\.00 MiB/st .* keep_step\+0x[0-9a-f]+ \(shutdown\) "
                            r"\(cudaMalloc\)\n +" + re.escape(ended) + r"\n +from "
                            r"__libc_start_call_main \(libc\.so\.6\) → main \(shutdown\) → "
                            r"keep_step\+0x[0-9a-f]+ \(shutdown\)\n", res.out, re.M),
                  f"{what}: the growing site, how it ended and its path:\n{res.out}")
            check(re.search(r"^shutdown \(after the last allocation, step 39 at [0-9.]+ s\): "
                            r"released 56\.0 MiB of 56\.0 MiB in 41 allocations", res.out,
                            re.M), f"{what}: the shutdown line:\n{res.out}")
            check(re.search(r"^  device 0: 57\.0 MiB in 41 allocations at [0-9.]+ s, step "
                            rf"{peak_step}; 0 B live at the end\n", res.out, re.M),
                  f"{what}: the peak:\n{res.out}")
            check("no site grows" not in res.out, f"{what}: a growth leak")
    cap = harness.tmpfile(".glc")
    try:
        rec = shutdown([cap, "--step", "sym:shutdown:decode_step"], 40, MiB, "reset",
                       cmd="record")
        check_leak_released_at_shutdown(rec.verdict(), "owner", "cudaDeviceReset",
                                        "released at shutdown by cudaDeviceReset", 39, "record")
        for step, peak_step in zip(SHUTDOWN_STEPS, (39, 38)):
            v = run_gpuleak(["report", cap, "--fail-on-leak"] + step, expect_rc=3).verdict()
            check_leak_released_at_shutdown(v, "owner", "cudaDeviceReset",
                                            "released at shutdown by cudaDeviceReset",
                                            peak_step, f"report {step[1]}")
    finally:
        if os.path.exists(cap):
            os.unlink(cap)


@test
def a_leak_still_live_at_exit_is_judged_the_same():
    """The same loop exiting with its memory live: the same slope and bytes, "still live at
    exit", the leak listed; nothing released at shutdown, no peak section."""
    for step in SHUTDOWN_STEPS:
        res = shutdown(["--fail-on-leak"] + step, 40, MiB, "exit", expect_rc=3)
        v = res.verdict()
        eq([(fn(g["site"]), g["slope_bytes_per_step"], g["bytes"], g["live_bytes"], g["ended"],
             g["shutdown"]) for g in v["growth"]],
           [("keep_step", float(MiB), 40 * MiB, 40 * MiB, "still live at exit",
             {"released_bytes": 0, "released_count": 0, "by": []})], f"{step[1]}: growth")
        eq(leak_sites(v)[("cudaMalloc", "keep_step")], (40 * MiB, 40), f"{step[1]}: the leak")
        eq((v["shutdown"]["released_bytes"], v["shutdown"]["live_bytes"]), (0, 56 * MiB),
           f"{step[1]}: nothing released after the last allocation")
        check("peak (" not in res.out and "shutdown (" not in res.out,
              f"{step[1]}: no peak or shutdown section when the memory is still live:\n"
              f"{res.out}")


@test
def clean_shutdowns_and_sawtooths_stay_clean():
    """No growth with nothing kept (freed or reset at shutdown), and none for a sawtooth whose
    requests free what they kept, also when the last request's frees fall after the last step
    marker (REQUEST_STEPS dividing STEPS), also for two long requests, and also with the
    requests marked (--request)."""
    cases = [(0, "free", 0), (0, "reset", 0), (MiB, "free", 5), (MiB, "reset", 8),
             (MiB, "exit", 10), (MiB, "free", 20)]
    for keep, end, req in cases:
        for step in SHUTDOWN_STEPS:
            for marks in ([], SHUTDOWN_REQ) if req else ([],):
                what = f"keep {keep} {end} requests of {req} {step[1]} {marks}"
                v = shutdown(["--fail-on-leak"] + step + marks, 40, keep, end, req).verdict()
                eq(v["growth"], [], f"{what}: no growth")
                if marks and req:
                    eq(v["requests"], 40 // req, f"{what}: requests")
    # the last request's 5 blocks go after the last allocation: in the shutdown, as frees
    v = shutdown(["--step", "sym:shutdown:decode_step"], 40, MiB, "free", 5).verdict()
    eq((v["shutdown"]["released_bytes"], v["shutdown"]["released_count"], v["shutdown"]["by"]),
       (21 * MiB, 6, [{"how": "freed", "api": "cudaFree", "bytes": 21 * MiB, "count": 6}]),
       "the last request's blocks and the KV cache, freed at shutdown")


@test
def folded_growth_and_peak_after_everything_was_released():
    """--folded is empty when the shutdown released everything; --folded-growth names the
    growing stack by its bytes per step, --folded-peak the live set at the peak. Live and
    from a capture."""
    paths = {k: harness.tmpfile(".folded") for k in ("live", "growth", "peak")}
    cap = harness.tmpfile(".glc")
    pics = ["--folded", paths["live"], "--folded-growth", paths["growth"], "--folded-peak",
            paths["peak"]]
    want_growth = ["shutdown;__libc_start_call_main;main;keep_step;cudaMalloc 1048576"]
    want_peak = ["shutdown;__libc_start_call_main;main;decode_step;scratch;cudaMalloc 2097152",
                 "shutdown;__libc_start_call_main;main;keep_step;cudaMalloc 40894464",
                 "shutdown;__libc_start_call_main;main;kv_cache_init;cudaMalloc 16777216"]

    def read(k):
        with open(paths[k]) as f:
            return sorted(f.read().splitlines())
    try:
        shutdown([cap, "--step", "sym:shutdown:decode_step"] + pics, 40, MiB, "reset",
                 cmd="record")
        for how in ("record", "report"):
            if how == "report":
                for p in paths.values():
                    os.unlink(p)
                run_gpuleak(["report", cap, "--step", "sym:shutdown:decode_step"] + pics)
            eq(read("live"), [], f"{how}: nothing live at the end")
            eq(read("growth"), want_growth, f"{how}: who grows, in bytes per step")
            eq(read("peak"), want_peak, f"{how}: the live set at the peak")
    finally:
        for p in list(paths.values()) + [cap]:
            if os.path.exists(p):
                os.unlink(p)
