# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""WebGPU end to end on real Dawn: libwebgpu_wrapper.so (npm bun-webgpu-linux-x64) driven by
the wgpu and wgpu_decode scenarios, dawn.node (npm webgpu) driven by Node, and the
webgpu.h generation detection on real libraries of both generations. Expected numbers are
in the scenarios' comments (tests/scenarios/wgpu.c, wgpu_decode.c, wgpu_node.mjs)."""
import os
import re
import shutil
import signal
import tempfile
import time

import harness
from harness import (Attached, Proc, check, eq, gpuleak_env, leak_sites, read_ndjson,
                     run_gpuleak, run_plain, scenario, test, tmpfile, env_for_targets,
                     check_sanitizers)

KiB = 1 << 10
MiB = 1 << 20
DEPS = os.path.join(os.environ.get("GPULEAK_DEPS", "/var/cache/gpuleak"), "npm")
DAWN = os.path.join(DEPS, "bun-webgpu-linux-x64@0.1.7", "node_modules",
                    "bun-webgpu-linux-x64", "libwebgpu_wrapper.so")
WEBGPU_NODE = os.path.join(DEPS, "webgpu@0.6.2", "node_modules", "webgpu")
DAWN_NODE = os.path.join(WEBGPU_NODE, "dist", "linux-x64", "dawn.node")
DAWN_2020 = os.path.join(DEPS, "webgpu@0.1.1", "node_modules", "webgpu", "generated", "0.0.1",
                         "linux", "build", "Release", "libdawn_proc.so")
ORT = os.path.join(DEPS, "onnxruntime-node@1.30.0", "node_modules", "onnxruntime-node", "bin",
                   "napi-v6", "linux", "x64", "libonnxruntime.so.1")
UNKNOWN = os.path.join(harness.LIB, "libwgpu_unknown.so")
NODE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios",
                           "wgpu_node.mjs")
GLES_ENV = {"WGPU_BACKEND": "gles", "EGL_PLATFORM": "surfaceless"}


def need(path):
    check(os.path.exists(path), f"{path} missing: run scripts/install-deps.sh as root")


def wgpu(*args, env=None, gl_args=()):
    """The wgpu scenario under `gpuleak run`; its verdict."""
    need(DAWN)
    e = gpuleak_env()
    e.update(env or {})
    return run_gpuleak(["run"] + list(gl_args) + ["--", scenario("wgpu")] +
                       [str(a) for a in args], env=e).verdict()


def counters(v, *names):
    return {n: v[n] for n in names}


def by_site(v, key="leaks"):
    """{(api, function, label): (bytes, count)}"""
    out = {}
    for l in v[key]:
        k = (l["api"], l["site"].split("+")[0], l.get("label"))
        b, c = out.get(k, (0, 0))
        out[k] = (b + l["bytes"], c + l["count"])
    return out


def probes(lib, *extra):
    p = run_plain([harness.GPULEAK, "probes"] + list(extra) + ["--lib", lib])
    lines = p.stdout.splitlines()
    rows = [l.split() for l in lines[1:] if l.split() and l.split()[1:2] == ["webgpu"]]
    abi = [l for l in lines if l.startswith(lib + ": ")]
    return p, rows, abi


# ---- the webgpu.h generation, told from real libraries ----

@test
def webgpu_abi_stringview_on_libwebgpu_wrapper():
    need(DAWN)
    p, rows, abi = probes(DAWN)
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    apis = {r[0] for r in rows}
    for name in ("wgpuDeviceCreateBuffer", "wgpuDeviceCreateTexture", "wgpuBufferAddRef",
                 "wgpuBufferRelease", "wgpuBufferDestroy", "wgpuBufferSetLabel",
                 "wgpuTextureDestroy", "wgpuDeviceDestroy", "wgpuDeviceRelease",
                 "wgpuQueueSubmit", "wgpuQueueOnSubmittedWorkDone",
                 "dawn::native::BufferBase::MakeError"):
        check(name in apis, f"{name} listed: {sorted(apis)}")
    eq(len(rows), 21, "WebGPU probes in libwebgpu_wrapper.so")
    eq({r[3] for r in rows}, {"global"}, "exported (.dynsym) symbols")
    eq(len(abi), 1, f"one generation line: {p.stdout}")
    check("WGPUStringView labels, texture formats before tier1" in abi[0] and
          "Dawn's SetLabel takes a WGPUStringView" in abi[0] and
          "wgpuGetInstanceCapabilities" in abi[0], f"generation and evidence: {abi[0]}")


