# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""ONNX Runtime's WebGPU execution provider, end to end: the real libonnxruntime.so.1 of npm
onnxruntime-node@1.30.0, whose Dawn has no symbols at all, run by Node on Mesa's lavapipe
(software Vulkan: scripts/install-deps.sh installs Mesa 25). gpuleak finds Dawn's entry
points in Dawn's own proc table (user/probe/dawn_procs.c); the target is tests/ort/decode.js,
one session.run() per step, on the models tests/ort/models.js writes.

Steps are ORT's runs: --step api:wgpuDevicePopErrorScope (ORT pops one error scope at the
end of every run). What ORT does with its buffers, seen on this build (docs/webgpu.md):
weights and the first run's buffers are made before the first step ends; an input is
uploaded through a staging buffer released right after the submit that copies it (pending
until the queue's work is known done); outputs come from ORT's bucket cache, which keeps a
disposed tensor's buffer for the next run (storageBufferCacheMode 'disabled' releases it at
the next run instead); a CPU output is read back through a map of a staging buffer
(wgpuBufferMapAsync, then wgpuInstanceWaitAny: the queue's work so far is done); at exit
everything is released. Each test is short: a session is made in ~0.2 s, a run takes
milliseconds.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import (Proc, check, eq, gpuleak_env, read_ndjson, run_gpuleak, run_plain, scenario,
                     test, tmpfile, check_sanitizers, Result)

KiB = 1 << 10
DEPS = os.path.join(os.environ.get("GPULEAK_DEPS", "/var/cache/gpuleak"), "npm")
ORT = os.path.join(DEPS, "onnxruntime-node@1.30.0", "node_modules", "onnxruntime-node", "bin",
                   "napi-v6", "linux", "x64", "libonnxruntime.so.1")
WRAPPER = os.path.join(DEPS, "bun-webgpu-linux-x64@0.1.7", "node_modules",
                       "bun-webgpu-linux-x64", "libwebgpu_wrapper.so")
HERE = os.path.dirname(os.path.abspath(__file__))
DECODE = os.path.join(HERE, "ort", "decode.js")
STEP = "api:wgpuDevicePopErrorScope"
# ORT's one call site of wgpuDeviceCreateBuffer (its BufferManager): stacks end there, ORT
# keeps no frame pointers.
ORT_SITE = "libonnxruntime.so.1+0x5d8283"
Y = 256 * 256 * 4  # one MatMul output: 256 KiB
ROW = 256 * 4      # one KV cache row (D = 256): 1 KiB


def need(path):
    check(os.path.exists(path), f"{path} missing: run scripts/install-deps.sh as root")


def ort_env(home, cache=None):
    """ORT and Mesa write caches under $HOME/.cache: a fresh one per test."""
    env = gpuleak_env()
    env.update(HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))
    if cache:
        env["CACHE_MODE"] = cache
    else:
        env.pop("CACHE_MODE", None)
    return env


def ort_run(variant, steps, *gl_args, cache=None, expect_rc=0):
    """decode.js VARIANT STEPS under `gpuleak run`, steps at ORT's runs; Result."""
    need(ORT)
    home = tempfile.mkdtemp(prefix="gpuleak-ort-")
    try:
        return run_gpuleak(["run", "--interval", "0", "--step", STEP] + list(gl_args) +
                           ["--", "node", DECODE, variant, str(steps)],
                           env=ort_env(home, cache), expect_rc=expect_rc)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def ort_attach(variant, steps, *gl_args, cache=None, expect_rc=0):
    """decode.js --wait: gpuleak attaches once the session exists, then the loop runs."""
    need(ORT)
    home = tempfile.mkdtemp(prefix="gpuleak-ort-")
    json_path = tmpfile(".ndjson")
    env = ort_env(home, cache)
    target = Proc(["node", DECODE, variant, str(steps), "--wait"], env=env)
    gl = None
    try:
        m = target.wait_line(r"ready (\d+)", timeout=60)
        eq(int(m.group(1)), target.pid, "node's pid")
        gl = Proc([harness.GPULEAK, "attach", "-p", str(target.pid), "--json", json_path,
                   "--interval", "0", "--step", STEP] + list(gl_args), env=env, stdin=False)
        gl.wait_line(r"tracing pid %d" % target.pid, stream="err", timeout=60)
        # The step marker goes on once its object is scanned: said before the loop starts.
        gl.wait_line(r"step marker on wgpuDevicePopErrorScope", stream="err", timeout=60)
        target.send()
        eq(target.finish(), 0, f"node's exit code ({target.text('err')})")
        rc = gl.finish()
        err = gl.text("err")
        check_sanitizers(err)
        eq(rc, expect_rc, f"gpuleak attach exit code (stderr: {err})")
        return Result(rc, gl.text("out") + target.text("out"), err, read_ndjson(json_path))
    finally:
        target.kill()
        if gl:
            gl.kill()
        if os.path.exists(json_path):
            os.unlink(json_path)
        shutil.rmtree(home, ignore_errors=True)


