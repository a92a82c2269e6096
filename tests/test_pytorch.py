# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""PyTorch's caching allocator from outside: blocks (tensors) inside segments, through the
USDT probes of libc10_cuda.so or the profiler hook of libc10.so (the stand-ins in
tests/standin over the stand-in runtime and VMM), and USDT probes on a real binary (Debian's
python3.11). Exact bytes, counts, sites and slopes, live and from a capture; what the
allocator itself says (its torch.cuda.memory_stats, printed by the scenario) is compared too.
"""
import os
import re
import shutil

from harness import (Attached, Proc, check, eq, env_for_targets, gpuleak_env, leak_sites,
                     read_ndjson, run_gpuleak, run_plain, scenario, test, tmpfile, GPULEAK, LIB,
                     OUT)

MiB = 1 << 20
PYTHON = "/usr/bin/python3.11"
STEPS = 20


def decode(mode, steps=STEPS, exe="torch_decode", extra=(), env=None, expect_rc=0):
    """run --step sym:EXE:decode_step -- EXE MODE STEPS, with the allocator's own stats."""
    args = ["run", "--interval", "0", "--step", f"sym:{exe}:decode_step"] + list(extra) + [
        "--", scenario(exe), mode, str(steps)]
    res = run_gpuleak(args, expect_rc=expect_rc,
                      env=dict(gpuleak_env(), **(env or {})) if env else None)
    return res, allocator_stats(res.out)


def allocator_stats(out):
    m = re.search(r"stats allocated=(\d+) requested=(\d+) reserved=(\d+) segments=(\d+) "
                  r"device_frees=(\d+) reports=(\d+)", out)
    check(m, f"the scenario's stats line: {out}")
    return dict(zip(["allocated", "requested", "reserved", "segments", "device_frees",
                     "reports"], map(int, m.groups())))


def device0(v):
    t = v["pytorch"]
    check(t is not None, f"a pytorch member: {v}")
    eq([d["device"] for d in t["devices"]], [0], "devices")
    return t["devices"][0]


def buckets(d):
    return {k: d[k] for k in ("allocated_bytes", "allocated_count", "reserved_bytes",
                              "segments", "cached_bytes", "outside_bytes")}


def growth(v):
    return {(g["api"], g["site"].split("+")[0]): g["slope_bytes_per_step"] for g in v["growth"]}


def retained(v):
    return {(r["api"], r["site"].split("+")[0]): (r["bytes"], r["count"], r["retained_by"])
            for r in v["retained"]}


# What torch_decode leak 20 leaves (its header comment): blocks 72 + 48 + 40 MiB, the
# segments holding them 182 MiB in 8, the workspace's raw segment (32 MiB: no probe fires
# for raw_alloc) and comm_init's cudaMalloc (4 MiB) outside.
LEAK_BUCKETS = {"allocated_bytes": 160 * MiB, "allocated_count": 24,
                "reserved_bytes": 182 * MiB, "segments": 8, "cached_bytes": 22 * MiB,
                "outside_bytes": 36 * MiB}


def check_leak_verdict(v, stats):
    eq(v["pytorch"]["source"], "usdt", "blocks from pytorch:malloc/free")
    eq(buckets(device0(v)), LEAK_BUCKETS, "allocated, reserved, cached, outside on device 0")
    # The allocator's own view: its reserve has the raw segment, its allocated the raw block.
    eq(v["pytorch"]["reserved_bytes"], stats["reserved"] - 32 * MiB, "reserved vs torch's")
    eq(v["pytorch"]["allocated_bytes"], stats["requested"] - 32 * MiB, "allocated vs torch's")
    eq(v["live_bytes"], (182 + 36) * MiB, "device memory counted once: reserved + outside")
    eq(leak_sites(v), {("pytorch:malloc", "leaky_cache_append"): (40 * MiB, 20)}, "the leak")
    eq(growth(v), {("pytorch:malloc", "leaky_cache_append"): 2.0 * MiB}, "its slope per step")
    r = retained(v)
    eq(r[("pytorch:malloc", "load_weights")], (72 * MiB, 3, "init"), "weights: not a leak")
    eq(r[("pytorch:malloc", "kv_cache_init")], (48 * MiB, 1, "init"), "KV cache: not a leak")
    eq(r[("cudaMalloc", "comm_init")], (4 * MiB, 1, "init"), "outside PyTorch, made at init")
    # 3 weights + KV + 20 x (3 scores, 1 mlp, 1 leak); all but the leak freed into the cache
    eq((v["pytorch"]["blocks_allocated"], v["pytorch"]["blocks_freed"]), (104, 80),
       "blocks handed out and freed")
    eq(v["pytorch"]["cache_growth"], None, "the reserve grew with allocated: no cache finding")
    # Block frees are no frees of CUDA memory: only the runtime's calls count as such.
    eq((v["allocs"], v["frees"]), (10, 0), "CUDA allocations (8 segments, raw, comm), frees")