@test
def webgpu_abi_tier1_and_symtab_on_dawn_node():
    need(DAWN_NODE)
    p, rows, abi = probes(DAWN_NODE)
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    eq(len(rows), 21, "WebGPU probes in dawn.node")
    eq({r[3] for r in rows}, {"local"}, "found as LOCAL symbols in .symtab only")
    check("WGPUStringView labels, texture formats since tier1" in abi[0] and
          "wgpuTextureGetTextureBindingViewDimension" in abi[0], f"generation: {abi}")


@test
def webgpu_abi_cstr_on_real_2020_dawn():
    """maierfelix's webgpu@0.1.1 (2020) ships Dawn's libdawn_proc.so: wgpu*Reference,
    char const * labels."""
    need(DAWN_2020)
    p, rows, abi = probes(DAWN_2020)
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    apis = {r[0] for r in rows}
    check({"wgpuBufferReference", "wgpuDeviceCreateBuffer", "wgpuBufferRelease"} <= apis,
          f"legacy entries: {sorted(apis)}")
    check("char const * labels" in abi[0] and "wgpuBufferReference" in abi[0] or
          "Reference" in abi[0], f"generation: {abi}")


@test
def webgpu_abi_unknown_is_not_guessed():
    need(UNKNOWN)
    p, rows, abi = probes(UNKNOWN)
    eq(p.returncode, 1, "nothing traceable without the generation")
    eq(rows, [], "no probes")
    check(any("unknown generation" in l for l in abi), f"says unknown: {p.stdout}")
    check(any("5 WebGPU functions not traced" in l and "--webgpu-abi" in l for l in abi),
          f"says what to do: {p.stdout}")
    p, rows, abi = probes(UNKNOWN, "--webgpu-abi=cstr")
    eq(p.returncode, 0, f"exit code with --webgpu-abi ({p.stderr})")
    eq(len(rows), 5, "every function once configured")
    check("char const * labels" in abi[0] and "--webgpu-abi" in abi[0], f"says why: {abi}")
    p = run_plain([harness.GPULEAK, "probes", "--webgpu-abi=v7", "--lib", UNKNOWN])
    eq(p.returncode, 2, "invalid generation is a usage error")


# ---- semantics on real Dawn (Null backend) ----

@test
def webgpu_n_created_k_destroyed_r_released():
    n, k, r, size = 10, 3, 2, 64 * KiB
    v = wgpu("basic", n, k, r, size)
    eq(counters(v, "allocs", "frees", "live_count", "live_bytes", "pending_bytes",
                "failed_calls", "unknown_refs", "dropped_events"),
       {"allocs": n, "frees": k + r, "live_count": n - k - r, "live_bytes": (n - k - r) * size,
        "pending_bytes": 0, "failed_calls": 0, "unknown_refs": 0, "dropped_events": 0},
       "counters")
    eq(by_site(v), {("wgpuDeviceCreateBuffer", "create_buffers", None):
                    ((n - k - r) * size, n - k - r)}, "leaks")
    owner = v["leaks"][0]["owner"]
    eq((owner["name"], owner["label"]), ("wgpu#1", "scenario-device"), "grouped by device")
    eq(v["leaks"][0]["memory"], "device", "memory kind")


@test
def webgpu_unbalanced_addref_is_a_leak_at_its_creation_site():
    size = 4 * KiB
    v = wgpu("addref", size)
    eq(by_site(v), {("wgpuDeviceCreateBuffer", "make_shared", "shared"): (size, 1)},
       "only the buffer with the extra reference leaks")
    refs = [(a["api"], a["site"].split("+")[0], a["count"]) for a in v["leaks"][0]["addref_sites"]]
    eq(refs, [("wgpuBufferAddRef", "cache_hold", 1)], "names the unbalanced AddRef site")
    eq(counters(v, "allocs", "frees"), {"allocs": 2, "frees": 1}, "balanced one freed")


@test
def webgpu_destroy_in_flight_is_pending_until_work_done():
    size = 64 * KiB
    v = wgpu("inflight", size, "nowait")
    eq(counters(v, "allocs", "frees", "pending_bytes", "pending_count", "live_bytes"),
       {"allocs": 3, "frees": 1, "pending_bytes": size, "pending_count": 1, "live_bytes": size},
       "exit before the work-done callback: dst pending, idle freed at once")
    eq(by_site(v, "pending"), {("wgpuDeviceCreateBuffer", "make_dst", None): (size, 1)},
       "pending free at dst's creation site")
    eq(by_site(v), {("wgpuDeviceCreateBuffer", "make_src", None): (size, 1)}, "src live")
    v = wgpu("inflight", size, "wait")
    eq(counters(v, "allocs", "frees", "pending_bytes", "live_bytes", "unmatched_done"),
       {"allocs": 3, "frees": 3, "pending_bytes": 0, "live_bytes": 0, "unmatched_done": 0},
       "the work-done callback completed the pending free")