def steps_of(res):
    """{step: (live, pending)} of the step records."""
    return {s["step"]: (s["live_bytes"], s["pending_bytes"]) for s in res.records
            if s.get("type") == "step"}


def deltas(res, first, last):
    """Live bytes added by each step first..last."""
    st = steps_of(res)
    return [st[s][0] - st[s - 1][0] for s in range(first, last + 1)]


def app(res):
    """decode.js's own summary line: timings and the outputs' checksum."""
    for line in res.out.splitlines():
        if line.startswith('{"variant"'):
            return json.loads(line)
    raise harness.Fail(f"no summary from decode.js in:\n{res.out}")


def clean(v, what):
    eq((v["growth"], v["leaks"], v["violations"], v["double_frees"], v["addr_reuse"]),
       ([], [], [], 0, 0), f"{what}: no growth, no leak, no violation, no double free")


# ---- the entry points, from the file alone ----

@test(root=False)
def ort_probes_come_from_dawns_proc_table():
    """`gpuleak probes --lib libonnxruntime.so.1`: the catalog's WebGPU entry points, from
    Dawn's proc table (271 entries, written by a static initializer), at the offsets the
    research read by hand (CreateBuffer 0x1aba2f0, its probe past the endbr64), with the
    generation from the table's names and the error classes from RTTI."""
    need(ORT)
    p = run_plain([harness.GPULEAK, "probes", "--lib", ORT])
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    rows = {r[0]: r for r in harness.probe_rows(p.stdout)}
    eq(sorted(rows), sorted([
        "wgpuBufferAddRef", "wgpuBufferDestroy", "wgpuBufferMapAsync", "wgpuBufferRelease",
        "wgpuBufferSetLabel", "wgpuDeviceAddRef", "wgpuDeviceCreateBuffer",
        "wgpuDeviceCreateTexture", "wgpuDeviceDestroy", "wgpuDeviceGetQueue",
        "wgpuDeviceRelease", "wgpuDeviceSetLabel", "wgpuInstanceWaitAny",
        "wgpuQueueOnSubmittedWorkDone", "wgpuQueueSubmit", "wgpuTextureAddRef",
        "wgpuTextureDestroy", "wgpuTextureRelease", "wgpuTextureSetLabel"]), "entry points")
    eq({r[3] for r in rows.values()}, {"table"}, "every one from the table")
    eq({k: (rows[k][2], rows[k][4]) for k in ("wgpuDeviceCreateBuffer", "wgpuBufferRelease",
                                              "wgpuQueueSubmit", "wgpuInstanceWaitAny")},
       {"wgpuDeviceCreateBuffer": ("0x1aba2f4", "entry+4"),
        "wgpuBufferRelease": ("0x1ab9f04", "entry+4"),
        "wgpuQueueSubmit": ("0x1abc904", "entry+4"),
        "wgpuInstanceWaitAny": ("0x1aba6b8", "entry+8")}, "offsets and placements")
    check(f"{ORT}: no wgpu* symbols; entry points from Dawn's proc table at 0x2bbc880: 271 "
          "entries of 24 bytes, written by its initializer" in p.stdout, p.stdout)
    check(f"{ORT}: error objects told by their class: vtables at 0x2b8c880 0x2b8fcf8" in
          p.stdout, p.stdout)
    check(f"{ORT}: webgpu.h WGPUStringView labels, texture formats since tier1" in p.stdout,
          p.stdout)
    # -v: the whole table, each entry with how its address was found.
    p = run_plain([harness.GPULEAK, "probes", "-v", "--lib", ORT])
    table = re.findall(r"^  (wgpu\w+) +0x([0-9a-f]+) +initializer lea$", p.stdout, re.M)
    eq(len(table), 271, "the whole table with -v")
    eq(dict(table)["wgpuDevicePopErrorScope"], "1aba4a0", "PopErrorScope, ORT's step")


