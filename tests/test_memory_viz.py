# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""--memory-viz: PyTorch's memory snapshot (torch.cuda.memory._snapshot(), pickled) made from
outside the process, read by PyTorch's own reader: torch/cuda/_memory_viz.py of Debian's
python3-torch 2.6.0 (scripts/install-deps.sh unpacks it; it imports only the standard
library), run on Debian's python3.11 as its command line (stats, trace) and as a module
(segments, memory, compare: tests/memviz_read.py). Its numbers are checked against gpuleak's
own verdict of the same run: PyTorch's reserve and allocated bytes, its blocks and their
states, the memory outside PyTorch as segments of its own kind, the leak's Python frames.
Scenarios: the stand-in PyTorch under the Python interpreters (with NCCL and cudaMalloc
memory beside it), expandable segments, a watch OOM capture through `report --memory-viz`,
a stream-ordered free still pending.
"""
import collections
import os
import pickle
import re
import shutil
import tempfile

from harness import (Attached, check, eq, gpuleak_env, run_gpuleak, run_plain, scenario, test,
                     tmpfile, GPULEAK, LIB)
import test_python as tp

MiB = 1 << 20
KiB = 1 << 10
VIZ = os.path.join(os.environ.get("GPULEAK_TORCH_VIZ_DIR", "/var/cache/gpuleak/torch-memory-viz"),
                   "_memory_viz.py")
READ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memviz_read.py")
PY311 = "/usr/bin/python3.11"


def have_reader():
    if os.path.exists(VIZ) and os.access(PY311, os.X_OK):
        return True
    print(f"# no {VIZ} (scripts/install-deps.sh fetches it) or no {PY311}: not tested")
    return False


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
        f.seek(0)
        data = pickle.load(f)
    eq(head, b"\x80\x04", f"{path}: pickle protocol 4 (the viewer cannot read 5)")
    return data


def viz_cli(action, path):
    """PyTorch's reader as its users run it: python3.11 _memory_viz.py stats|trace FILE."""
    p = run_plain([PY311, VIZ, action, path])
    eq(p.returncode, 0, f"_memory_viz.py {action} {path}: {p.stderr}")
    return p.stdout


def viz_module(action, *paths):
    p = run_plain([PY311, READ, VIZ, action, *paths])
    eq(p.returncode, 0, f"_memory_viz {action} as a module: {p.stderr}")
    return p.stdout


def stats_totals(out):
    """{segments, total_reserved, total_allocated, total_free} as the reader prints them."""
    got = dict(re.findall(r"^(segments|total_reserved|total_allocated|total_free): (.*)$", out,
                          re.M))
    eq(len(got), 4, f"the stats' totals: {out}")
    return got


def kind(d, k):
    return [s for s in d["segments"] if s["gpuleak_kind"] == k]


def active(seg):
    return [b for b in seg["blocks"] if b["state"] == "active_allocated"]


def tiles(d):
    """Every segment's blocks cover it exactly, in address order (the reader asserts it)."""
    for s in d["segments"]:
        at = s["address"]
        for b in s["blocks"]:
            eq(b["address"], at, f"block at {at:#x} of segment {s['address']:#x}")
            at += b["size"]
        eq(at, s["address"] + s["total_size"], f"segment {s['address']:#x}: blocks to its end")


def matches_verdict(d, v, pre_attach=0):
    """PyTorch's segments and blocks are gpuleak's reserve and allocated (a block in a segment
    made before the attach counts as reserved itself), the rest is outside."""
    dev = v["pytorch"]["devices"][0]
    eq(len(kind(d, "pre-attach")), pre_attach, "blocks in segments made before the attach")
    pt = kind(d, "pytorch") + kind(d, "pre-attach")
    eq(sum(s["total_size"] for s in pt), dev["reserved_bytes"], "PyTorch segments: reserved")
    eq(sum(b["size"] for s in pt for b in active(s)), dev["allocated_bytes"],
       "PyTorch's active blocks: allocated")
    eq(sum(len(active(s)) for s in pt), dev["allocated_count"], "PyTorch's block count")
    eq(sum(s["allocated_size"] for s in pt), dev["allocated_bytes"], "segments' allocated_size")
    eq(sum(s["total_size"] for s in kind(d, "outside")), dev["outside_bytes"],
       "outside PyTorch: its own segments")
    tiles(d)


