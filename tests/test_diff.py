# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gpuleak diff: what changed between two runs. Two builds of one program (diffapp and, on
real Dawn, wgpu_diff: BASE, and NEW with a per-step leak at a new site and another code
layout, so every address differs) recorded under the stand-in CUDA runtime, then compared
as captures, as the NDJSON verdicts of the same runs, and one of each; exact slopes, bytes
and pairings; the gate's exit statuses; runs that crashed, ran shorter or completed fewer
requests compared step for step; processes paired by command and rank; input errors with
their positions."""
import json
import os
import re
import shutil
import subprocess

import harness
from harness import (BIN, Fail, check, check_sanitizers, eq, read_ndjson, run_plain, test,
                     tmpfile)

KiB, MiB = 1 << 10, 1 << 20
STEP = ["--step", "sym:diffapp:step_marker"]
REQ = ["--request", "sym:diffapp:request_begin,request_end"]
# diffapp: per step 64 KiB at sampler_keep in both builds, 1 MiB more at cache_logits in NEW.
BASE_SLOPE, NEW_SLOPE = 64 * KiB, 64 * KiB + MiB
EXIT_REGRESSION = 5


def gl():
    return harness.GPULEAK


def build(which, prog="diffapp"):
    path = os.path.join(BIN, f"diff-{which}", prog)
    check(os.path.exists(path), f"{path} not built (make standins)")
    return path


_runs = {}


def recorded(key, prog, args, opts=STEP, expect_rc=0):
    """`gpuleak record` of prog ARGS, once per test session: (capture, its live NDJSON)."""
    if key in _runs:
        return _runs[key]
    glc, live = tmpfile(".glc"), tmpfile(".ndjson")
    cmd = [gl(), "record", "-o", glc, "--json", live, "--interval", "0"] + list(opts) + \
        ["--", prog] + [str(a) for a in args]
    p = run_plain(cmd)
    check_sanitizers(p.stderr)
    eq(p.returncode, expect_rc, f"exit code of {' '.join(cmd)} (stderr: {p.stderr})")
    read_ndjson(live)
    _runs[key] = (glc, live)
    return _runs[key]


def reported(glc, opts=STEP):
    """The NDJSON verdicts `gpuleak report --json` writes of a capture."""
    out = tmpfile(".ndjson")
    p = run_plain([gl(), "report", glc, "--json", out] + list(opts))
    check_sanitizers(p.stderr)
    eq(p.returncode, 0, f"report {glc}: {p.stderr}")
    read_ndjson(out)
    return out


class Diff:
    def __init__(self, p, records):
        self.rc, self.out, self.err, self.records = p.returncode, p.stdout, p.stderr, records

    def procs(self):
        return [r for r in self.records if r["type"] == "diff_process"]

    def proc(self, rank=0):
        ps = [r for r in self.procs() if r["rank"] == rank]
        check(len(ps) == 1, f"one process pair of rank {rank}: {len(ps)}\n{self.out}")
        return ps[0]

    def summary(self):
        s = [r for r in self.records if r["type"] == "diff"]
        eq(len(s), 1, "one diff record, last")
        eq(self.records[-1]["type"], "diff", "the diff record is last")
        return s[0]


def diff(base, new, opts=(), expect_rc=0):
    out = tmpfile(".ndjson")
    cmd = [gl(), "diff", base, new, "--json", out] + list(opts)
    p = run_plain(cmd)
    check_sanitizers(p.stderr)
    eq(p.returncode, expect_rc, f"exit code of {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    recs = read_ndjson(out) if expect_rc in (0, EXIT_REGRESSION) else []
    if os.path.exists(out):
        os.unlink(out)
    return Diff(p, recs)


def site(pp, function, label=None):
    ss = [s for s in pp["sites"] if s["function"] == function and s["label"] == label]
    check(len(ss) == 1, f"one site {function} {label}: {[s['function'] for s in pp['sites']]}")
    return ss[0]


def tri(v):
    """(base, new, delta) of a compared number."""
    check(v is not None, "a number both inputs have")
    return (v["base"], v["new"], v["delta"])


def base12():
    return recorded("base12", build("base"), [12])


def new12():
    return recorded("new12", build("new"), [12])


def check_builds(d):
    """What diffapp 12 in BASE and NEW give, whichever inputs the diff read."""
    pp = d.proc()
    eq(pp["match"], "paired", "the two runs' processes are paired")
    eq((pp["base"]["comm"], pp["new"]["comm"]), ("diffapp", "diffapp"), "by command")
    eq(pp["compared_at"], {"by": "end", "base_step": None, "new_step": None, "requests": None,
                           "caveat": None}, "same steps, both exited 0: compared at the end")
    eq(tri(pp["steps"]), (13, 13, 0), "steps: 12 marked and the one before")
    eq(tri(pp["growth_bytes_per_step"]), (BASE_SLOPE, NEW_SLOPE, MiB), "growth per step")
    eq(tri(pp["leaked_bytes"]), (12 * 64 * KiB, 12 * 64 * KiB + 12 * MiB, 12 * MiB),
       "live, not retained")
    eq(tri(pp["init_bytes"]), (16 * MiB, 16 * MiB, 0), "retained by init")
    eq(tri(pp["live_bytes"]), (16 * MiB + 12 * 64 * KiB, 28 * MiB + 12 * 64 * KiB, 12 * MiB),
       "live")
    eq((pp["sites_paired"], pp["sites_only_base"], pp["sites_only_new"]),
       (pp["sites_paired"], 0, 1), "one site only in NEW")
    new = pp["sites"][0]
    eq((new["match"], new["function"], new["module"], new["api"]),
       ("only_new", "cache_logits", "diffapp", "cudaMalloc"), "the largest difference first")
    eq(new["base"], None, "no BASE side")
    eq(tri(new["slope_bytes_per_step"]), (0, MiB, MiB), "the new leak's slope")
    eq(tri(new["live_bytes"]), (0, 12 * MiB, 12 * MiB), "its bytes")
    eq(tri(new["live_count"]), (0, 12, 12), "its allocations")
    for fn in ("sampler_keep", "weights_init"):
        s = site(pp, fn)
        eq((s["match"], s["matched_by"], s["changed"]), ("paired", "function", False),
           f"{fn}: paired by function and module despite the build")
        check(s["base"]["offset"] != s["new"]["offset"] and s["base"]["site"] != s["new"]["site"],
              f"{fn}: at another offset in NEW: {s['base']['site']} vs {s['new']['site']}")
    eq(tri(site(pp, "sampler_keep")["slope_bytes_per_step"]), (BASE_SLOPE, BASE_SLOPE, 0),
       "the leak both have: the same slope")
    eq(tri(site(pp, "sampler_keep")["live_bytes"]), (12 * 64 * KiB, 12 * 64 * KiB, 0),
       "and bytes")
    eq(tri(site(pp, "weights_init")["init_bytes"]), (16 * MiB, 16 * MiB, 0), "weights: init")
    return pp


@test
def diff_finds_the_leak_a_build_added():
    """Captures of diffapp 12 in both builds: the new site is only in NEW with its exact slope
    (1 MiB/step) and bytes, the sites both have are paired by function and module although
    every address and two call-site offsets moved, and nothing else changed; the text puts
    the new site first."""
    d = diff(base12()[0], new12()[0], STEP)
    pp = check_builds(d)
    act = site(pp, "activations")
    eq((act["match"], act["matched_by"], act["changed"]), ("paired", "site", False),
       "activations: same function and offset")
    eq(tri(act["allocs"]), (24, 24, 0), "allocations made, from the captures")
    eq(tri(act["peak_bytes"]), (0, 0, 0), "freed in their step: nothing at a step end")
    eq(tri(site(pp, "cache_logits")["allocs"]), (0, 12, 12), "the new site's allocations")
    eq(pp["sites_unchanged"], 3, "three sites the same")
    eq(tri(pp["peak_bytes"]), (16 * MiB + 12 * 64 * KiB, 28 * MiB + 12 * 64 * KiB, 12 * MiB),
       "peak at a step end")
    s = d.summary()
    eq((s["base"]["kind"], s["new"]["kind"], s["mixed"], s["regression"]),
       ("capture", "capture", False, False), "two captures, no gate")
    check(re.search(r"^  new +0 B +12\.0 MiB +\+12\.0 MiB +0 B +1\.00 MiB +\+1\.00 MiB +"
                    r"cache_logits \(diffapp\) cudaMalloc$", d.out, re.M),
          f"the new site's row:\n{d.out}")
    rows = [l for l in d.out.splitlines() if re.match(r"  (new|same|more|less|gone) ", l)]
    check(rows and "cache_logits" in rows[0], f"largest difference first: {rows}")
    check(re.search(r"call site moved: \+0x[0-9a-f]+ -> \+0x[0-9a-f]+", d.out), "says it moved")
    check(all(len(l) <= 100 for l in d.out.splitlines()), "100 columns")


def _without(pp, keys=("allocs",)):
    """A diff_process record without what only a capture has, for comparing inputs."""
    pp = json.loads(json.dumps(pp))
    for s in pp["sites"]:
        for k in keys:
            s.pop(k, None)
    return pp


@test
def diff_ndjson_verdicts_agree_with_captures():
    """The same two runs as NDJSON verdicts (report --json of the captures, and the live
    verdicts record --json wrote) give the diff of the captures, but for what only a
    capture has (allocations per site: null); a capture against NDJSON compares what both
    have: the sites the verdicts list, the same numbers."""
    (bg, bl), (ng, nl) = base12(), new12()
    caps = diff(bg, ng, STEP)
    for how, b, n in (("report --json", reported(bg), reported(ng)), ("record --json", bl, nl)):
        d = diff(b, n)
        pp = check_builds(d)
        eq(d.summary()["base"]["kind"], "ndjson", f"{how}: NDJSON inputs")
        eq(all(s["allocs"] is None for s in pp["sites"]), True, f"{how}: no allocation counts")
        eq(_without(pp), _without(caps.proc()), f"{how}: the captures' diff")
    # standard input: NDJSON or a capture, either side; --json - the records alone
    for inp, other in ((bl, nl), (bg, ng)):
        with open(inp, "rb") as f:
            p = subprocess.run([gl(), "diff", "-", other, "--json", "-"] + STEP, stdin=f,
                               capture_output=True, timeout=harness.TIMEOUT,
                               env=harness.gpuleak_env())
        check_sanitizers(p.stderr.decode())
        eq(p.returncode, 0, f"diff - {other}: {p.stderr.decode()}")
        recs = [json.loads(l) for l in p.stdout.decode().splitlines()]
        eq([r["type"] for r in recs], ["diff_process", "diff"], "--json -: the records on stdout")
        eq(recs[-1]["base"]["file"], "standard input", "named as such")
        check("diffapp (rank 0)" in p.stderr.decode(), "the text on stderr")
        check_builds(Diff(p, recs))
    mixed = diff(bg, nl, STEP)
    pp = check_builds(mixed)
    eq(mixed.summary()["mixed"], True, "one capture, one NDJSON")
    check("rules and step options apply to BASE only" in mixed.err, f"said: {mixed.err}")
    eq(sorted(s["function"] for s in pp["sites"]), ["cache_logits", "sampler_keep",
                                                   "weights_init"],
       "the sites verdicts list (activations held nothing at the end)")
    want = {s["function"]: s for s in _without(caps.proc())["sites"]}
    for s in _without(pp)["sites"]:
        eq(s, want[s["function"]], f"{s['function']}: as between the captures")


@test
def diff_gate_exit_statuses():
    """--fail-on-regression: exit 5 when growth per step rose by more than
    --max-growth-increase (default 0) or live bytes not retained by more than
    --max-live-increase, 0 at or under each; a run against a run of the same build passes;
    NDJSON inputs gate the same."""
    (bg, bl), (ng, nl) = base12(), new12()
    d = diff(bg, ng, STEP + ["--fail-on-regression"], expect_rc=EXIT_REGRESSION)
    g = d.summary()["gate"]
    eq((g["enabled"], g["failed"], d.summary()["regression"]), (True, True, True), "failed")
    eq(g["violations"], [{"kind": "growth", "comm": "diffapp", "rank": 0,
                          "base_pid": d.proc()["base"]["pid"], "new_pid": d.proc()["new"]["pid"],
                          "amount": float(MiB), "limit": 0,
                          "site": "cache_logits (diffapp) cudaMalloc"}], "why")
    check(re.search(r"^GATE: diffapp \(rank 0\): growth per step rose by 1\.00 MiB \(limit 0 B\),\n"
                    r"      most at cache_logits \(diffapp\) cudaMalloc$", d.out, re.M), d.out)
    for limit, rc in (("1MiB", 0), (str(MiB - 1), EXIT_REGRESSION)):
        diff(bg, ng, STEP + ["--fail-on-regression", "--max-growth-increase", limit],
             expect_rc=rc)
    for limit, rc in ((str(12 * MiB), 0), (str(12 * MiB - 1), EXIT_REGRESSION)):
        d = diff(bg, ng, STEP + ["--fail-on-regression", "--max-growth-increase", "1MiB",
                                 "--max-live-increase", limit], expect_rc=rc)
        kinds = [(v["kind"], v["amount"]) for v in d.summary()["gate"]["violations"]]
        eq(kinds, [] if rc == 0 else [("live", 12 * MiB)], f"--max-live-increase {limit}")
    again = recorded("base12b", build("base"), [12])[0]
    d = diff(bg, again, STEP + ["--fail-on-regression", "--max-live-increase", "0"])
    check("GATE: no regression" in d.out, d.out)
    eq(d.proc()["sites_unchanged"], len(d.proc()["sites"]), "BASE twice: every site the same")
    diff(bl, nl, ["--fail-on-regression"], expect_rc=EXIT_REGRESSION)
    diff(bl, nl, ["--fail-on-regression", "--max-growth-increase", "1MiB"])


@test
def diff_crashed_run_is_reported_not_read_as_less_memory():
    """NEW crashed at step 5 of 12 (SIGSEGV): reported as such, compared at step 4 (the last
    both completed), where the leak both have is the same, not 7 steps of it less; the gate
    fails it as ended early, not as more or less memory. The other way round, the new leak
    shows at step 4 too."""
    bg = base12()[0]
    # record -- CMD exits 4 when its command fails (lib/exit.h)
    crash = recorded("crash5", build("base"), [12, 5], expect_rc=4)[0]
    d = diff(bg, crash, STEP)
    pp = d.proc()
    eq((pp["new"]["state"], pp["new"]["exit_status"], pp["new"]["clean"], pp["base"]["clean"]),
       ("exited", 139, False, True), "how NEW ended")
    eq(pp["compared_at"], {"by": "step", "base_step": 4, "new_step": 4, "requests": None,
                           "caveat": None}, "compared at the last step both completed")
    eq(tri(pp["steps"]), (13, 7, -6), "steps")
    eq(tri(pp["leaked_bytes"]), (5 * 64 * KiB, 5 * 64 * KiB, 0), "not less memory")
    eq(tri(pp["live_bytes"]), (16 * MiB + 5 * 64 * KiB,) * 2 + (0,), "live at step 4")
    eq(tri(pp["growth_bytes_per_step"]), (BASE_SLOPE, BASE_SLOPE, 0), "growth over steps 2..4")
    s = site(pp, "sampler_keep")
    eq((tri(s["live_bytes"]), s["at_end"]), ((5 * 64 * KiB, 5 * 64 * KiB, 0), False),
       "the site at step 4")
    check("NEW:  pid %d exited with status 139 (SIGSEGV) after 7 steps (sym)"
          % pp["new"]["pid"] in d.out, d.out)
    check("NEW ended early: what it would have done after is unknown, not less memory" in d.out,
          d.out)
    check("compared at step 4, the last both completed" in d.out, d.out)
    d = diff(bg, crash, STEP + ["--fail-on-regression", "--max-live-increase", "0"],
             expect_rc=EXIT_REGRESSION)
    eq([v["kind"] for v in d.summary()["gate"]["violations"]], ["ended_early"], "why it fails")
    d = diff(crash, new12()[0], STEP + ["--fail-on-regression"], expect_rc=EXIT_REGRESSION)
    pp = d.proc()
    eq((pp["base"]["clean"], pp["compared_at"]["by"]), (False, "step"), "BASE crashed")
    check("BASE ended early" in d.out, d.out)
    eq(tri(site(pp, "cache_logits")["live_bytes"]), (0, 5 * MiB, 5 * MiB), "at step 4")
    eq(tri(pp["growth_bytes_per_step"]), (BASE_SLOPE, NEW_SLOPE, MiB), "fitted over 2..4")
    eq([v["kind"] for v in d.summary()["gate"]["violations"]], ["growth"], "NEW grows more")


@test
def diff_different_step_counts_compared_per_step():
    """12 steps against 24 of the same build: said, compared at step 10 and per step, so the
    longer run's 12 more steps of the leak both have are no regression; the new build's run
    of 24 steps shows its leak per step and at step 10."""
    bg = base12()[0]
    long_base = recorded("base24", build("base"), [24])[0]
    d = diff(bg, long_base, STEP + ["--fail-on-regression", "--max-live-increase", "0"])
    pp = d.proc()
    eq((pp["steps_differ"], pp["compared_at"]["by"], pp["compared_at"]["base_step"]),
       (True, "step", 10), "compared at step 10")
    eq(tri(pp["leaked_bytes"]), (11 * 64 * KiB, 11 * 64 * KiB, 0), "steps 0..10 of the leak")
    eq(tri(pp["growth_bytes_per_step"]), (BASE_SLOPE, BASE_SLOPE, 0), "per step")
    eq(tri(pp["steps"]), (13, 25, 12), "step counts")
    check("different numbers of steps: compared per step" in d.out, d.out)
    long_new = recorded("new24", build("new"), [24])[0]
    d = diff(bg, long_new, STEP)
    pp = d.proc()
    eq(tri(pp["growth_bytes_per_step"]), (BASE_SLOPE, NEW_SLOPE, MiB), "per step")
    eq(tri(site(pp, "cache_logits")["live_bytes"]), (0, 11 * MiB, 11 * MiB), "at step 10")


@test
def diff_requests_aligned_by_request():
    """--request: requests of 2 steps against requests of 3 (6 and 4 requests in 12 steps)
    are compared where both had completed 4: BASE at step 7, NEW at step 11; the per-request
    leak is the same there, the per-step one differs by the steps between."""
    b = recorded("req2", build("base"), [12, -1, 2], STEP + REQ)[0]
    n = recorded("req3", build("base"), [12, -1, 3], STEP + REQ)[0]
    d = diff(b, n, STEP + REQ)
    pp = d.proc()
    eq(pp["compared_at"], {"by": "request", "base_step": 7, "new_step": 11, "requests": 4,
                           "caveat": None}, "where both completed 4 requests")
    eq(tri(pp["requests"]), (6, 4, -2), "requests")
    eq(tri(site(pp, "request_leak")["live_bytes"]), (MiB, MiB, 0), "4 x 256 KiB in both")
    eq(tri(site(pp, "sampler_keep")["live_bytes"]), (8 * 64 * KiB, 12 * 64 * KiB, 4 * 64 * KiB),
       "8 steps against 12")
    check("compared where both had completed 4 requests: BASE at step 7, NEW at step 11"
          in d.out, d.out)


TORCH_STEP = ["--step", "sym:torch_decode:decode_step"]


def torch_verdict(live):
    vs = [r for r in read_ndjson(live) if r["type"] == "verdict"]
    eq(len(vs), 1, "one verdict")
    return vs[0]["pytorch"]


@test
def diff_pytorch_buckets():
    """PyTorch's four buckets compared: torch_decode clean against leak (a 2 MiB tensor kept a
    step) at the end as the verdicts have them, the leak in allocated and not in reserved;
    8 steps against 6 at step 4, allocated and reserved from the step records, and the
    segments left out of the sites (their blocks are judged), so what is not retained there
    is the leak's 5 tensors alone; captures and NDJSON verdicts alike. A process without
    PyTorch has none."""
    exe = harness.scenario("torch_decode")
    clean = recorded("torch_clean8", exe, ["clean", 8], TORCH_STEP)
    leak = recorded("torch_leak8", exe, ["leak", 8], TORCH_STEP)
    short = recorded("torch_leak6", exe, ["leak", 6], TORCH_STEP)
    vb, vn = torch_verdict(clean[1]), torch_verdict(leak[1])
    want = {k: (vb[k], vn[k], vn[k] - vb[k])
            for k in ("allocated_bytes", "reserved_bytes", "cached_bytes", "outside_bytes")}
    eq(want, {"allocated_bytes": (120 * MiB, 136 * MiB, 16 * MiB),
              "reserved_bytes": (142 * MiB, 142 * MiB, 0),
              "cached_bytes": (22 * MiB, 6 * MiB, -16 * MiB),
              "outside_bytes": (36 * MiB, 36 * MiB, 0)}, "the verdicts' buckets")
    for how, b, n, opts in (("captures", clean[0], leak[0], TORCH_STEP),
                            ("NDJSON", reported(clean[0], TORCH_STEP),
                             reported(leak[0], TORCH_STEP), ())):
        d = diff(b, n, opts)
        pp = d.proc()
        eq(pp["compared_at"]["by"], "end", f"{how}: at the end")
        eq({k: tri(v) for k, v in pp["pytorch"].items()}, want, f"{how}: the buckets")
        check(re.search(r"PyTorch allocated +120 MiB +136 MiB +\+16\.0 MiB", d.out), d.out)
    at_step = []
    for how, b, n, opts in (("captures", leak[0], short[0], TORCH_STEP),
                            ("NDJSON", reported(leak[0], TORCH_STEP),
                             reported(short[0], TORCH_STEP), ())):
        d = diff(b, n, opts)
        pp = d.proc()
        eq((pp["compared_at"]["by"], pp["compared_at"]["base_step"]), ("step", 4),
           f"{how}: at step 4")
        t = pp["pytorch"]
        eq((tri(t["allocated_bytes"]), tri(t["reserved_bytes"]), tri(t["cached_bytes"]),
            t["outside_bytes"]),
           ((130 * MiB, 130 * MiB, 0), (142 * MiB, 142 * MiB, 0), (12 * MiB, 12 * MiB, 0),
            None), f"{how}: the buckets at step 4")
        eq((tri(pp["leaked_bytes"]), tri(pp["persistent_bytes"])),
           ((10 * MiB, 10 * MiB, 0), (0, 0, 0)), f"{how}: not retained: 5 tensors of the leak")
        eq(tri(pp["growth_bytes_per_step"]), (2 * MiB, 2 * MiB, 0), f"{how}: its slope")
        check("outside PyTorch                   -          -          -  at the end only"
              in d.out, d.out)
        at_step.append({s["function"]: tri(s["live_bytes"]) for s in pp["sites"]
                        if s["live_bytes"]["base"] or s["live_bytes"]["new"]})
    eq(at_step[0], at_step[1], "captures and NDJSON: the same sites hold memory at step 4")
    eq(at_step[0]["leaky_cache_append"], (10 * MiB, 10 * MiB, 0), "the leak's site")
    eq(at_step[0][None], (32 * MiB, 32 * MiB, 0),
       "libc10_cuda.so's raw workspace alone: its segments are no site")
    d = diff(base12()[0], new12()[0], STEP)
    eq(d.proc()["pytorch"], None, "diffapp has no PyTorch")
    check("PyTorch" not in d.out, d.out)


@test
def diff_ranks_paired_by_command_and_rank():
    """Three ranks and their parent, rank 1 leaking in BASE and rank 2 in NEW: processes are
    paired by command and order by pid, so the leak is gone from one pair and new in
    another; --pid-base/--pid-new pair the two leaking ranks instead; --comm selects; a
    pid that is not there is an error."""
    opts = ["--follow", "--step", "sym:ranks:decode_step", "--warmup-steps", "1",
            "--min-growth-steps", "3"]
    b = recorded("ranks1", harness.scenario("ranks"), ["fork", 3, 1, 8, "1M"], opts)[0]
    n = recorded("ranks2", harness.scenario("ranks"), ["fork", 3, 2, 8, "1M"], opts)[0]
    d = diff(b, n, opts[1:])
    eq([(p["rank"], p["match"]) for p in d.procs()],
       [(0, "paired"), (1, "paired"), (2, "paired"), (3, "paired")], "parent and three ranks")
    eq([(s["function"], s["match"]) for s in d.proc(2)["sites"] if s["changed"]],
       [("leaky_sampler", "only_base")], "rank 1 (the second process) leaks in BASE only")
    eq([(s["function"], s["match"]) for s in d.proc(3)["sites"] if s["changed"]],
       [("leaky_sampler", "only_new")], "rank 2 leaks in NEW only")
    eq(tri(d.proc(3)["growth_bytes_per_step"]), (0, MiB, MiB), "its growth")
    eq(tri(d.proc(1)["growth_bytes_per_step"]), (0, 0, 0), "rank 0 the same")
    pb, pn = d.proc(2)["base"]["pid"], d.proc(3)["new"]["pid"]
    d = diff(b, n, opts[1:] + ["--pid-base", str(pb), "--pid-new", str(pn)])
    eq(len(d.procs()), 1, "one pair chosen")
    s = site(d.proc(2), "leaky_sampler")
    eq((s["match"], tri(s["live_bytes"])), ("paired", (8 * MiB, 8 * MiB, 0)), "the same leak")
    eq(len(diff(b, n, opts[1:] + ["--comm", "ranks"]).procs()), 4, "--comm ranks: all four")
    d = diff(b, n, ["--comm", "nosuch"], expect_rc=1)
    check("no processes to compare of command nosuch" in d.err, d.err)
    d = diff(b, n, ["--pid-base", "1"], expect_rc=1)
    check("no process with pid 1 in " + b in d.err, d.err)


@test
def diff_webgpu_labels_on_real_dawn():
    """wgpu_diff on real Dawn in both builds: WebGPU sites are paired by label, "logits" too
    although NEW makes it in another function; the new "attn_scratch" leak is only in NEW
    with its exact slope; the KV cache is retained by init in both."""
    if not os.path.exists(os.path.join(BIN, "diff-new", "wgpu_diff")):
        print("SKIP-REASON: wgpu_diff not built (Dawn missing: scripts/install-deps.sh)")
        return "skip"
    step = ["--step", "sym:wgpu_diff:step_marker"]
    b = recorded("wgpu_base", build("base", "wgpu_diff"), [10], step)[0]
    n = recorded("wgpu_new", build("new", "wgpu_diff"), [10], step)[0]
    d = diff(b, n, step)
    pp = d.proc()
    eq(tri(pp["growth_bytes_per_step"]), (256 * KiB, 256 * KiB + MiB, MiB), "growth per step")
    new = pp["sites"][0]
    eq((new["match"], new["label"], new["function"], new["api"]),
       ("only_new", "attn_scratch", "attn_scratch", "wgpuDeviceCreateBuffer"), "the new leak")
    eq((tri(new["slope_bytes_per_step"]), tri(new["live_bytes"])),
       ((0, MiB, MiB), (0, 10 * MiB, 10 * MiB)), "its slope and bytes")
    lg = site(pp, "sample_logits", "logits")
    eq((lg["match"], lg["matched_by"], lg["changed"]), ("paired", "label", False), "by label")
    eq(lg["base"]["site"].split("+")[0], "keep_logits", "made elsewhere in BASE")
    eq((tri(lg["live_bytes"]), tri(lg["slope_bytes_per_step"])),
       ((10 * 256 * KiB,) * 2 + (0,), (256 * KiB, 256 * KiB, 0)), "the same leak")
    kv = site(pp, "kv_cache_init", "kv_cache")
    eq((kv["match"], tri(kv["init_bytes"])), ("paired", (8 * MiB, 8 * MiB, 0)), "kv_cache")
    eq(pp["sites_only_base"], 0, "nothing only in BASE")
    check("paired by label: made in keep_logits+0x" in d.out, d.out)


@test(root=False)
def diff_usage_and_input_errors():
    """Usage errors exit 2; inputs that cannot be read, are neither a capture nor NDJSON,
    are not strict JSON or lack what a verdict has, exit 1 with one line naming the file,
    line and column (or a capture's byte offset)."""
    golden = os.path.join(harness.ROOT, "tests", "golden")
    cap = os.path.join(golden, "cuda_timeline.glc")

    def run(args, rc):
        p = run_plain([gl(), "diff"] + args)
        check_sanitizers(p.stderr)
        eq(p.returncode, rc, f"diff {args}: {p.stdout}{p.stderr}")
        return p.stderr

    check("diff needs two runs" in run([cap], 2), "one input")
    check("unexpected" in run([cap, cap, cap], 2), "three inputs")
    check("give one or the other" in run([cap, cap, "--comm", "a", "--pid-base", "1"], 2),
          "--comm and --pid-base")
    check("invalid --max-growth-increase" in run([cap, cap, "--max-growth-increase", "x"], 2),
          "bad size")
    eq(run(["/nonexistent.glc", cap], 1), "gpuleak: /nonexistent.glc: No such file or directory\n",
       "no such file")
    bad = tmpfile(".txt")
    try:
        with open(bad, "w") as f:
            f.write("hello\n")
        eq(run([cap, bad], 1), f"gpuleak: {bad}: offset 0: neither a capture (gpuleak record -o) "
           "nor NDJSON verdicts (gpuleak run/record/report --json)\n", "not a run")
        verdict = open(os.path.join(golden, "stacks.ndjson")).read().splitlines()[-1]
        cases = [
            ('{"type":"interval"}\n{"type":"verdict",}\n', 2, 19, "trailing comma"),
            ('\n\n{"type":"x", "a": 01}\n', 3, 19, "leading zero"),
            (verdict.replace('"live_bytes":', '"live_bytez":', 1) + "\n", 1, 1,
             'verdict has no "live_bytes"'),
            (verdict.replace('"steps":1,', '"steps":-1,', 1) + "\n", 1,
             verdict.index('"steps":1,') + len('"steps":') + 1, "non-negative integer"),
            ('{"type":"interval","t_s":0}\n', 0, 0, "no verdict records"),
            ('{"type":"diff","base":{}}\n', 1, 9, "a record of gpuleak diff"),
        ]
        for text, line, col, why in cases:
            with open(bad, "w") as f:
                f.write(text)
            err = run([cap, bad], 1)
            where = f"{bad}:{line}:{col}: " if line else f"{bad}: "
            check(err.startswith("gpuleak: " + where) and why in err and err.count("\n") == 1,
                  f"{text[:60]!r}: expected {where}...{why}, got {err!r}")
        data = bytearray(open(cap, "rb").read())
        data[1000] ^= 0x10
        with open(bad, "wb") as f:
            f.write(data)
        p = run_plain([gl(), "diff", bad, cap])
        check_sanitizers(p.stderr)
        eq(p.returncode, 1, f"a damaged capture: {p.stderr}")
        check(re.match(r"gpuleak: %s: damaged from block \d+ at offset \d+ \(.*\); reporting "
                       r"the \d+ records before it\n" % re.escape(bad), p.stderr), p.stderr)
        check("BASE %s: capture" % bad in p.stdout, "compared up to the damage, and said")
    finally:
        os.unlink(bad)


@test(root=False)
def fuzz_json_reader_short():
    """100,000 inputs of libFuzzer on the strict JSON reader and the NDJSON verdicts loader of
    gpuleak diff, with the diff of what loads (`make fuzz-json` runs it for long)."""
    harness.run_fuzzer("json", 100000)