def native_symbols(lib):
    """{wgpuX: file offset} of the dawn::native::NativeX symbols of lib, from readelf."""
    out = subprocess.run(["readelf", "-W", "--dyn-syms", "-l", lib], capture_output=True,
                         text=True, check=True).stdout
    loads = [(int(m.group(2), 16), int(m.group(1), 16), int(m.group(3), 16)) for m in
             re.finditer(r"^\s+LOAD\s+0x([0-9a-f]+) 0x([0-9a-f]+) 0x[0-9a-f]+ 0x([0-9a-f]+)",
                         out, re.M)]
    syms = {}
    for m in re.finditer(r"^\s*\d+: ([0-9a-f]+) +\d+ FUNC .* _ZN4dawn6native(\d+)Native(\w+)",
                         out, re.M):
        name = m.group(3)[:int(m.group(2)) - len("Native")]
        va = int(m.group(1), 16)
        off = next(va - v + o for v, o, sz in loads if v <= va < v + sz)
        syms["wgpu" + name] = off
    return syms


@test(root=False)
def ort_proc_table_of_a_stripped_copy_is_the_symbols():
    """A copy of libwebgpu_wrapper.so with no Dawn name and no Dawn address left in any symbol
    table (tests/ort/hide_dawn.py): its recovered table is the original's
    dawn::native::Native* symbols, entry for entry, at the same offsets; and the probes on
    the copy are where the stripped path puts them on the original (--dawn-procs)."""
    need(WRAPPER)
    import sys
    sys.path.insert(0, os.path.join(HERE, "ort"))
    import hide_dawn
    d = tempfile.mkdtemp(prefix="gpuleak-hidden-")
    try:
        copy = os.path.join(d, "libwebgpu_wrapper.so")
        names, relocs = hide_dawn.hide(WRAPPER, copy)
        eq((names, relocs), (5452, 2804), "Dawn names hidden, relocations to them rewritten")
        nm = subprocess.run(["nm", "-D", copy], capture_output=True, text=True).stdout
        check(not re.search(r"wgpu|dawn|Native", nm), "no Dawn name left in .dynsym")
        p = run_plain([harness.GPULEAK, "probes", "-v", "--lib", copy])
        eq(p.returncode, 0, f"exit code ({p.stderr})")
        table = {n: int(o, 16) for n, o in
                 re.findall(r"^  (wgpu\w+) +0x([0-9a-f]+) +initializer", p.stdout, re.M)}
        syms = native_symbols(WRAPPER)
        eq(len(table), 241, "entries")
        eq(table, {n: syms.get(n) for n in table}, "the copy's table is the original's symbols")
        # Dawn's free functions and struct helpers are not in its proc table.
        eq(sorted(set(syms) - set(table)), sorted(
            ["wgpuCreateInstance", "wgpuGetInstanceCapabilities", "wgpuGetProcAddress"] +
            ["wgpu%sFreeMembers" % n for n in (
                "AdapterInfo", "AdapterPropertiesMemoryHeaps",
                "AdapterPropertiesSubgroupMatrixConfigs", "DawnDrmFormatCapabilities",
                "SharedBufferMemoryEndAccessState", "SharedTextureMemoryEndAccessState",
                "SupportedFeatures", "SupportedWGSLLanguageFeatures", "SurfaceCapabilities")]),
           "Native* symbols that are no table entry")
        rows = [r[:5] for r in harness.probe_rows(p.stdout)]
        orig = run_plain([harness.GPULEAK, "probes", "--dawn-procs", "--lib", WRAPPER])
        eq(orig.returncode, 0, f"exit code ({orig.stderr})")
        eq(rows, [r[:5] for r in harness.probe_rows(orig.stdout)],
           "the same probes as the stripped path on the original")
        eq(len(rows), 19, "WebGPU probes")
        check(f"{copy}: error objects told by their reference count word" in p.stdout,
              p.stdout)
    finally:
        shutil.rmtree(d)