def frames_line(frames):
    """A stack as the reader's flame graphs print it (outermost first)."""
    return ";".join(f"{f['filename'].split('/')[-1]}:{f['line']}:{f['name']}"
                    for f in reversed(frames))


def python_decode(name, py):
    """torch_nccl 12 (tests/scenarios/python/workload.py): 13 blocks in 7 PyTorch segments
    (the weights' 20 MiB segment caching 16 MiB, six 2 MiB ones with two 1 MiB tensors each),
    make_workspace's 2 MiB cudaMalloc and nccl_buffers' 4 MiB ncclMemAlloc outside."""
    live, off, cap = tmpfile(".pickle"), tmpfile(".pickle"), tmpfile(".glc")
    try:
        res = run_gpuleak(["record", "-o", cap, "--interval", "0", "--step", "sync",
                           "--memory-viz", live, *tp.workload(py, "torch_nccl", 12)],
                          env=tp.env())
        v = res.verdict()
        eq(v["pytorch"]["devices"][0]["outside_bytes"], 6 * MiB, f"{name}: outside, by gpuleak")
        d = load(live)
        matches_verdict(d, v)
        eq(d["gpuleak"]["pid"], v["pid"], "whose snapshot")
        # the same from the capture: segments, blocks, frames and trace
        run_gpuleak(["report", cap, "--step", "sync", "--memory-viz", off])
        eq(load(off), d, f"{name}: report of the capture writes the same snapshot")

        out = [(s["segment_type"], s["gpuleak_api"], s["gpuleak_site"], s["total_size"],
                [b["state"] for b in s["blocks"]]) for s in kind(d, "outside")]
        eq(sorted(out), sorted([
            ("cudaMalloc", "cudaMalloc", tp.site("make_workspace", "workspace"), 2 * MiB,
             ["active_allocated"]),
            ("ncclMemAlloc", "ncclMemAlloc", tp.site("nccl_buffers", "nccl_buffers"), 4 * MiB,
             ["active_allocated"])]), f"{name}: NCCL and cudaMalloc memory, named by API, site")
        pt = sorted(kind(d, "pytorch"), key=lambda s: s["total_size"])
        eq([(s["segment_type"], s["total_size"], [(b["state"], b["size"]) for b in s["blocks"]])
            for s in pt],
           [("small", 2 * MiB, [("active_allocated", MiB)] * 2)] * 6 +
           [("large", 20 * MiB, [("active_allocated", 4 * MiB), ("inactive", 16 * MiB)])],
           f"{name}: PyTorch's segments and the states of their blocks")
        leak = [b for s in pt for b in active(s) if b["size"] == MiB]
        eq(len(leak), 12, "kv_append's tensors")
        L = tp.L
        want = [("block", L["torch_block"]), ("kv_append", L["kv_append"]),
                 ("torch_steps", L["torch_step"])]
        for b in leak:
            eq([(f["name"], f["line"]) for f in b["frames"][:3]], want,
               f"{name}: the leak's Python frames, innermost first")
            check(b["frames"][0]["filename"].endswith("/torch/_alloc.py"), b["frames"][0])
            py = [f for f in b["frames"] if f["filename"].endswith(".py")]
            eq(b["frames"][:len(py)], py, "Python frames first, native after")
            check(any(f["name"] == "c10_cuda_alloc" and f["filename"] == "libc10_cuda.so"
                      for f in b["frames"][len(py):]), f"the allocator's native frame: {b}")

        # PyTorch's reader, on what it was given
        st = viz_cli("stats", live)
        eq(stats_totals(st), {"segments": "9", "total_reserved": "38.0MiB",
                              "total_allocated": "22.0MiB",
                              "total_free": "16.0MiB (0.0% internal)"},
           f"{name}: stats (reserved 32 + outside 6 MiB; allocated 16 + 6):\n{st}")
        check("[a] 20.0MiB allocated, 16.0MiB (0.0% internal) free" in st, st)
        tr = viz_cli("trace", live)
        # 9 device allocations (7 PyTorch segments, 2 outside), 25 tensors (the weights, 12
        # kv_append, 12 scratch), the 12 scratch freed: requested and completed
        check(tr.startswith("Device 0 ----------------\n58 entries\n"), tr[:300])
        eq(len(re.findall(r"^\w+ = cudaMalloc\(\d+, ", tr, re.M)), 9, "segment allocations")
        eq(len(re.findall(r"^\w+ = \w+\[\d+:1\.0MiB\]$", tr, re.M)), 12, "kv_append's allocs")
        eq(len(re.findall(r"^del \w+ # 3\.0MiB$", tr, re.M)), 12, "the scratch freed")
        eq(len(re.findall(r"^# free completed for \w+ 3\.0MiB$", tr, re.M)), 12, "completed")
        mem = viz_module("memory", live)
        stack = frames_line(leak[0]["frames"])
        eq(mem.count(f"stream_0;active_allocated;{stack} {MiB}\n"), 12,
           f"{name}: memory's flame graph, the leak's stack:\n{mem}")
        check(stack.endswith(f"workload.py:{L['torch_step']}:torch_steps;workload.py:"
                             f"{L['kv_append']}:kv_append;_alloc.py:{L['torch_block']}:block"),
              stack)
        check(f"workload.py:{L['nccl_buffers']}:nccl_buffers {4 * MiB}\n" in mem, mem)
        seg = viz_module("segments", live)
        eq(len(re.findall(r"^stream_0;seg_\d+;active_allocated;", seg, re.M)), 15,
           f"segments: 13 tensors and 2 outside allocations:\n{seg}")
        cmp = viz_module("compare", live, off)
        check(cmp.startswith("only_before = []\nonly_after = []\n"), cmp)
    finally:
        for f in (live, off, cap):
            if os.path.exists(f):
                os.unlink(f)