@test
def pytorch_blocks_in_segments_four_buckets_and_leak_site():
    res, stats = decode("leak")
    v = res.verdict()
    check_leak_verdict(v, stats)
    check(re.search(r"^\s+0\s+160 MiB\s+24\s+182 MiB\s+8\s+22\.0 MiB\s+36\.0 MiB$", res.out,
                    re.M), f"the report's PyTorch table:\n{res.out}")
    check("2.00 MiB/st" in res.out and "leaky_cache_append+" in res.out,
          f"the growing site in the report:\n{res.out}")


@test
def pytorch_blocks_from_a_capture():
    path = tmpfile(".glc")
    try:
        rec = run_gpuleak(["record", "-o", path, "--interval", "0", "--step",
                           "sym:torch_decode:decode_step", "--", scenario("torch_decode"),
                           "leak", str(STEPS)])
        stats = allocator_stats(rec.out)
        check_leak_verdict(rec.verdict(), stats)
        v = run_gpuleak(["report", path, "--step", "sym:torch_decode:decode_step"]).verdict()
        check_leak_verdict(v, stats)
        eq(v["pytorch"], rec.verdict()["pytorch"], "the same pytorch member offline")
    finally:
        if os.path.exists(path):
            os.unlink(path)


@test
def pytorch_reserve_growth_is_cache_not_leak():
    """fragment() asks 2 MiB more each step than any cached block: a new segment each step,
    freed at once. The reserve grows, allocated stays at the weights and KV cache."""
    res, stats = decode("cache", extra=["--fail-on-leak"])
    v = res.verdict()
    eq(v["leaks"], [], "no leak")
    eq(v["growth"], [], "no growth leak: segments are no growth candidates")
    d = device0(v)
    eq((d["allocated_bytes"], d["allocated_count"]), (120 * MiB, 4), "weights and KV cache")
    eq(d["reserved_bytes"], stats["reserved"] - 32 * MiB, "reserved vs torch's (raw excluded)")
    eq(d["cached_bytes"], d["reserved_bytes"] - 120 * MiB, "cached = reserved - allocated")
    c = v["pytorch"]["cache_growth"]
    steps = {r["step"]: r for r in res.records if r["type"] == "step"}
    eq((c["first_step"], c["last_step"]), (3, STEPS - 1), "judged after the warm-up")
    eq((c["reserved_from_bytes"], c["reserved_to_bytes"]),
       (steps[3]["torch_reserved_bytes"], steps[STEPS - 1]["torch_reserved_bytes"]),
       "from the step records")
    eq(c["reserved_to_bytes"] - c["reserved_from_bytes"], 508 * MiB, "reserve growth")
    eq((c["allocated_from_bytes"], c["allocated_to_bytes"]), (120 * MiB, 120 * MiB), "flat")
    check("cache, not a leak; torch.cuda.empty_cache() returns it" in res.out,
          f"the report says so:\n{res.out}")


@test
def pytorch_empty_cache_returns_segments():
    res, stats = decode("cache_empty")
    v = res.verdict()
    d = device0(v)
    eq(buckets(d), {"allocated_bytes": 120 * MiB, "allocated_count": 4,
                    "reserved_bytes": 120 * MiB, "segments": 4, "cached_bytes": 0,
                    "outside_bytes": 36 * MiB}, "only the weights' and KV's segments stay")
    eq(d["reserved_bytes"], stats["reserved"] - 32 * MiB, "reserved vs torch's")
    eq(v["pytorch"]["cache_growth"], None, "the reserve came back: no cache finding")
    # Every segment empty_cache released was a cudaFree the trace saw.
    eq(v["frees"], stats["device_frees"], "cudaFree of each free segment")
    check(v["frees"] > 0, "empty_cache released segments")
    eq(v["leaks"], [], "no leak")