@test
def error_objects_are_counted_on_the_stripped_path():
    """The wgpu scenario's error objects on real Dawn, through the entry points of the proc
    table and without the MakeError probes (--dawn-procs, the path an object without
    symbols takes): the returned objects' reference count word tells the 4 error objects,
    at the same sites as the symbol path, none of them memory."""
    import test_capture
    need(WRAPPER)
    for extra in ([], ["--dawn-procs"]):
        v = run_gpuleak(["run"] + extra + ["--", scenario("wgpu"), "errors", "4096"]).verdict()
        eq({k: v[k] for k in ("allocs", "live_bytes", "error_objects", "failed_calls")},
           {"allocs": 1, "live_bytes": 4096, "error_objects": 4, "failed_calls": 4},
           f"counters {extra}")
        eq(sorted((f["api"], f["site"].split("+")[0], f["error_name"], f["count"])
                  for f in v["failures"]),
           [("wgpuDeviceCreateBuffer", "make_bad_buffer", "error object", 2),
            ("wgpuDeviceCreateBuffer", "make_bad_scoped", "error object", 1),
            ("wgpuDeviceCreateTexture", "make_bad_texture", "error object", 1)],
           f"failures {extra}")
    # Offline: the objects' first bytes and what they mean are in the capture.
    r = test_capture.record(["--", scenario("wgpu"), "errors", "4096"], extra=["--dawn-procs"])
    try:
        test_capture.same_verdict(r.verdict(), test_capture.report(r.path).verdict())
        eq(r.verdict()["error_objects"], 4, "error objects in the recording's verdict")
    finally:
        r.cleanup()


# ---- ONNX Runtime's WebGPU EP on lavapipe ----

@test
def ort_outputs_kept_alive_on_the_device_are_a_growth_leak():
    """decode.js keep: every run's Y (256 KiB, on the device) kept alive, as an output held
    by mistake: ORT's cache has none to give back, each run makes one more buffer. A growth
    leak at ORT's buffer site of exactly 256 KiB per step from the first step, and the gate
    fails (exit 3), though the exit releases it all (judged on the complete steps)."""
    steps = 12
    res = ort_run("keep", steps, "--fail-on-leak", "--preset", "ort-webgpu", expect_rc=3)
    v = res.verdict()
    eq(deltas(res, 0, steps - 2), [Y] * (steps - 1), "256 KiB more live each step")
    eq([(g["api"], g["site"], g["slope_bytes_per_step"], g["r2"], g["first_step"],
         g["bytes"]) for g in v["growth"]],
       [("wgpuDeviceCreateBuffer", ORT_SITE, float(Y), 1.0, 0, (steps - 1) * Y)], "growth")
    eq((v["live_bytes"], v["allocs"] - v["frees"], v["double_frees"]), (0, 0, 0),
       "released at exit, no double free")
    check("GATE:" in res.out and "grows 256 KiB per step" in res.out, res.out)
    check(app(res)["check"] == 0, "decode.js ran")


@test
def ort_capture_gives_the_live_verdict():
    """`gpuleak record` of the leaking loop, then `gpuleak report` of the file with the same
    analysis options: the same verdict, the growth leak included (the class records and the
    objects' first bytes are in the capture)."""
    import test_capture
    need(ORT)
    steps, opts = 12, ["--step", STEP, "--preset", "ort-webgpu"]
    home = tempfile.mkdtemp(prefix="gpuleak-ort-")
    r = test_capture.record(["--", "node", DECODE, "keep", str(steps)], extra=opts,
                            env=ort_env(home))
    try:
        live = r.verdict()
        eq([(g["site"], g["slope_bytes_per_step"]) for g in live["growth"]], [(ORT_SITE, Y)],
           "the live growth")
        test_capture.same_verdict(live, test_capture.report(r.path, opts).verdict())
    finally:
        r.cleanup()
        shutil.rmtree(home, ignore_errors=True)


@test
def ort_outputs_disposed_each_step_are_no_finding():
    """decode.js dispose: each Y disposed; ORT's bucket cache gives its buffer to the next
    run. Live bytes flat from the second step (W, B, a uniform, two input buffers, one
    output: 1049680 B), nothing found, everything released at exit."""
    steps = 12
    res = ort_run("dispose", steps, "-v", "--fail-on-leak", "--preset", "ort-webgpu")
    v = res.verdict()
    clean(v, "dispose")
    check(re.search(r"attached 19 probes to \S*libonnxruntime\.so\.1 \(addresses from Dawn's "
                    r"proc table\)", res.err), f"-v says where the addresses came from: {res.err}")
    eq(deltas(res, 1, steps - 2), [0] * (steps - 2), "flat")
    eq(steps_of(res)[steps - 2][0], 1049680, "live bytes of a step")
    eq((v["live_bytes"], v["allocs"], v["frees"]), (0, 18, 18), "all released")