@test
def webgpu_spontaneous_callback_inside_the_call_is_seen():
    """Dawn runs an AllowSpontaneous callback inside wgpuQueueOnSubmittedWorkDone: the
    process is held at its entry until the callback has its probe."""
    size = 64 * KiB
    need(DAWN)
    res = run_gpuleak(["run", "--", scenario("wgpu"), "inflight", str(size), "spontaneous"])
    check("callback inside wgpuQueueOnSubmittedWorkDone" in res.out,
          f"the callback ran inside the call: {res.out}")
    v = res.verdict()
    eq(counters(v, "allocs", "frees", "pending_bytes", "live_bytes", "unmatched_done"),
       {"allocs": 3, "frees": 3, "pending_bytes": 0, "live_bytes": 0, "unmatched_done": 0},
       "completion seen")


@test
def webgpu_device_destroy_and_release_free_what_they_own():
    size = 32 * KiB
    v = wgpu("devices", size)
    eq(counters(v, "allocs", "alloc_bytes", "frees", "released_by_owner", "live_bytes",
                "pending_bytes", "unknown_refs"),
       {"allocs": 6, "alloc_bytes": 5 * size + 16384, "frees": 6, "released_by_owner": 6,
        "live_bytes": 0, "pending_bytes": 0, "unknown_refs": 0},
       "wgpuDeviceDestroy freed 4, wgpuDeviceRelease to zero freed 2")
    eq(v["leaks"], [], "no leaks")


@test
def webgpu_labels_in_report_and_json():
    size = 4 * KiB
    v = wgpu("labels", size)
    # NUL-terminated: the first 63 bytes (the 64-byte buffer keeps the NUL BPF reads).
    long_label = ("long-label-" + "x" * 89)[:63]
    eq(by_site(v), {
        ("wgpuDeviceCreateBuffer", "alloc_kv", "kv_cache"): (3 * size, 3),
        ("wgpuDeviceCreateBuffer", "alloc_act", "activations"): (2 * size, 2),
        ("wgpuDeviceCreateBuffer", "alloc_act", None): (size, 1),
        ("wgpuDeviceCreateBuffer", "alloc_late", "renamed"): (size, 1),
        ("wgpuDeviceCreateBuffer", "alloc_long", long_label): (size, 1),
        ("wgpuDeviceCreateTexture", "alloc_tex", "albedo"): (16384, 1),
    }, "leaks by site and label")
    eq({l["owner"]["label"] for l in v["leaks"]}, {"llm-device"}, "device label")


@test
def webgpu_graph_groups_by_device():
    """The allocation graph's top level for WebGPU memory is its device, named and labelled,
    with everything the device owns under it by stack."""
    need(DAWN)
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("wgpu"), "labels", "4096"])
    lines = res.out.splitlines()
    i = lines.index("allocation graph (live bytes by stack, outermost caller first):")
    eq(lines[i + 2].split(None, 2), ["48.0", "KiB", '9  WebGPU device wgpu#1 "llm-device"'],
       "one group: the device, all 9 objects (48 KiB)")
    tree = "\n".join(lines[i + 3:i + 17])
    for want in ("└─ labels (wgpu)", "├─ alloc_tex+0x", "│  └─ wgpuDeviceCreateTexture",
                 "├─ alloc_kv+0x", "└─ alloc_long+0x"):
        check(want in tree, f"{want!r} under the device:\n{tree}")


@test
def webgpu_texture_bytes_by_format_and_mip_chain():
    v = wgpu("textures")
    got = {l["label"]: (l["bytes"], l["count"], l["unsized"]) for l in v["leaks"]}
    eq(got, {
        "rgba8-mips": (349524, 1, 0),      # 256x256 RGBA8, 9 levels
        "r32f-3d": (299008, 1, 0),         # 64x64x16 R32F 3D, 3 levels (depth halves)
        "rgba16f-array": (491520, 1, 0),   # 128x64 x 6 layers RGBA16F, 2 levels
        "bgra8-msaa4": (120000, 1, 0),     # 100x75 BGRA8 x 4 samples
        "rgba8-odd": (168, 1, 0),          # 7x5 RGBA8, 3 levels: 7x5 + 3x2 + 1x1
        "d24s8": (0, 1, 1),                # implementation-defined size: unknown, not guessed
    }, "bytes per texture")
    eq(v["live_count"], 6, "the textures not freed below")
    # texture references, as buffers': an AddRef kept alive, one given back, a Destroy
    odd = [l for l in v["leaks"] if l["label"] == "rgba8-odd"][0]
    eq([(a["api"], a["site"].split("+")[0], a["count"]) for a in odd["addref_sites"]],
       [("wgpuTextureAddRef", "tex_hold", 1)], "rgba8-odd kept by tex_hold's reference")
    eq(counters(v, "allocs", "frees", "unknown_refs"), {"allocs": 8, "frees": 2, "unknown_refs": 0},
       "depth32f released after its borrowed reference came back, rg16f-1d destroyed")