@test
def pytorch_streams_do_not_share_cached_blocks():
    res, stats = decode("streams")
    d = device0(res.verdict())
    # clean would be 72 + 48 + 2 + 20: stream 1's scores need a small segment of their own
    eq((d["reserved_bytes"], d["segments"]), (144 * MiB, 7), "a second 2 MiB small segment")
    eq((d["allocated_bytes"], d["cached_bytes"]), (120 * MiB, 24 * MiB), "allocated, cached")
    eq(d["reserved_bytes"], stats["reserved"] - 32 * MiB, "reserved vs torch's")


@test
def pytorch_clean_loop_has_no_finding():
    res, stats = decode("clean", extra=["--fail-on-leak", "--preset", "vllm"])
    v = res.verdict()
    eq((v["leaks"], v["growth"], v["pytorch"]["cache_growth"]), ([], [], None), "nothing")
    eq(buckets(device0(v))["reserved_bytes"], 142 * MiB, "weights, KV, 2 MiB small, 20 MiB")


@test
def pytorch_presets_keep_weights_and_kv_cache_at_block_level():
    res, _ = decode("leak", extra=["--preset", "vllm"])
    v = res.verdict()
    r = retained(v)
    eq(r[("pytorch:malloc", "load_weights")], (72 * MiB, 3, "rule"), "weights by rule")
    eq(r[("pytorch:malloc", "kv_cache_init")], (48 * MiB, 1, "rule"), "KV cache by rule")
    eq(r[("pytorch:malloc", "leaky_cache_append")], (6 * MiB, 3, "rule"),
       "the warm-up's blocks (phase=steps<3)")
    eq(leak_sites(v), {("pytorch:malloc", "leaky_cache_append"): (34 * MiB, 17)},
       "after the warm-up the kept tensors leak")
    eq(growth(v), {("pytorch:malloc", "leaky_cache_append"): 2.0 * MiB}, "and grow")


@test
def pytorch_notes_without_a_base_are_traced_as_usdt():
    """PyTorch's own note macro records no .stapsdt.base in the notes of an object that has
    the section (the wheels' libc10_cuda.so): libbpf before 1.6 placed such probes wrongly
    and the attach failed; the libbpf gpuleak links places them. The stand-in with its notes
    so rewritten gives the verdict of the one with <sys/sdt.h>'s notes, and `probes` lists
    the same probes at the same addresses, with no word of a misplacement."""
    nobase = os.path.join(OUT, "tests", "lib-nobase", "libc10_cuda.so")
    notes = run_plain(["readelf", "-n", nobase]).stdout
    check(re.search(r"Base: 0x0+\b", notes) and ".stapsdt.base" in
          run_plain(["readelf", "-S", nobase]).stdout, f"notes without a base:\n{notes}")
    res, stats = decode("leak", exe="torch_decode_nobase")
    check("cannot attach USDT" not in res.err, f"no probe refused: {res.err}")
    check_leak_verdict(res.verdict(), stats)
    rows = {}
    for lib in (os.path.join(LIB, "libc10_cuda.so"), nobase):
        p = run_plain([GPULEAK, "probes", "--lib", lib])
        eq(p.returncode, 0, f"probes --lib {lib}: {p.stderr}")
        check("misplaces" not in p.stdout, f"no misplacement said:\n{p.stdout}")
        rows[lib] = [l.split()[:4] for l in p.stdout.splitlines() if l.startswith("pytorch:")]
    eq(rows[nobase], rows[os.path.join(LIB, "libc10_cuda.so")], "the same probes, the same sites")


@test
def pytorch_profiler_hook_where_no_probes():
    """libc10_cuda.so without SDT notes: the hook reports every block with its rounded size,
    raw_alloc's too (so the workspace is a block, and its segment PyTorch's)."""
    res, stats = decode("leak", exe="torch_decode_nosdt")
    v = res.verdict()
    eq(v["pytorch"]["source"], "profiler_hook", "source")
    eq(buckets(device0(v)), {"allocated_bytes": 192 * MiB, "allocated_count": 25,
                             "reserved_bytes": 214 * MiB, "segments": 9,
                             "cached_bytes": 22 * MiB, "outside_bytes": 4 * MiB}, "buckets")
    eq((v["pytorch"]["allocated_bytes"], v["pytorch"]["reserved_bytes"]),
       (stats["allocated"], stats["reserved"]), "exactly torch.cuda.memory_stats")
    eq(leak_sites(v), {("c10::reportMemoryUsageToProfiler", "leaky_cache_append"):
                       (40 * MiB, 20)}, "the leak at its site")
    eq(growth(v), {("c10::reportMemoryUsageToProfiler", "leaky_cache_append"): 2.0 * MiB},
       "slope")
    eq(retained(v)[("c10::reportMemoryUsageToProfiler", "workspace_init")],
       (32 * MiB, 1, "init"), "raw_alloc's workspace, a block of the hook")