@test
def memory_viz_python_decode_loop_read_by_pytorch():
    """The stand-in PyTorch decode loop under Debian's python3.11 and a pyenv interpreter,
    live and from its capture, read by PyTorch's own reader."""
    if not have_reader():
        return "skip"
    got = [(n, p) for n, p, _ in tp.interpreters()]
    debian = [g for g in got if g[1] == PY311]
    pyenv = [g for g in got if g[1].startswith("/root/.pyenv/")]
    check(debian, "Debian's python3.11")
    for name, py in debian + pyenv[-1:]:
        python_decode(name, py)


@test
def memory_viz_expandable_segments():
    """torch_decode leak 20 on expandable segments: PyTorch's pages (VMM maps) are segments
    with is_expandable, adjacent pages one segment; the page holding only the raw workspace
    is outside (cuMemCreate), as gpuleak's buckets say; the trace maps pages."""
    if not have_reader():
        return "skip"
    path = tmpfile(".pickle")
    try:
        env = dict(gpuleak_env(), PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        res = run_gpuleak(["run", "--interval", "0", "--step", "sym:torch_decode:decode_step",
                           "--memory-viz", path, "--", scenario("torch_decode"), "leak", "20"],
                          env=env)
        v = res.verdict()
        d = load(path)
        matches_verdict(d, v)
        pt = kind(d, "pytorch")
        eq({s["is_expandable"] for s in pt}, {True}, "expandable")
        eq(sorted(s["total_size"] for s in pt), [2 * MiB, 60 * MiB, 120 * MiB],
           "ten pages in three runs of adjacent maps")
        eq(sorted((s["segment_type"], s["total_size"]) for s in kind(d, "outside")),
           [("cuMemCreate", 20 * MiB), ("cudaMalloc", 4 * MiB)], "outside: raw page, comm_init")
        leak = [b for s in pt for b in active(s) if b["frames"][0]["name"] == "leaky_cache_append"]
        eq((len(leak), {b["size"] for b in leak}), (20, {2 * MiB}), "the leak's blocks")
        eq(collections.Counter(e["action"] for e in d["device_traces"][0]),
           {"alloc": 104, "free_requested": 80, "free_completed": 80, "segment_map": 11,
            "segment_alloc": 1}, "the trace: blocks, ten PyTorch pages and the raw one mapped")
        st = viz_cli("stats", path)
        eq(stats_totals(st), {"segments": "5", "total_reserved": "206.0MiB",
                              "total_allocated": "184.0MiB",
                              "total_free": "22.0MiB (0.0% internal)"}, f"stats:\n{st}")
        tr = viz_cli("trace", path)
        check(tr.startswith("Device 0 ----------------\n276 entries\n"), tr[:200])
        eq(tr.count("'action': 'segment_map'"), 11, "segment_map entries printed as they are")
        seg = viz_module("segments", path)
        eq(len(re.findall(r":leaky_cache_append \d+$", seg, re.M)), 20, seg)
    finally:
        if os.path.exists(path):
            os.unlink(path)


@test
def memory_viz_watch_oom_capture_through_report():
    """watch on oomloop until cudaMalloc runs out (at the leak of step 50): the trigger's
    snapshot beside its capture, and `report --memory-viz` of the capture, hold the live set
    at the OOM (the KV cache, 50 leaks, all cudaMalloc: outside PyTorch) and the OOM itself as
    the trace's last entry, with the failing call's frames."""
    if not have_reader():
        return "skip"
    k = 50
    wdir = tempfile.mkdtemp(prefix="gpuleak-watch-")
    end, rep = tmpfile(".pickle"), tmpfile(".pickle")
    try:
        env = dict(gpuleak_env(), GPULEAK_STANDIN_DEVICE_MEM=str(16 * MiB + k * 64 * KiB + 32 * KiB))
        p = run_plain([GPULEAK, "watch", "-o", wdir, "--memory-viz", end, "--step",
                       "sym:oomloop:decode_step", "--", scenario("oomloop"), "loop", "64K", "20"],
                      env=env)
        eq(p.returncode, 4, f"watch: the command failed (stderr: {p.stderr})")
        caps = sorted(f for f in os.listdir(wdir) if f.endswith(".glc"))
        eq(len(caps), 1, f"one capture: {os.listdir(wdir)}")
        cap = os.path.join(wdir, caps[0])
        trig = cap[:-4] + ".pickle"
        check(f"gpuleak: wrote {trig} (PyTorch's memory snapshot)" in p.stderr, p.stderr)
        r = run_gpuleak(["report", cap, "--step", "sym:oomloop:decode_step", "--memory-viz", rep])
        v = r.verdict()
        dt, dr = load(trig), load(rep)
        eq(dr["segments"], dt["segments"], "the capture's live set is the trigger's")
        segs = dr["segments"]
        eq(collections.Counter((s["gpuleak_kind"], s["segment_type"], s["total_size"],
                                s["gpuleak_site"].split("+")[0]) for s in segs),
           {("outside", "cudaMalloc", 16 * MiB, "kv_cache_init"): 1,
            ("outside", "cudaMalloc", 64 * KiB, "leaky_sampler"): k}, "KV cache and the leaks")
        eq(sum(s["total_size"] for s in segs), v["live_bytes"], "gpuleak's live bytes")
        for d in (dt, dr):
            oom = d["device_traces"][0][-1]
            eq((oom["action"], oom["size"], oom["frames"][0]["name"]),
               ("oom", 64 * KiB, "leaky_sampler"), "the OOM ends the trace")
            eq(sum(e["action"] == "oom" for e in d["device_traces"][0]), 1, "one OOM")
        eq(dt["gpuleak"]["pid"], v["pid"], "the trigger's process")
        st = viz_cli("stats", rep)
        eq(stats_totals(st), {"segments": str(k + 1), "total_reserved": "19.1MiB",
                              "total_allocated": "19.1MiB", "total_free": "0.0B"}, st)
        tr = viz_cli("trace", rep)
        check(re.search(r"^raise OutOfMemoryError # 64\.0KiB requested, 0\.0B free in CUDA$", tr,
                        re.M), tr[-500:])
        check(load(end)["segments"] == dt["segments"], "the session's end: what it was at the OOM")
    finally:
        shutil.rmtree(wdir, ignore_errors=True)
        for f in (end, rep):
            if os.path.exists(f):
                os.unlink(f)


@test
def memory_viz_pending_free_and_attach():
    """asyncfree never: its cudaFreeAsync is still pending at exit, a block
    active_pending_free (free memory to PyTorch's stats, active to its viewer); and attach
    mode writes the file too."""
    if not have_reader():
        return "skip"
    path = tmpfile(".pickle")
    try:
        run_gpuleak(["run", "--interval", "0", "--memory-viz", path, "--",
                     scenario("asyncfree"), "never"])
        d = load(path)
        eq([(s["segment_type"], s["total_size"], s["allocated_size"], s["active_size"],
             [b["state"] for b in s["blocks"]]) for s in d["segments"]],
           [("cudaMallocAsync", MiB, 0, MiB, ["active_pending_free"])], "a pending free")
        eq(stats_totals(viz_cli("stats", path)),
           {"segments": "1", "total_reserved": "1.0MiB", "total_allocated": "0.0B",
            "total_free": "1.0MiB (0.0% internal)"}, "stats")
        os.unlink(path)
        a = Attached("torch_decode", ["leak", 5], gl_args=["--memory-viz", path])
        try:
            a.wait_attached()
            a.target.send()
            a.target.wait_line("done")
            a.target.send()
            v = a.finish().verdict()
        finally:
            a.cleanup()
        d = load(path)
        matches_verdict(d, v)
        eq(len(re.findall(r"^stream_0;seg_\d+;active_allocated;.*leaky_cache_append \d+$",
                          viz_module("segments", path), re.M)), 5, "attached: the leak's 5")
    finally:
        if os.path.exists(path):
            os.unlink(path)


@test
def memory_viz_attached_midway_marks_pre_attach_blocks():
    """torch_decode leak 20 attached to before step 5 (TORCH_DECODE_READY_AT): the leak's
    blocks of steps 5 to 9 are split from a 20 MiB segment made at step 0, before the attach:
    each a "pre-attach" segment of its own; steps 10 to 19 fill two segments seen made. The
    weights, KV cache and outside memory were made before the attach and are not seen."""
    if not have_reader():
        return "skip"
    path = tmpfile(".pickle")
    try:
        a = Attached("torch_decode", ["leak", 20], gl_args=["--memory-viz", path],
                     env={"TORCH_DECODE_READY_AT": "5"})
        try:
            a.wait_attached()
            a.target.send()
            a.target.wait_line("done")
            a.target.send()
            v = a.finish().verdict()
        finally:
            a.cleanup()
        d = load(path)
        matches_verdict(d, v, pre_attach=5)
        eq([(s["segment_type"], s["total_size"], [(b["state"], b["size"]) for b in s["blocks"]],
             s["blocks"][0]["frames"][0]["name"]) for s in kind(d, "pre-attach")],
           [("pre-attach", 2 * MiB, [("active_allocated", 2 * MiB)], "leaky_cache_append")] * 5,
           "the leak's blocks of steps 5 to 9")
        eq(sorted(len(active(s)) for s in kind(d, "pytorch")), [2, 8], "steps 10 to 19")
        eq(stats_totals(viz_cli("stats", path)),
           {"segments": "7", "total_reserved": "50.0MiB", "total_allocated": "30.0MiB",
            "total_free": "20.0MiB (0.0% internal)"}, "stats")
    finally:
        if os.path.exists(path):
            os.unlink(path)