@test
def webgpu_error_objects_are_not_memory():
    size = 4 * KiB
    v = wgpu("errors", size)
    eq(counters(v, "allocs", "live_bytes", "error_objects", "failed_calls", "unknown_refs"),
       {"allocs": 1, "live_bytes": size, "error_objects": 4, "failed_calls": 4,
        "unknown_refs": 0}, "counters")
    fails = {(f["api"], f["site"].split("+")[0], f["error_name"]): f["count"]
             for f in v["failures"]}
    eq(fails, {("wgpuDeviceCreateBuffer", "make_bad_buffer", "error object"): 2,
               ("wgpuDeviceCreateTexture", "make_bad_texture", "error object"): 1,
               ("wgpuDeviceCreateBuffer", "make_bad_scoped", "error object"): 1},
       "error objects as failures at their sites, inside an error scope too")
    eq(by_site(v), {("wgpuDeviceCreateBuffer", "make_good", None): (size, 1)}, "leaks")


# ---- OpenGL ES on llvmpipe ----

def gles_env(cache):
    # Mesa writes its shader cache under XDG_CACHE_HOME: keep it out of root's home.
    return dict(GLES_ENV, XDG_CACHE_HOME=cache)


@test
def webgpu_gles_backend():
    need(DAWN)
    cache = tempfile.mkdtemp(prefix="gpuleak-test-mesa-")
    try:
        return gles_checks(gles_env(cache))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def gles_checks(env):
    p = run_plain([scenario("wgpu"), "basic", "1", "0", "0", "4"], env=env_for_targets(env))
    if p.returncode:
        print(f"  EGL/GLES unavailable here ({p.stderr.strip()})")
        return "skip"
    v = wgpu("basic", 8, 2, 3, 64 * KiB, env=env)
    eq(counters(v, "allocs", "frees", "live_bytes"),
       {"allocs": 8, "frees": 5, "live_bytes": 3 * 64 * KiB}, "basic on GLES")
    v = wgpu("inflight", 256 * KiB, "nowait", env=env)
    eq(counters(v, "pending_bytes", "frees"), {"pending_bytes": 256 * KiB, "frees": 1},
       "pending on GLES")
    v = wgpu("inflight", 256 * KiB, "wait", env=env)
    eq(counters(v, "pending_bytes", "frees", "live_bytes"),
       {"pending_bytes": 0, "frees": 3, "live_bytes": 0}, "completed on GLES")


# ---- attach mode, the decode loop, Node ----

@test
def webgpu_attach_to_running_dawn_process():
    """Device, adapter and queue made before attach: first seen at their first use."""
    need(DAWN)
    a = Attached("wgpu", ["basic", 6, 1, 1, 8192])
    try:
        a.wait_attached()
        a.target.send()
        a.target.wait_line("done")
        a.target.send()
        v = a.finish().verdict()
    finally:
        a.cleanup()
    eq(counters(v, "allocs", "frees", "live_bytes", "unknown_refs"),
       {"allocs": 6, "frees": 2, "live_bytes": 4 * 8192, "unknown_refs": 0}, "counters")
    eq(v["leaks"][0]["owner"]["label"], "scenario-device", "device labelled after attach")


@test
def webgpu_decode_loop_finds_the_per_step_leak():
    need(DAWN)
    steps = 10
    res = run_gpuleak(["run", "--", scenario("wgpu_decode"), str(steps)])
    v = res.verdict()
    eq(by_site(v), {
        ("wgpuDeviceCreateBuffer", "kv_cache_init", "kv_cache"): (32 * MiB, 4),
        ("wgpuDeviceCreateBuffer", "leaky_logits", "logits"): (steps * MiB, steps),
    }, "kv_cache and the per-step leak")
    eq(counters(v, "allocs", "frees", "pending_bytes", "unmatched_done"),
       {"allocs": 1 + 4 + 3 * steps, "frees": 1 + 2 * steps, "pending_bytes": 0,
        "unmatched_done": 0}, "activations freed at each step's work-done")
    for word in ("kv_cache", "logits", "leaky_logits", "llm-device"):
        check(word in res.out, f"{word} in the text report:\n{res.out}")


def step_sites(step):
    """[(function, label, class, live, allocated, freed, net)] of a step record, in order."""
    return [(x["site"].split("+")[0], x["label"], x["class"], x["live_bytes"],
             x["allocated_bytes"], x["freed_bytes"], x["net_bytes"]) for x in step["sites"]]