@test
def pytorch_never_counts_a_block_twice():
    """libc10.so exports the hook in every build; with libc10_cuda.so's probes attached it is
    left out, and no record of it reaches the analysis."""
    res, stats = decode("leak", extra=["-v"])
    v = res.verdict()
    eq((v["pytorch"]["source"], v["pytorch"]["other_source_records"]), ("usdt", 0), "one source")
    check(not re.search(r"attached \d+ probes to \S*libc10\.so[ \n]", res.err),
          f"the hook's object is not attached:\n{res.err}")
    eq(stats["reports"], 185, "the hook ran for every block (a probe would have seen them)")


@test
def pytorch_expandable_segments_through_vmm():
    res, stats = decode("leak", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    v = res.verdict()
    # Pages of 20 MiB (large pool) and 2 MiB (small), one cuMemCreate each: 10 pages hold
    # reported blocks; one holds only the raw workspace's tail (outside, with comm_init).
    eq(buckets(device0(v)), {"allocated_bytes": 160 * MiB, "allocated_count": 24,
                             "reserved_bytes": 182 * MiB, "segments": 10,
                             "cached_bytes": 22 * MiB, "outside_bytes": 24 * MiB}, "buckets")
    eq(v["pytorch"]["reserved_bytes"] + 20 * MiB, stats["reserved"], "vs torch's reserve")
    eq(leak_sites(v), {("pytorch:malloc", "leaky_cache_append"): (40 * MiB, 20)}, "the leak")
    eq(growth(v), {("pytorch:malloc", "leaky_cache_append"): 2.0 * MiB}, "slope")
    eq(sum(r["count"] for r in v["address_space"] if r["api"] == "cuMemAddressReserve"), 2,
       "the segments' address ranges, one per (stream, pool), never freed")


@test
def pytorch_attach_to_running_decode_loop():
    a = Attached("torch_decode", ["leak", STEPS], gl_args=["--step",
                                                          "sym:torch_decode:decode_step"])
    try:
        a.wait_attached()
        a.target.send()
        a.target.wait_line("done")
        stats = allocator_stats(a.target.text("out"))
        a.target.send()
        v = a.finish().verdict()
    finally:
        a.cleanup()
    check_leak_verdict(v, stats)


@test
def pytorch_loaded_by_dlopen_in_run_mode():
    """`import torch` maps libc10_cuda.so late: the rendezvous stops the target until its
    probes (and semaphores) are in place, so the first tensor is seen."""
    v = run_gpuleak(["run", "--interval", "0", "--", scenario("torch_dlopen")]).verdict()
    eq(buckets(device0(v)), {"allocated_bytes": 3 * MiB, "allocated_count": 3,
                             "reserved_bytes": 4 * MiB, "segments": 2, "cached_bytes": MiB,
                             "outside_bytes": 0}, "buckets")
    eq(leak_sites(v), {("pytorch:malloc", "tensors_after_import"): (3 * MiB, 3)}, "site")


@test
def pytorch_loaded_by_dlopen_after_attach():
    """Attached (--wait) before the dlopen: the rendezvous makes gpuleak attach to the new
    objects, the USDT probes of libc10_cuda.so with them."""
    a = Attached("torch_dlopen", gl_args=["--wait"])
    try:
        a.gl.wait_line(r"maps no GPU library yet", stream="err")
        a.target.send()                       # go: dlopen("libc10_cuda.so")
        a.target.wait_line("loaded")
        a.wait_attached()                     # its probes are in place
        a.target.send()                       # now the tensors
        a.target.wait_line("done")
        a.target.send()
        v = a.finish().verdict()
    finally:
        a.cleanup()
    eq(leak_sites(v), {("pytorch:malloc", "tensors_after_import"): (3 * MiB, 3)}, "site")
    eq((v["pytorch"]["blocks_allocated"], v["pytorch"]["blocks_freed"]), (4, 1), "blocks")


# ---- USDT markers checked before the target runs ----

@test
def misspelt_usdt_marker_is_a_usage_error_before_the_command_runs():
    """run: a usdt: marker whose object has no such SDT probe is exit 2 before the command
    runs, one line with the closest probes the object has (or that it has none); a library
    the executable needs is found by name, one dlopen()ed later only with --wait."""
    exe, c10 = scenario("torch_decode"), os.path.join(LIB, "libc10_cuda.so")
    cases = [
        (["--step", "usdt:libc10_cuda.so:pytorch:mallco"],
         "gpuleak: --step usdt:libc10_cuda.so:pytorch:mallco: libc10_cuda.so has no USDT probe "
         f"pytorch:mallco ({c10}; closest: pytorch:malloc, pytorch:free)\n"),
        (["--request", "usdt:libc10_cuda.so:pytorch:malloc,fre"],
         "gpuleak: --request usdt:libc10_cuda.so:pytorch:malloc,fre: libc10_cuda.so has no USDT "
         f"probe pytorch:fre ({c10}; closest: pytorch:free, pytorch:malloc)\n"),
        (["--end", "usdt:torch_decode:pytorch:free"],
         "gpuleak: --end usdt:torch_decode:pytorch:free: torch_decode has no USDT probe "
         f"pytorch:free ({exe}; no USDT probes (.note.stapsdt))\n"),
        # the option as given is cut to 63 bytes; the file and probe follow whole
        (["--step", f"usdt:{c10}:torch:malloc"],
         f"gpuleak: {f'--step usdt:{c10}:torch:malloc'[:63]}: {c10} has no USDT probe "
         "torch:malloc "
         f"({c10}; closest: pytorch:malloc, pytorch:free)\n"),
    ]
    for opts, msg in cases:
        p = run_plain([GPULEAK, "run", "--fail-on-leak"] + opts + ["--", exe, "leak", "3"])
        eq((p.returncode, p.stderr), (2, msg), f"{opts}: exit 2, one line")
        eq(p.stdout, "", f"{opts}: the command never ran")
    # found: the probe of a library the executable needs, by name and by path
    for spec in ("usdt:libc10_cuda.so:pytorch:free", f"usdt:{c10}:pytorch:free"):
        res = run_gpuleak(["run", "--interval", "0", "--step", spec, "--", exe, "leak", "3"])
        check("step marker on USDT pytorch:free in " in res.err, f"{spec}: {res.err}")
    # torch_dlopen maps libc10_cuda.so late: a usage error, or waited for with --wait
    p = run_plain([GPULEAK, "run", "--step", "usdt:libc10_cuda.so:pytorch:free", "--",
                   scenario("torch_dlopen")])
    eq(p.returncode, 2, f"not needed at start: {p.stderr}")
    check(p.stderr.startswith("gpuleak: --step usdt:libc10_cuda.so:pytorch:free: no object "
                              "named libc10_cuda.so in what ") and "add --wait" in p.stderr,
          f"says so: {p.stderr!r}")
    res = run_gpuleak(["run", "--wait", "--interval", "0", "--step",
                       "usdt:libc10_cuda.so:pytorch:free", "--", scenario("torch_dlopen")])
    check("maps at its start yet: waiting for one to be loaded (--wait)" in res.err, res.err)
    eq(res.verdict()["steps"], 2, "its one pytorch:free a boundary, once the object came")


@test
def misspelt_usdt_marker_in_attach_mode():
    """attach: checked against the process's mappings before any probe: exit 2, and the
    process runs on."""
    a = Attached("torch_decode", ["leak", 3],
                 gl_args=["--step", "usdt:libc10_cuda.so:pytorch:mallocc"])
    try:
        eq(a.gl.finish(), 2, f"exit status: {a.gl.text('err')}")
        err = a.gl.text("err")
        check(err.startswith("gpuleak: --step usdt:libc10_cuda.so:pytorch:mallocc: "
                             "libc10_cuda.so has no USDT probe pytorch:mallocc (")
              and "closest: pytorch:malloc, pytorch:free)\n" in err and err.count("\n") == 1,
              f"one line: {err!r}")
        a.target.send()
        a.target.wait_line("done")
        a.target.send()
        eq(a.target.finish(), 0, "the target ran on")
    finally:
        a.cleanup()


# ---- USDT machinery ----

@test(root=False)
def usdt_probes_listed_for_the_standin():
    p = run_plain([GPULEAK, "probes", "--lib", os.path.join(LIB, "libc10_cuda.so")])
    eq(p.returncode, 0, f"exit status ({p.stderr})")
    rows = [l.split() for l in p.stdout.splitlines() if l.startswith("pytorch:")]
    eq([(r[0], r[1], r[2]) for r in rows], [("pytorch:malloc", "pytorch:malloc", "1"),
                                             ("pytorch:free", "pytorch:free", "1")],
       "probe, traced as, sites")
    check(all(re.fullmatch(r"0x[0-9a-f]+", r[3]) for r in rows), f"semaphores: {rows}")
    check(re.search(r"pytorch:malloc in libc10_cuda\.so: arguments ptr=8@\S+ device=-1@\S+ "
                    r"size=8@\S+ stream_id=-8@\S+", p.stdout), f"named arguments:\n{p.stdout}")
    q = run_plain([GPULEAK, "probes", "--lib", os.path.join(OUT, "tests", "lib-nosdt",
                                                            "libc10_cuda.so")])
    eq(q.returncode, 1, "a build without probes has nothing to trace")
    h = run_plain([GPULEAK, "probes", "--lib", os.path.join(LIB, "libc10.so")])
    check(re.search(r"^c10::reportMemoryUsageToProfiler\s+pytorch\s+0x[0-9a-f]+\s+global\s+"
                    r"entry\s", h.stdout, re.M), f"the hook, its probe at the entry:\n{h.stdout}")


def need_python():
    if not os.path.exists(PYTHON):
        return False
    p = run_plain(["readelf", "-n", PYTHON])
    return "stapsdt" in p.stdout


PYTHON_PROBES = ["audit", "gc__start", "gc__done", "line", "import__find__load__start",
                 "import__find__load__done", "function__entry", "function__return"]


@test(root=False)
def usdt_probes_listed_for_python():
    if not need_python():
        print("no /usr/bin/python3.11 with SDT notes (Debian's python3.11)")
        return "skip"
    p = run_plain([GPULEAK, "probes", "--lib", PYTHON])
    eq(p.returncode, 0, f"exit status: USDT probes are traceable as markers ({p.stderr})")
    rows = [l.split() for l in p.stdout.splitlines() if l.startswith("python:")]
    eq(sorted(r[0] for r in rows), sorted("python:" + n for n in PYTHON_PROBES), "8 probes")
    check(all(r[1] == "-" and r[2] == "1" and r[3].startswith("0x") for r in rows),
          f"not in the catalog, one site each, a semaphore each: {rows}")
    check("python:gc__start in python3.11: arguments -4@" in p.stdout, p.stdout)


GC_SCRIPT = """
import gc, os, sys
gc.disable()
for i in range(%d):
    gc.collect()
print("collections", sum(s["collections"] for s in gc.get_stats()), flush=True)
os._exit(0)
"""


def gc_run(collections, gl_args):
    """gpuleak run GL_ARGS on GC_SCRIPT making COLLECTIONS: the result, and how many
    collections python counted."""
    script = tmpfile(".py")
    with open(script, "w") as f:
        f.write(GC_SCRIPT % collections)
    try:
        res = run_gpuleak(["run", "--interval", "0", *gl_args, "--", PYTHON, script])
    finally:
        os.unlink(script)
    return res, int(re.search(r"collections (\d+)", res.out).group(1))


@test
def usdt_step_marker_counts_python_collections_in_run_mode():
    """Held before exec, the semaphore is raised before the interpreter's first collection:
    every gc__start is a step boundary (os._exit skips the collections of finalization)."""
    if not need_python():
        print("no /usr/bin/python3.11 with SDT notes (Debian's python3.11)")
        return "skip"
    res, n = gc_run(7, ["--step", "usdt:python3.11:python:gc__start"])
    check(n >= 7, f"python counted its collections: {n}")
    v = res.verdict()
    eq(v["steps"], n + 1, "one step boundary per collection, and the last step")
    check("step marker on USDT python:gc__start in python3.11" in res.err, res.err)


@test
def usdt_request_markers_on_python():
    """--request usdt: two probes begin and end a request: each collection is one."""
    if not need_python():
        print("no /usr/bin/python3.11 with SDT notes (Debian's python3.11)")
        return "skip"
    res, n = gc_run(5, ["--step", "usdt:python3.11:python:gc__done", "--request",
                        "usdt:python3.11:python:gc__start,gc__done"])
    v = res.verdict()
    eq((v["steps"], v["requests"]), (n + 1, n), "a step and a request per collection")


ATTACH_SCRIPT = """
import ctypes, gc, os, sys
gc.disable()
cudart = ctypes.CDLL(%r)
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
bufs = []
for i in range(%d):
    gc.collect()                                   # a step
    p = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0
    bufs.append(p)                                 # kept: 1 MiB per step
print("done", flush=True)
sys.stdin.readline()
os._exit(0)                                        # no collections of finalization
"""


@test
def usdt_step_marker_on_a_running_python_process():
    """Attached to a Python loop that calls the stand-in runtime through ctypes: exactly N
    collections after the attach are N boundaries, and 1 MiB kept per step grows by 1 MiB a
    step."""
    if not need_python():
        print("no /usr/bin/python3.11 with SDT notes (Debian's python3.11)")
        return "skip"
    n = 12
    script = tmpfile(".py")
    with open(script, "w") as f:
        f.write(ATTACH_SCRIPT % (os.path.join(LIB, "libcudart.so.13"), n))
    json_path = tmpfile(".ndjson")
    target = Proc([PYTHON, script], env=env_for_targets())
    gl = None
    try:
        pid = int(target.wait_line(r"ready (\d+)").group(1))
        gl = Proc([GPULEAK, "attach", "-p", str(pid), "--json", json_path, "--interval", "0",
                   "--step", "usdt:python3.11:python:gc__start"], env=gpuleak_env(),
                  stdin=False)
        gl.wait_line(r"tracing pid %d" % pid, stream="err")
        target.send()
        target.wait_line("done")
        target.send()
        target.finish()
        eq(gl.finish(), 0, f"gpuleak exit status ({gl.text('err')})")
        recs = read_ndjson(json_path)
    finally:
        target.kill()
        if gl:
            gl.kill()
        os.unlink(script)
        if os.path.exists(json_path):
            os.unlink(json_path)
    v = [r for r in recs if r["type"] == "verdict"][0]
    eq(v["steps"], n + 1, "N boundaries after the attach, and the last step")
    eq((v["live_bytes"], v["allocs"]), (n * MiB, n), "1 MiB kept per step")
    eq([g["slope_bytes_per_step"] for g in v["growth"]], [float(MiB)], "growth per step")


@test
def pytorch_in_a_container():
    """The decode loop in its own pid namespace and root, PyTorch's libraries copies the host
    never mapped: the USDT probes go on the container's own libc10_cuda.so (opened through
    /proc/PID/map_files), its semaphores raised in that process."""
    from test_reliability import container_root, need_unshare
    if need_unshare():
        return "skip"
    root = container_root("torch_decode")
    for lib in ("libc10_cuda.so", "libc10.so"):
        shutil.copy(os.path.join(LIB, lib), os.path.join(root, "lib"))
    json_path = tmpfile(".ndjson")
    t = Proc(["unshare", "--pid", "--fork", "--mount-proc", f"--root={root}",
              "/bin/torch_decode", "leak", str(STEPS)],
             env=env_for_targets({"SCENARIO_SYNC": "1"}))
    try:
        t.wait_line(r"^ready 1$")
        with open(f"/proc/{t.pid}/task/{t.pid}/children") as f:
            pid = int(f.read().split()[0])
        g = Proc([GPULEAK, "attach", "-p", str(pid), "--interval", "0", "--json", json_path,
                  "--step", "sym:/bin/torch_decode:decode_step"], env=gpuleak_env(),
                 stdin=False)
        g.wait_line(r"tracing pid %d \(pid 1 in its namespace\)" % pid, stream="err")
        t.send()
        t.wait_line("^done")
        stats = allocator_stats(t.text("out"))
        t.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
    finally:
        t.kill()
        shutil.rmtree(root)
    v = [r for r in read_ndjson(json_path) if r["type"] == "verdict"][0]
    os.unlink(json_path)
    eq(v["ns_pid"], 1, "pid 1 in its namespace")
    check_leak_verdict(v, stats)


@test
def pytorch_blocks_through_an_allocator_without_frame_pointers():
    """torch_decode over a libc10_cuda.so built -O2 without frame pointers (lib-nofp/, as
    PyTorch's wheels are; its .eh_frame kept): the blocks come from USDT probes inside the
    allocator, where the kernel's walk has nothing to go on. With the defaults (--unwind auto)
    each allocation that met the allocator's code is copied and unwound with its CFI, and the
    C caller is the site: the same verdict as over the allocator with frame pointers. 104
    blocks and the allocator's 9 segments are copied; comm_init's cudaMalloc, from the
    program's own frame-pointer code, is not. With --unwind fp the leak is sited inside
    PyTorch, as before."""
    res, stats = decode("leak", exe="torch_decode_nofp", extra=("-v",))
    check_leak_verdict(res.verdict(), stats)
    m = re.search(r"--unwind auto: (\d+) stack copies, (\d+) unwound stacks in place of "
                  r"frame-pointer walks \(\d+ reached the copy's end\), (\d+) calls without a "
                  r"copy", res.err)
    check(m, f"-v says what the copies did: {res.err}")
    eq(tuple(int(x) for x in m.groups()), (113, 113, 1), "copies, stacks unwound, uncopied")
    res, stats = decode("leak", exe="torch_decode_nofp", extra=("--unwind", "fp"))
    eq(leak_sites(res.verdict()), {("pytorch:malloc", "c10_cuda_alloc"): (40 * MiB, 20)},
       "the walk alone: the leak sited in the allocator")


def sdt_args(path, name):
    """The argument lists of path's SDT notes of pytorch:NAME, as readelf prints them."""
    out = run_plain(["readelf", "-n", path]).stdout
    return [m.group(1).split() for m in
            re.finditer(r"Provider: pytorch\s+Name: " + name + r"\s.*?Arguments: ([^\n]*)", out,
                        re.S)]


def usdt_arg_form(arg):
    """('mem', base register, offset), ('index', base, index register, offset), ('reg',
    register) or ('const', value) of an argument."""
    loc = arg.split("@", 1)[1]
    m = re.fullmatch(r"(-?\d*)\((%\w+)\)", loc)
    if m:
        return ("mem", m.group(2), int(m.group(1) or 0))
    m = re.fullmatch(r"(-?\d*)\((%\w+),(%\w+)(?:,\d+)?\)", loc)
    if m:
        return ("index", m.group(2), m.group(3), int(m.group(1) or 0))
    return ("const", loc[1:]) if loc.startswith("$") else ("reg", loc)


@test
def usdt_arguments_in_every_form_read_exactly():
    """PyTorch's block probes fired from seven sites whose notes place the arguments in each
    way a compiler may (tests/scenarios/usdt_forms.c): all four in memory within 64 bytes off
    one register (read at once), in one frame but 320 bytes apart, all in registers, a
    register and memory, a constant device, memory off two registers, and base + index
    (libbpf's reader); every byte around them 0xff. Each site's blocks on a device of its
    own, of a size of its own: the device (a signed byte read in a wider word), the size (at
    two sites 4 bytes of a wider register or word: narrowed by the register path and by the
    span's) and the pointer (each free matched) come out exact."""
    exe = scenario("usdt_forms")
    forms = [[usdt_arg_form(a) for a in args] for args in sdt_args(exe, "malloc")]
    eq(len(forms), 7, f"seven pytorch:malloc sites: {forms}")

    def mem(f):
        return [a for a in f if a[0] == "mem"]

    def one_base(f):
        return len({a[1] for a in mem(f)}) == 1

    def span(f):
        return max(a[2] for a in mem(f)) + 8 - min(a[2] for a in mem(f))

    kinds = sorted(
        "index" if all(a[0] == "index" for a in f) else
        "near" if len(mem(f)) == 4 and one_base(f) and span(f) <= 64 else
        "far" if len(mem(f)) == 4 and one_base(f) else
        "bases" if len(mem(f)) == 4 else
        "regs" if all(a[0] == "reg" for a in f) else
        "const" if f[1][0] == "const" and len(mem(f)) == 3 else
        "mixed" if f[0][0] == "reg" and len(mem(f)) == 3 else repr(f) for f in forms)
    eq(kinds, sorted(["near", "far", "regs", "mixed", "const", "bases", "index"]),
       "the notes place the arguments as the scenario says")
    n = 5
    res = run_gpuleak(["run", "--interval", "0", "--", exe, str(n)])
    v = res.verdict()
    t = v["pytorch"]
    eq([(d["device"], d["allocated_bytes"], d["allocated_count"]) for d in t["devices"]],
       [(d, d * MiB, 1) for d in range(1, 8)], "a block of its own size live on each device")
    eq((t["blocks_allocated"], t["blocks_allocated_bytes"], t["blocks_freed"],
        t["unknown_frees"]), (7 * n, n * 28 * MiB, 7 * (n - 1), 0),
       "every block and every free")
    eq((v["losses"]["read_fail"], v["dropped_events"]), (0, 0), "no read failed")