@test
def ort_kv_cache_declared_persistent_is_no_finding():
    """decode.js kv, an LLM's loop: `present` stays on the device and comes back as `past`;
    logits are read on the CPU. With the preset and a rule saying what the KV cache is (its
    buffers are those of two rows and more), nothing is found, in ORT's default bucket
    cache and with the cache off, and --fail-on-leak passes."""
    rule = ["--preset", "ort-webgpu", "--rule", "persistent api=wgpuDeviceCreateBuffer size>=2KiB",
            "--fail-on-leak"]
    for cache, allocs in ((None, 67), ("disabled", 150)):
        v = ort_run("kv", 24, *rule, cache=cache).verdict()
        clean(v, f"kv, cache {cache or 'bucket'}")
        eq((v["live_bytes"], v["allocs"], v["frees"]), (0, allocs, allocs), "all released")


@test
def ort_kv_cache_without_a_rule_is_its_growth():
    """The same loop with no rule, ORT's cache off: each step's `present` is a new buffer one
    row longer than the last, and the past it replaces is released at the next run: the
    cache's buffer chain grows by exactly 2 rows of live bytes a step (the newest two links).
    A growth at ORT's buffer site, then everything released at the end."""
    steps = 12
    res = ort_run("kv", steps, cache="disabled")
    v = res.verdict()
    eq(deltas(res, 1, steps - 2), [2 * ROW] * (steps - 2), "two rows a step")
    eq([(g["api"], g["site"], g["first_step"]) for g in v["growth"]],
       [("wgpuDeviceCreateBuffer", ORT_SITE, 0)], "one growing site")
    check(2 * ROW <= v["growth"][0]["slope_bytes_per_step"] < 2.2 * ROW, v["growth"])
    eq((v["live_bytes"], v["allocs"], v["frees"], v["leaks"]), (0, 78, 78, []),
       "released at the end")


@test
def ort_releases_after_a_submit_are_pending_until_the_work_is_done():
    """ORT releases an input's staging buffer right after the submit that copies it: a free
    while the queue runs, pending until its work is known done, never a leak nor a double
    free. dispose (no readback): the last two runs' staging buffers (256 KiB each) are
    pending at each step's end, each freed when Dawn hands its handle out again, and at
    exit. cpu (Y read back: wgpuBufferMapAsync, then wgpuInstanceWaitAny): none is pending
    at any step's end."""
    steps = 8
    res = ort_run("dispose", steps)
    v = res.verdict()
    # The run's own staging buffer is pending at its end; earlier runs' are freed when Dawn
    # hands their handles out again, which depends on Dawn's heap: a few stay pending.
    pend = [steps_of(res)[s][1] for s in range(0, steps - 1)]
    check(all(p % Y == 0 and Y <= p <= 4 * Y for p in pend),
          f"pending at each step's end: the last run's 256 KiB staging, and a few more: {pend}")
    eq(pend[0], Y, "after the first step: its staging buffer")
    eq((v["pending_bytes"], v["double_frees"], v["leaks"], v["growth"], v["allocs"] - v["frees"]),
       (0, 0, [], [], 0), "nothing pending at the end, no double free, no leak")
    eq(v["async_reuse"] + v["released_by_owner"] >= steps - 1, True,
       f"each staging buffer's pending release ended: {v['async_reuse']} handles made again, "
       f"{v['released_by_owner']} by the device's release")
    res = ort_run("cpu", steps)
    v = res.verdict()
    eq([steps_of(res)[s][1] for s in range(-1, steps - 1)], [0] * steps,
       "none pending at a step's end")
    clean(v, "cpu")
    home = tempfile.mkdtemp(prefix="gpuleak-ort-")
    try:
        p = run_plain(["node", DECODE, "cpu", str(steps)], env=ort_env(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    eq(app(res)["check"], json.loads(p.stdout.splitlines()[-1])["check"],
       "Y read back as without gpuleak")


@test
def ort_under_attach():
    """gpuleak attach to decode.js once its session exists (its weights made before): the
    kept outputs' growth of 256 KiB a step, and the KV loop with its rule clean."""
    steps = 12
    res = ort_attach("keep", steps, "--fail-on-leak", expect_rc=3)
    v = res.verdict()
    eq([(g["site"], g["slope_bytes_per_step"], g["r2"]) for g in v["growth"]],
       [(ORT_SITE, float(Y), 1.0)], "growth")
    res = ort_attach("kv", 24, "--preset", "ort-webgpu", "--rule",
                     "persistent api=wgpuDeviceCreateBuffer size>=2KiB", "--fail-on-leak")
    clean(res.verdict(), "kv under attach")