@test
def webgpu_queue_submits_end_sync_steps_live_and_offline():
    """--step sync on real Dawn: each wgpuQueueSubmit with work ends a step, the 2 empty
    submits each step makes (POLLS) end none. wgpu_decode 12 2: 12 submits, so init + 12
    steps; the 1 MiB per step at leaky_logits is a growth leak of exactly 1 MiB per step,
    the KV cache made before the first submit is retained by init. The capture of the run,
    reported offline, gives the same step records and verdict."""
    need(DAWN)
    steps = 12
    path = tmpfile(".glc")
    try:
        live = run_gpuleak(["record", "-o", path, "--interval", "0", "--step", "sync", "--",
                            scenario("wgpu_decode"), str(steps), "2"])
        off = run_gpuleak(["report", path, "--step", "sync"])
    finally:
        if os.path.exists(path):
            os.unlink(path)
    for res, how in ((live, "live"), (off, "offline")):
        v = res.verdict()
        recs = [r for r in res.records if r["type"] == "step"]
        eq((v["step_source"], v["steps"]), ("sync", steps + 1), f"{how}: one step per submit")
        eq([r["step"] for r in recs], list(range(-1, steps)), f"{how}: step records")
        # init: weights 16 + kv_cache 4 x 8 + the first step's activations 2 x 2 MiB; each
        # step then frees the last step's activations (at their work-done), makes 2 new ones
        # and 1 MiB of logits; after the last submit the weights go.
        eq([(r["allocated_bytes"] // MiB, r["freed_bytes"] // MiB) for r in recs],
           [(52, 0)] + [(5, 4)] * (steps - 1) + [(1, 20)], f"{how}: MiB allocated, freed")
        eq([r["live_bytes"] // MiB for r in recs],
           [52] + [53 + k for k in range(steps - 1)] + [32 + steps], f"{how}: MiB live")
        g = {x["site"].split("+")[0]: x for x in v["growth"]}
        eq(sorted(g), ["leaky_logits"], f"{how}: the growth leak")
        eq((g["leaky_logits"]["slope_bytes_per_step"], g["leaky_logits"]["r2"],
            g["leaky_logits"]["first_step"]), (float(MiB), 1.0, 0), f"{how}: 1 MiB per submit")
        eq(by_site(v), {("wgpuDeviceCreateBuffer", "leaky_logits", "logits"): (steps * MiB, steps)},
           f"{how}: leaks")
        eq([(x["label"], x["bytes"], x["count"], x["retained_by"]) for x in v["retained"]],
           [("kv_cache", 32 * MiB, 4, "init")], f"{how}: retained by init")
        eq((v["init_bytes"], v["init_count"]), (32 * MiB, 4), f"{how}: init bytes")
        # per site, MiB: (function, label, class, live, allocated, freed, net)
        eq([(f, l, c, lv // MiB, a // MiB, fr // MiB, n // MiB)
            for f, l, c, lv, a, fr, n in step_sites(recs[0])],
           [("kv_cache_init", "kv_cache", "init", 32, 32, 0, 32),
            ("load_weights", "weights", "init", 16, 16, 0, 16),
            ("decode_step", "activations", "init", 4, 4, 0, 4)], f"{how}: init step's sites")
        eq([(f, c, lv // MiB, a // MiB, fr // MiB, n // MiB)
            for f, l, c, lv, a, fr, n in step_sites(recs[1])],
           [("decode_step", "none", 4, 4, 0, 4), ("decode_step", "init", 0, 0, 4, -4),
            ("leaky_logits", "none", 1, 1, 0, 1)], f"{how}: step 0 frees init's activations")
        for k in range(1, steps - 1):
            eq([(f, lv // MiB, a // MiB, fr // MiB, n // MiB)
                for f, l, c, lv, a, fr, n in step_sites(recs[k + 1])],
               [("leaky_logits", k + 1, 1, 0, 1), ("decode_step", 4, 4, 4, 0)],
               f"{how}: step {k}: the leak first")
        eq([(f, c, lv // MiB, a // MiB, fr // MiB, n // MiB)
            for f, l, c, lv, a, fr, n in step_sites(recs[-1])],
           [("load_weights", "init", 0, 0, 16, -16), ("decode_step", "none", 0, 0, 4, -4),
            ("leaky_logits", "none", steps, 1, 0, 1)], f"{how}: the last step")
    eq([r for r in off.records if r["type"] == "step"],
       [r for r in live.records if r["type"] == "step"], "every step record as it was live")
    # The empty submits were traced, and ended no step.
    v0 = run_gpuleak(["run", "--interval", "0", "--step", "sync", "--",
                      scenario("wgpu_decode"), str(steps)]).verdict()
    eq((v0["steps"], live.verdict()["calls"] - v0["calls"]), (steps + 1, 2 * steps),
       "without the empty submits: 24 calls fewer, the same steps")
    lv, ov = live.verdict(), off.verdict()
    same = ("capture", "slow_probe_sites", "moved_probe_sites")
    eq({k: x for k, x in ov.items() if k not in same},
       {k: x for k, x in lv.items() if k not in same}, "the verdict as it was live")


@test
def webgpu_node_dawn_node_symtab():
    """A JavaScript workload on dawn.node, whose wgpu* exist only as .symtab LOCALs."""
    need(DAWN_NODE)
    json_path = tmpfile(".ndjson")
    env = gpuleak_env()
    env["WEBGPU_INDEX"] = os.path.join(WEBGPU_NODE, "index.js")
    gl = Proc([harness.GPULEAK, "run", "--json", json_path, "--interval", "0", "--", "node",
               NODE_SCRIPT], env=env)
    try:
        gl.wait_line(r"^done", timeout=60)
        # The objects are alive now; at exit dawn.node would release them all.
        gl.p.send_signal(signal.SIGTERM)
        # Node exits at the end of its stdin, which it shares with gpuleak: keep it open
        # until gpuleak has detached.
        eq(gl.finish(keep_stdin=True), 0, f"gpuleak exit code ({gl.text('err')})")
    finally:
        gl.kill()
    check_sanitizers(gl.text("err"))
    recs = read_ndjson(json_path)
    os.unlink(json_path)
    v = [r for r in recs if r.get("type") == "verdict"][0]
    eq(v["state"], "detached", "node still running")
    got = {(l["api"], l["label"]): (l["bytes"], l["count"]) for l in v["leaks"]}
    eq(got, {
        ("wgpuDeviceCreateBuffer", "kv_cache"): (3 * MiB, 3),
        ("wgpuDeviceCreateBuffer", "logits"): (5 * 64 * KiB, 5),
        # Tier1 numbering: misread as the older one these would be 16384 and 307200.
        ("wgpuDeviceCreateTexture", "albedo"): (64 * 64 * 8, 1),
        ("wgpuDeviceCreateTexture", "depth"): (640 * 480 * 4, 1),
    }, "leaks by label")
    eq({l["owner"]["name"] for l in v["leaks"]}, {"wgpu#1"}, "one device")
    eq(counters(v, "allocs", "frees", "error_objects", "pending_bytes", "unmatched_done"),
       {"allocs": 11, "frees": 1, "error_objects": 1, "pending_bytes": 0, "unmatched_done": 0},
       "the invalid buffer is an error object; the destroyed one freed")
    eq([(f["api"], f["module"], f["error_name"], f["count"]) for f in v["failures"]],
       [("wgpuDeviceCreateBuffer", "dawn.node", "error object", 1)], "failures")
    # dawn.node's C++ wrapper keeps a reference of its own to every buffer it creates.
    refs = {(a["api"], a["count"]) for l in v["leaks"] if l["label"] == "kv_cache"
            for a in l["addref_sites"]}
    eq(refs, {("wgpuBufferAddRef", 3)}, "dawn.node's own references, still held")


# ---- shutdown: a device destroyed, handles released by Node at exit ----

def fn(name):
    return name.split("+")[0]


@test
def webgpu_device_destroyed_at_shutdown_does_not_cancel_growth():
    """wgpu_shutdown on real Dawn: 1 MiB "logits" kept per decode step, then at shutdown the
    device destroyed (everything goes with it) or every buffer released; growth judged up to
    the last allocation, with how the memory ended. A clean variant of each stays clean.
    Steps at the decode step's symbol and at its queue submit."""
    need(DAWN)
    for step in (["--step", "sym:wgpu_shutdown:decode_step"], ["--step", "sync"]):
        for end, how, api, ended, released in (
                ("destroy", "owner", "wgpuDeviceDestroy",
                 "released when its device was destroyed (wgpuDeviceDestroy)", 39 * MiB),
                ("free", "freed", "wgpuBufferRelease", "freed at shutdown (wgpuBufferRelease)",
                 38 * MiB)):
            what = f"{end}, {step[1]}"
            res = run_gpuleak(["run", "--interval", "0", "--fail-on-leak"] + step +
                              ["--", scenario("wgpu_shutdown"), "30", "1", end], expect_rc=3)
            v = res.verdict()
            eq(v["steps"], 31, f"{what}: steps")
            eq([(fn(g["site"]), g["slope_bytes_per_step"], g["first_step"], g["bytes"],
                 g["live_bytes"], g["ended"]) for g in v["growth"]],
               [("keep_logits", float(MiB), 0, 30 * MiB, 0, ended)], f"{what}: growth")
            eq(v["growth"][0]["shutdown"]["by"],
               [{"how": how, "api": api, "bytes": 30 * MiB, "count": 30}], f"{what}: by")
            eq([(s["frames"][0]["function"], s["bytes"]) for s in v["growth"][0]["stacks"]],
               [("keep_logits", 30 * MiB)], f"{what}: the growing stack")
            sd = v["shutdown"]
            # the KV cache (8 MiB) and the copy source (1 MiB) made before the first step
            eq((sd["step"], sd["live_bytes"], sd["released_bytes"], sd["by"]),
               (29, 39 * MiB, released,
                [{"how": how, "api": api, "bytes": released, "count": released // MiB - 6}]),
               f"{what}: the shutdown")
            eq([(p["webgpu"], p["bytes"], p["count"], p["live_bytes"]) for p in v["peak"]],
               [("wgpu#1", 40 * MiB, 33, 39 * MiB - released)], f"{what}: the peak")
            eq([(fn(s["site"]), s["label"], s["bytes"]) for s in v["peak"][0]["sites"]],
               [("keep_logits", "logits", 29 * MiB), ("kv_cache_init", "kv_cache", 8 * MiB),
                ("scratch", "scratch", 2 * MiB), ("main", None, MiB)],
               f"{what}: the live set at the peak")
            check(ended in res.out, f"{what}: said in the report:\n{res.out}")
            clean = run_gpuleak(["run", "--interval", "0", "--fail-on-leak"] + step +
                                ["--", scenario("wgpu_shutdown"), "30", "0", end]).verdict()
            eq(clean["growth"], [], f"{what}, nothing kept: no growth")


BPFTRACE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bpftrace",
                               "wgpu_buffers.bt")
NODE_DECODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios",
                           "wgpu_node_decode.mjs")


def bpftrace_maps(text):
    """{name: {key tuple: value}} from bpftrace's map printout."""
    out = {}
    for m in re.finditer(r"^@(\w+)\[([^\]]*)\]: (\d+)$", text, re.M):
        key = tuple(int(k) for k in m.group(2).split(", "))
        out.setdefault(m.group(1), {})[key] = int(m.group(3))
    return out


def stop_bpftrace(bt, timeout=240):
    """Stop bpftrace and read what it printed. Debian's bpftrace (0.17) notes an exit signal in
    a flag and looks at it only when epoll_wait returns EINTR: a signal that lands between two
    of its 100 ms waits is never acted on, and bpftrace then runs forever (seen once in CI).
    So the signal is sent again until it exits; SIGTERM, because bpftrace puts SIGINT back to
    its default (death, maps unprinted) once its loop is over, and keeps its SIGTERM handler.
    It detaches classic uprobe links one grace period each (tens of ms here, more on a loaded
    VM) before it exits: a count-free bound, generous."""
    deadline = time.time() + timeout
    while bt.p.poll() is None and time.time() < deadline:
        bt.p.send_signal(signal.SIGTERM)
        end = min(time.time() + 2, deadline)
        while bt.p.poll() is None and time.time() < end:
            bt._pump(0.2)
    bt.finish(timeout=max(deadline - time.time(), 1))


def node_decode_with_bpftrace(steps, keep, expect_rc):
    """gpuleak run --step sync on the JavaScript decode loop, with the bpftrace script on the
    same functions of the same dawn.node at the same time: gpuleak's verdict, and bpftrace's
    maps of node's pid."""
    need(DAWN_NODE)
    check(shutil.which("bpftrace"), "bpftrace missing: run scripts/install-deps.sh as root")
    # bpftrace cannot parse the '@' of the npm folder in a probe's path: through a link
    tmp = tempfile.mkdtemp(prefix="gpuleak-test-")
    link = os.path.join(tmp, "dawn.node")
    os.symlink(DAWN_NODE, link)
    # bpftrace says so once every probe is attached (0.17 on stderr, later ones on stdout):
    # its "Attaching N probes" line comes before the attach, and a workload started on it
    # could run ahead of the script.
    notice = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
    bt = Proc(["bpftrace", BPFTRACE_SCRIPT, link], stdin=False,
              env=dict(os.environ, **{notice: "1"}))
    try:
        deadline = time.time() + 120
        while not any(line.strip() == notice for lines in bt.lines.values() for line in lines):
            if not bt._pump(0.2) and (bt.p.poll() is not None or time.time() > deadline):
                raise harness.Fail(f"bpftrace did not attach: {bt.text('out')}{bt.text('err')}")
        env = gpuleak_env()
        env["WEBGPU_INDEX"] = os.path.join(WEBGPU_NODE, "index.js")
        res = run_gpuleak(["run", "--interval", "0", "--step", "sync", "--fail-on-leak", "--",
                           "node", NODE_DECODE, str(steps), str(keep)], env=env,
                          expect_rc=expect_rc)
        stop_bpftrace(bt)
    finally:
        bt.kill()
        shutil.rmtree(tmp)
    v = res.verdict()
    maps = bpftrace_maps(bt.text("out"))
    mine = {name: {k[1:]: n for k, n in m.items() if k[0] == v["pid"]} for name, m in maps.items()}
    return res, v, {name: (m[()] if list(m) == [()] else m) for name, m in mine.items() if m}


@test
def webgpu_node_releases_every_handle_at_exit_growth_stands():
    """A JavaScript decode loop on dawn.node that keeps a 1 MiB buffer per step and lets Node
    release every handle at exit: growth of exactly 1 MiB per step at dawn.node's createBuffer,
    released at shutdown by wgpuBufferRelease. Its counts checked against an independent
    bpftrace script on the same probes: buffers created and their bytes, destroyed, released
    by their last reference after the last creation, submits (steps)."""
    steps = 20
    res, v, bt = node_decode_with_bpftrace(steps, 1, expect_rc=3)
    created = 2 + 1 + 2 * steps  # kv_cache, dst, scratch and logits per step
    created_bytes = 2 * MiB + 256 * KiB + steps * (256 * KiB + MiB)
    released = 2 * MiB + 256 * KiB + steps * MiB
    eq((bt["created"], bt["created_bytes"], bt["destroyed"], bt["destroyed_bytes"],
        bt["released"], bt["released_bytes"], bt["submits"]),
       (created, created_bytes, steps, steps * 256 * KiB, 3 + steps, released, steps),
       "bpftrace: what the script did")
    eq(bt["released_at_creation"], {(created,): released},
       "bpftrace: every release after the last creation")
    eq(sorted(bt["destroyed_at_creation"]), [(n,) for n in range(4, created, 2)],
       "bpftrace: each scratch destroyed in its own step, before its step's logits")
    eq((v["allocs"], v["alloc_bytes"], v["frees"], v["steps"]),
       (bt["created"], bt["created_bytes"], bt["destroyed"] + bt["released"],
        bt["submits"] + 1), "gpuleak: the same calls, and a step per submit")
    eq((v["shutdown"]["released_bytes"], v["shutdown"]["released_count"], v["shutdown"]["by"]),
       (bt["released_at_creation"][(created,)], bt["released"],
        [{"how": "freed", "api": "wgpuBufferRelease", "bytes": released,
          "count": bt["released"]}]), "gpuleak: released at shutdown, as bpftrace saw it")
    eq([(g["api"], g["slope_bytes_per_step"], g["bytes"], g["live_bytes"], g["ended"])
        for g in v["growth"]],
       [("wgpuDeviceCreateBuffer", float(MiB), steps * MiB, 0,
         "freed at shutdown (wgpuBufferRelease)")], "gpuleak: the growth leak")
    eq({s["frames"][0]["module"] for s in v["growth"][0]["stacks"]}, {"dawn.node"},
       "gpuleak: its stacks start in dawn.node")
    check(fn(v["growth"][0]["site"]).startswith("wgpu::binding::GPUDevice::createBuffer"),
          f"named by dawn.node's binding: {v['growth'][0]['site']}")
    eq([(p["webgpu"], p["bytes"], p["live_bytes"]) for p in v["peak"]],
       [("wgpu#1", released, 0)], "gpuleak: the peak, all of it gone at the end")
    eq({(s["label"], s["bytes"]) for s in v["peak"][0]["sites"]},
       {("logits", steps * MiB), ("kv_cache", 2 * MiB), ("dst", 256 * KiB)},
       "gpuleak: the live set at the peak, by label")


@test
def webgpu_node_clean_loop_released_at_exit_stays_clean():
    """The same loop destroying its buffer each step: no growth, exit 0; the same counts as
    bpftrace's."""
    steps = 20
    res, v, bt = node_decode_with_bpftrace(steps, 0, expect_rc=0)
    eq(v["growth"], [], "no growth")
    eq((bt["created"], bt["destroyed"], bt["released"], bt["submits"]),
       (3 + 2 * steps, 2 * steps, 3, steps), "bpftrace: what the script did")
    # after the last creation: the last logits destroyed, then the rest released at exit
    after = bt["released_at_creation"][(bt["created"],)] + \
        bt["destroyed_at_creation"][(bt["created"],)]
    eq(after, 2 * MiB + 256 * KiB + MiB, "bpftrace: released after the last creation")
    eq((v["allocs"], v["alloc_bytes"], v["frees"], v["steps"], v["shutdown"]["released_bytes"]),
       (bt["created"], bt["created_bytes"], bt["destroyed"] + bt["released"],
        bt["submits"] + 1, after), "gpuleak and bpftrace agree")
