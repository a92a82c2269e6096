# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Allocation stacks and the pictures: real uprobes on the `stacks` scenario (a three-deep
call chain, a stripped library with a mangled export and a hidden function, a library built
without frame pointers) and on `loop`/`asyncfree`, the stacks and tree in the verdict and
report, --folded, --perfetto and --svg, live and from a capture."""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

import harness
from harness import (LIB, OUT, Attached, Fail, Proc, check, check_sanitizers, eq, gpuleak_env,
                     leak_sites, read_ndjson, run_gpuleak, run_plain, scenario, test, tmpfile)
from test_capture import record, report, same_verdict

MiB = 1 << 20
HELPER = os.path.join(LIB, "libstackhelper.so")
GROW = "gpuapp::cache::grow(void (*)(unsigned long), unsigned long)"


def gl():
    return harness.GPULEAK


def functions(stack):
    return [f["function"] for f in stack["frames"]]


def stacks_of(verdict, fn, key="leaks"):
    """The stacks of the one entry of `key` whose site is in function fn."""
    es = [e for e in verdict[key] if e["site"].split("+")[0] == fn]
    eq(len(es), 1, f"{key} entries at {fn}")
    return es[0]["stacks"]


def the_stack(stacks, second):
    """The stack whose second frame is in function `second`."""
    got = [s for s in stacks if len(s["frames"]) > 1 and s["frames"][1]["function"] == second]
    eq(len(got), 1, f"stacks through {second}: {[functions(s) for s in stacks]}")
    return got[0]


def stacks_expected(v):
    """What `stacks` leaves (tests/scenarios/stacks.c), by call site."""
    eq(v["live_bytes"], 9 * MiB, "live bytes")
    eq(v["live_count"], 4, "live count")
    eq(leak_sites(v), {("cudaMalloc", "inner_c"): (6 * MiB, 2),
                       ("cudaMalloc", "grow_cb"): (2 * MiB, 1),
                       ("cudaMalloc", "nofp_cb"): (1 * MiB, 1)}, "leaks by call site")


def run_stacks(*extra, leaks=True):
    res = run_gpuleak(["run"] + list(extra) + ["--interval", "0", "--", scenario("stacks")])
    v = res.verdict()
    if leaks:
        stacks_expected(v)
    return res, v


@test
def stacks_through_a_three_deep_chain_in_order():
    res, v = run_stacks()
    inner = stacks_of(v, "inner_c")
    eq(sorted((s["bytes"], s["count"]) for s in inner), [(3 * MiB, 1), (3 * MiB, 1)],
       "inner_c: two stacks of 3 MiB")
    chain = the_stack(inner, "middle_b")
    eq(functions(chain)[:4], ["inner_c", "middle_b", "outer_a", "main"], "the chain, innermost first")
    eq([f["module"] for f in chain["frames"][:4]], ["stacks"] * 4, "objects of the chain")
    check(re.fullmatch(r"inner_c\+0x[0-9a-f]+ \(stacks\)", chain["frames"][0]["name"]),
          f"frame 0 is the call site: {chain['frames'][0]}")
    eq(chain["frames"][0]["name"], [e for e in v["leaks"] if e["site"].startswith("inner_c")][0]
       ["site"], "the first frame is the site the tables name")
    eq(chain["truncated"], False, "truncated")
    eq(chain["without_frame_pointers"], None, "all of it has frame pointers")
    direct = the_stack(inner, "main")
    eq(functions(direct)[:2], ["inner_c", "main"], "the same site from main directly")
    eq(v["losses"]["stack_fail"] + v["losses"]["stack_collision"], 0, "no stack lost")


def after_indirect_call(path, off):
    """Whether the file offset off of an x86-64 object follows a `call *%reg`."""
    with open(path, "rb") as f:
        f.seek(off - 3)
        b = f.read(3)
    return (b[1] == 0xff and 0xd0 <= b[2] <= 0xd7) or \
        (b[0] == 0x41 and b[1] == 0xff and 0xd0 <= b[2] <= 0xd7)


@test
def stripped_library_falls_back_to_dynsym_then_offset():
    p = run_plain(["readelf", "-SW", HELPER])
    check(".dynsym" in p.stdout and ".symtab" not in p.stdout,
          "libstackhelper.so is stripped to .dynsym")
    res, v = run_stacks()
    st = stacks_of(v, "grow_cb")
    eq(len(st), 1, "one stack at grow_cb")
    fr = st[0]["frames"]
    eq(fr[0]["function"], "grow_cb", "the callback, in the program")
    # the static function no symbol table names: object and file offset
    eq((fr[1]["function"], fr[1]["module"]), (None, "libstackhelper.so"), "hidden frame")
    m = re.fullmatch(r"libstackhelper\.so\+0x([0-9a-f]+)", fr[1]["name"])
    check(m, f"hidden frame named by offset: {fr[1]}")
    check(after_indirect_call(HELPER, int(m.group(1), 16)),
          f"0x{m.group(1)} is a return address: right after the call of the callback")
    # the export, from .dynsym, demangled
    eq((fr[2]["function"], fr[2]["module"]), (GROW, "libstackhelper.so"), "exported frame")
    check(fr[2]["name"].startswith(GROW + "+0x"), f"name: {fr[2]['name']}")
    eq(fr[3]["function"], "main", "then main")
    check(GROW + " (libstackhelper.so)" in res.out, f"the graph names it too:\n{res.out}")


def build_id(path):
    p = run_plain(["readelf", "-n", path])
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout)
    return m.group(1) if m else None


def hidden_frame(v):
    """Frame 1 of the stack at grow_cb: grow_hidden, the helper's static function."""
    st = stacks_of(v, "grow_cb")
    eq(len(st), 1, "one stack at grow_cb")
    fr = st[0]["frames"]
    eq(fr[0]["function"], "grow_cb", "the callback")
    eq((fr[2]["function"], fr[3]["function"]), (GROW, "main"), "the export, then main")
    return fr[1]


@test
def debug_file_by_build_id_names_stripped_code():
    bid = build_id(HELPER)
    check(bid and bid == build_id(HELPER + ".debug"), "the helper and its debug file share a build-id")
    d = tempfile.mkdtemp(prefix="gpuleak-debug-")
    try:
        dest = os.path.join(d, ".build-id", bid[:2], bid[2:] + ".debug")
        os.makedirs(os.path.dirname(dest))
        # another build under this build-id's name is refused, never used for names
        other = os.path.join(d, "other.debug")
        run_plain(["objcopy", "--only-keep-debug", os.path.join(LIB, "libnofp.so"), other],
                  ).check_returncode()
        os.rename(other, dest)
        res, v = run_stacks("--debug-dir", d, "-v")
        eq(hidden_frame(v)["function"], None, "a debug file of another build names nothing")
        check(f"not naming libstackhelper.so from {dest}: another build of it" in res.err,
              f"the refusal is said with -v:\n{res.err}")
        shutil.copy(HELPER + ".debug", dest)
        res, v = run_stacks("--debug-dir", d, "-v")
        fr = hidden_frame(v)
        eq((fr["function"], fr["module"]), ("grow_hidden", "libstackhelper.so"),
           "the static function, named from the debug file's .symtab")
        check(re.fullmatch(r"grow_hidden\+0x[0-9a-f]+ \(libstackhelper\.so\)", fr["name"]),
              f"name: {fr['name']}")
        check(f"naming libstackhelper.so from its debug file {dest}" in res.err,
              f"-v says which file:\n{res.err}")
        check("grow_hidden (libstackhelper.so)" in res.out, f"the graph names it:\n{res.out}")
        # without --debug-dir it stays an offset, as before
        res, v = run_stacks()
        eq(hidden_frame(v)["function"], None, "no debug file: no name")
    finally:
        shutil.rmtree(d)


@test
def debug_file_by_debuglink_beside_the_object():
    """An object without build-id finds its debug file by .gnu_debuglink in .debug/ beside
    it, only when the file's CRC-32 is the one the link names."""
    d = tempfile.mkdtemp(prefix="gpuleak-debuglink-")
    try:
        lib, bindir = os.path.join(d, "lib"), os.path.join(d, "bin")
        os.makedirs(os.path.join(lib, ".debug"))
        os.makedirs(bindir)
        # the scenario's rpath is $ORIGIN/../lib: a copy of it finds the libraries of d/lib
        for name in os.listdir(LIB):
            if not name.startswith(("libstackhelper.so", ".")):
                os.symlink(os.path.join(LIB, name), os.path.join(lib, name))
        shutil.copy(scenario("stacks"), bindir)
        dbg = os.path.join(lib, ".debug", "libstackhelper.so.debug")
        shutil.copy(HELPER + ".debug", dbg)
        run_plain(["objcopy", "--remove-section", ".note.gnu.build-id",
                   "--add-gnu-debuglink=" + dbg, HELPER, os.path.join(lib, "libstackhelper.so")]
                  ).check_returncode()
        eq(build_id(os.path.join(lib, "libstackhelper.so")), None, "the copy has no build-id")
        stacks = os.path.join(bindir, "stacks")

        def run_copy():
            res = run_gpuleak(["run", "-v", "--interval", "0", "--", stacks])
            v = res.verdict()
            stacks_expected(v)
            return res, hidden_frame(v)

        res, fr = run_copy()
        eq((fr["function"], fr["module"]), ("grow_hidden", "libstackhelper.so"),
           "named through .gnu_debuglink")
        check(re.search(r"naming libstackhelper\.so from its debug file (/proc/\d+/root)?"
                        + re.escape(dbg) + "\n", res.err), f"-v names the file:\n{res.err}")
        with open(dbg, "ab") as f:
            f.write(b"\0")
        res, fr = run_copy()
        eq(fr["function"], None, "a debug file whose CRC differs names nothing")
        check("another build of it" in res.err, f"the refusal is said:\n{res.err}")
    finally:
        shutil.rmtree(d)


@test
def walk_without_frame_pointers_is_marked():
    res, v = run_stacks("--unwind", "fp")  # the walk alone: auto unwinds it
    st = stacks_of(v, "nofp_cb")
    eq(len(st), 1, "one stack at nofp_cb")
    eq(functions(st[0])[:2], ["nofp_cb", "nofp_call"], "the callback, then the library")
    eq(st[0]["frames"][1]["module"], "libnofp.so", "library")
    # nofp_call left %rbp alone: the walk jumped over main, and says so
    check("main" not in functions(st[0]), f"main is skipped by the walk: {functions(st[0])}")
    eq(st[0]["without_frame_pointers"], {"from_frame": 2}, "frames after nofp_call flagged")
    check("(? = found by a frame-pointer walk through code without frame pointers" in res.out,
          f"legend:\n{res.out}")
    lines = res.out.splitlines()
    i = next(i for i, l in enumerate(lines) if l.rstrip().endswith("nofp_call (libnofp.so)"))
    check("? " in lines[i - 1] and "? " not in lines[i],
          f"the frame above nofp_call is marked, nofp_call is not:\n{lines[i - 1]}\n{lines[i]}")


@test
def stack_depth_truncates_and_zero_disables_stacks():
    res, v = run_stacks("--stack-depth", "2")
    inner = stacks_of(v, "inner_c")
    chain = the_stack(inner, "middle_b")
    eq(functions(chain), ["inner_c", "middle_b"], "two frames kept")
    eq(chain["truncated"], True, "the chain went on")
    check("[truncated]" in res.out, f"the graph says it:\n{res.out}")
    res, v = run_stacks("--stack-depth", "0")
    for e in v["leaks"]:
        eq(e["stacks"], [], f"no stacks at {e['site']}")
    check("allocation graph" not in res.out, "no graph without stacks")
    res = run_gpuleak(["run", "--stack-depth", "121", "--", scenario("stacks")], expect_rc=2)
    check("invalid --stack-depth '121' (0..120" in res.err, f"message: {res.err}")


@test
def stack_map_collisions_are_counted_never_mislabeled():
    # One bucket per map: the chain takes `stacks`, the stripped path `stacks2`; the next
    # two collide in both and are recorded without a stack.
    res, v = run_stacks("--stack-entries", "1")
    eq(v["losses"]["stack_collision"], 2, "collisions in both maps")
    inner = stacks_of(v, "inner_c")
    eq(len(inner), 1, "inner_c: one stack kept, the other lost")
    eq((inner[0]["bytes"], functions(inner[0])[:4]),
       (3 * MiB, ["inner_c", "middle_b", "outer_a", "main"]), "the kept one")
    grow = stacks_of(v, "grow_cb")
    eq(functions(grow[0])[:3], ["grow_cb", None, GROW], "from the fallback map, right frames")
    eq(stacks_of(v, "nofp_cb"), [], "lost: no stack rather than another's")
    check("stacks lost: 2 allocation calls recorded without their stack" in res.out, res.out)


@test
def rules_match_any_frame_of_the_stack():
    # outer_a is two frames above the call: only the chain's allocation is persistent
    res, v = run_stacks("--rule", "persistent site=outer_a", leaks=False)
    eq(leak_sites(v)[("cudaMalloc", "inner_c")], (3 * MiB, 1), "inner_c from main still leaks")
    ret = {(e["site"].split("+")[0], e["bytes"]) for e in v["retained"]}
    eq(ret, {("inner_c", 3 * MiB)}, "retained: the chain")
    eq(functions(stacks_of(v, "inner_c", "retained")[0])[:3],
       ["inner_c", "middle_b", "outer_a"], "the retained stack")
    # site= and lib= hold at one frame: the export of the stripped library
    res, v = run_stacks("--rule", "persistent lib=libstackhelper.so site=gpuapp::cache::*",
                        leaks=False)
    eq([(e["site"].split("+")[0], e["bytes"]) for e in v["retained"]], [("grow_cb", 2 * MiB)],
       "retained: through gpuapp::cache::grow in libstackhelper.so")
    res, v = run_stacks("--rule", "persistent lib=stacks site=gpuapp::cache::*")
    eq(v["retained"], [], "no frame is gpuapp::cache::* in the program")


@test
def memory_a_communicator_makes_has_the_path_through_its_creation():
    # ncclCommInitRank hands out a communicator, not memory: what the stand-in NCCL allocates
    # inside it is the communicator's, with the stack that led into ncclCommInitRank (only
    # the layers of an allocation of memory, cuMemAlloc under cudaMalloc, take no stack)
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("nccl_comm"), "leak"])
    v = res.verdict()
    owned = [e for e in v["leaks"] if e["owner"] and e["owner"]["kind"] == "communicator"]
    eq(sorted((e["api"], e["bytes"]) for e in owned),
       [("cuMemAlloc_v2", MiB)] * 4 + [("cuMemCreate", 2 * MiB), ("cuMemHostAlloc", 65536)],
       "the communicator's memory")
    for e in owned:
        eq(len(e["stacks"]), 1, f"one stack at {e['site']}")
        fns = functions(e["stacks"][0])
        check("nccl_init" in fns and fns.index("nccl_init") + 1 == fns.index("main"),
              f"{e['api']} at {e['site']}: through nccl_init, called by main: {fns}")
        eq(e["stacks"][0]["frames"][0]["module"], "libnccl.so.2", "allocated inside NCCL")
    comm = owned[0]["owner"]["handle"]
    check(f"device 0: NCCL communicator {comm} (CUDA driver)" in res.out and
          f"device 0: NCCL communicator {comm} (CUDA VMM)" in res.out,
          f"the graph groups by communicator and layer:\n{res.out}")


def tree(out):
    """The graph's lines: (bytes text, count, depth, label)."""
    lines = out[out.index("allocation graph"):].splitlines()[1:]
    rows = []
    for l in lines:
        m = re.match(r"  +(\S+ \S+) +(\d+)  ((?:[│ ] {2}|   )*)(?:[├└]─ )?(.*)$", l)
        if l.strip().startswith(("(", "BYTES")):
            continue
        if not m:
            break
        rows.append((m.group(1), int(m.group(2)), len(m.group(3)) // 3 + (1 if re.search(r"[├└]─ ", l) else 0), m.group(4)))
    return rows


@test
def allocation_graph_is_a_tree_by_device_and_layer():
    res, v = run_stacks("--unwind", "fp")  # the walks as the kernel made them
    rows = tree(res.out)
    eq(rows[0], ("9.00 MiB", 4, 0, "device 0: CUDA runtime"), "the group: device and layer")
    labels = [r[3] for r in rows]
    i = labels.index("outer_a (stacks)")
    eq([(r[2] - rows[i][2], r[3], r[0]) for r in rows[i:i + 4]],
       [(0, "outer_a (stacks)", "3.00 MiB"), (1, "middle_b (stacks)", "3.00 MiB"),
        (2, [e["site"] for e in v["leaks"] if e["site"].startswith("inner_c")][0], "3.00 MiB"),
        (3, "cudaMalloc → cuMemAlloc_v2", "3.00 MiB")],
       "outer_a, middle_b, the call site, then the API and the layer under it")
    main = [r for r in rows if r[3] == "main (stacks)"]
    eq([(r[0], r[1]) for r in main], [("8.00 MiB", 3)], "main holds what it called")


def folded(path):
    out = []
    with open(path) as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            out.append((stack.split(";"), int(n)))
    return out


@test
def folded_stacks_sum_to_the_live_bytes():
    path = tmpfile(".folded")
    try:
        res = run_gpuleak(["run", "--interval", "0", "--folded", path, "--",
                           scenario("loop"), "5", str(MiB)])
        v = res.verdict()
        f = folded(path)
        eq(sum(n for _, n in f), v["live_bytes"], "the lines sum to the live bytes")
        eq(sorted((s[-3:], n) for s, n in f),
           [(["main", "kv_cache_init", "cudaMalloc → cuMemAlloc_v2"], 64 * MiB),
            (["main", "leaky_sampler", "cudaMalloc → cuMemAlloc_v2"], 5 * MiB)],
           "one line per stack, outermost first, the API last")
        eq({s[0] for s, _ in f}, {"loop"}, "the process first")
        res = run_gpuleak(["run", "--interval", "0", "--folded", path, "--", scenario("stacks")])
        v = res.verdict()
        f = folded(path)
        eq(sum(n for _, n in f), v["live_bytes"], "stacks: the lines sum to the live bytes")
        eq([n for s, n in f
            if s[-4:] == ["outer_a", "middle_b", "inner_c", "cudaMalloc → cuMemAlloc_v2"]],
           [3 * MiB], f"the chain, outermost first: {f}")
        check(any(GROW in s for s, _ in f), f"demangled names: {f}")
    finally:
        if os.path.exists(path):
            os.unlink(path)


def perfetto(path):
    with open(path) as f:
        d = json.load(f)
    check(isinstance(d.get("traceEvents"), list), "a trace-event JSON object")
    return d["traceEvents"]


def counter(evs, name, arg):
    return [(e["ts"], e["args"][arg]) for e in evs if e["ph"] == "C" and e["name"] == name]


@test
def perfetto_json_has_counters_steps_verdicts():
    path = tmpfile(".json")
    try:
        steps = 12
        res = run_gpuleak(["run", "--interval", "0", "--step", "sym:loop:leaky_sampler",
                           "--perfetto", path, "--", scenario("loop"), str(steps), str(MiB)])
        v = res.verdict()
        evs = perfetto(path)
        pid = v["pid"]
        eq({e["pid"] for e in evs}, {pid}, "one process")
        eq([e["args"]["name"] for e in evs if e["name"] == "process_name"], [f"loop (pid {pid})"],
           "process track")
        live = counter(evs, "live bytes", "total")
        check(len(live) > steps, f"live bytes sampled over time: {len(live)} points")
        eq(live[-1][1], v["live_bytes"], "the last live sample is the verdict's")
        eq([t for t, _ in live], sorted(t for t, _ in live), "in time order")
        eq(max(n for _, n in counter(evs, "live bytes by API", "CUDA runtime")),
           max(n for _, n in live), "the runtime holds it all")
        eq(counter(evs, "persistent bytes", "total")[-1][1], 0, "no rule: nothing persistent")
        sites = {e["name"] for e in evs if e["ph"] == "C" and e["name"].startswith("site: ")}
        leak = [e["site"] for e in v["leaks"] if e["site"].startswith("leaky_sampler")][0]
        # made before the first step (the first leaky_sampler call): retained by init
        kv = [e["site"] for e in v["retained"] if e["site"].startswith("kv_cache_init")
              and e["retained_by"] == "init"][0]
        want = {f"site: {leak} (cudaMalloc)", f"site: {kv} (cudaMalloc)"}
        # decode_step's activations live only inside a step: its track is there when a sample
        # (at most one per resolution of record time) fell inside one, as on a loaded machine,
        # and then never holds more than the step's two 2 MiB buffers.
        check(want <= sites, f"site tracks: {sites}")
        for name in sites - want:
            check(re.fullmatch(r"site: decode_step\+0x[0-9a-f]+ \(loop\) \(cudaMallocAsync\)",
                               name), f"a site track besides {want}: {name}")
        for name in sites - want:
            check(max(n for _, n in counter(evs, name, "bytes")) <= 2 * 2 * MiB,
                  f"{name}: at most one step's activations")
        eq(counter(evs, f"site: {leak} (cudaMalloc)", "bytes")[-1][1], steps * MiB,
           "the leaking site's track ends at its live bytes")
        step_ev = [e for e in evs if e["ph"] == "i" and e["name"].startswith("step ")]
        step_recs = [r for r in res.records if r.get("type") == "step"]
        eq(len(step_ev), len(step_recs), "one instant per step")
        eq([e["args"]["live_bytes"] for e in step_ev], [r["live_bytes"] for r in step_recs],
           "step instants carry the step's live bytes")
        leaks = {e["name"]: e["args"]["bytes"] for e in evs
                 if e["ph"] == "i" and e["name"].startswith("leak: ")}
        eq(leaks, {f"leak: {leak}": steps * MiB}, "leak verdicts: the KV cache is no leak")
        growth = [e for e in evs if e["ph"] == "i" and e["name"].startswith("growth: ")]
        eq([e["name"] for e in growth], [f"growth: {leak}"], "the growth leak")
        eq(growth[0]["args"]["bytes_per_step"], float(MiB), "its slope")
    finally:
        if os.path.exists(path):
            os.unlink(path)


@test
def perfetto_pending_frees_are_slices():
    path = tmpfile(".json")
    js = tmpfile(".ndjson")
    target = Proc([scenario("asyncfree"), "late_sync"],
                  env=harness.env_for_targets(dict(SCENARIO_SYNC="1")))
    gl_p = None
    try:
        m = target.wait_line(r"ready (\d+)")
        gl_p = Proc([gl(), "attach", "-p", m.group(1), "--interval", "0", "--json", js,
                     "--perfetto", path], env=gpuleak_env(), stdin=False)
        gl_p.wait_line(r"tracing pid", stream="err")
        target.send()
        target.wait_line("freed")
        time.sleep(0.2)          # the free stays pending at least this long
        target.send()
        target.wait_line("done")
        target.send()
        eq(target.finish(), 0, "target exit")
        eq(gl_p.finish(), 0, f"gpuleak exit ({gl_p.text('err')})")
        check_sanitizers(gl_p.text("err"))
        evs = perfetto(path)
        sl = [e for e in evs if e["ph"] == "X"]
        eq(len(sl), 1, f"one pending free: {sl}")
        check(sl[0]["name"].startswith("pending free: async_alloc+"), f"name: {sl[0]['name']}")
        eq((sl[0]["args"]["bytes"], sl[0]["args"]["completed"], sl[0]["args"]["api"]),
           (MiB, True, "cudaMallocAsync"), "what it freed, completed at the sync")
        check(sl[0]["dur"] >= 200000, f"pending from the free to the sync: {sl[0]['dur']} us")
        lanes = {e["tid"]: e["args"]["name"] for e in evs
                 if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] == sl[0]["tid"]}
        eq(lanes, {sl[0]["tid"]: "pending frees"}, "on the pending-frees track")
        pend = counter(evs, "pending bytes", "total")
        eq(max(n for _, n in pend), MiB, "the pending-bytes counter saw it")
        eq(pend[-1][1], 0, "and saw it end")
    finally:
        target.kill()
        if gl_p:
            gl_p.kill()
        for p in (path, js):
            if os.path.exists(p):
                os.unlink(p)


def png_pixels(path):
    """(width, height, [(r, g, b)] rows) of an 8-bit RGB or RGBA PNG (rsvg-convert's)."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG")
    pos, idat, w, h, bpp = 8, b"", 0, 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            check(depth == 8 and color in (2, 6), f"8-bit RGB(A), not {depth}/{color}")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, rows, prev, stride = zlib.decompress(idat), [], bytearray(bpp * w), bpp * w
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ft == 1:
                line[x] = (line[x] + a) & 255
            elif ft == 2:
                line[x] = (line[x] + b) & 255
            elif ft == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows


@test
def svg_timeline_renders_with_leaks_highlighted():
    if not shutil.which("rsvg-convert"):
        raise Fail("rsvg-convert missing (librsvg2-bin: scripts/install-deps.sh)")
    svg, png = tmpfile(".svg"), tmpfile(".png")
    try:
        res = run_gpuleak(["run", "--interval", "0", "--svg", svg, "--",
                           scenario("loop"), "10", str(MiB)])
        v = res.verdict()
        doc = ET.parse(svg).getroot()
        eq(doc.tag, "{http://www.w3.org/2000/svg}svg", "an SVG document")
        texts = ["".join(t.itertext()) for t in doc.iter("{http://www.w3.org/2000/svg}text")]
        eq(texts[0], f"loop (pid {v['pid']}): live 74.0 MiB at the end", "title")
        check(any(re.fullmatch(r"\d+ MiB", t) for t in texts), f"y axis in MiB: {texts}")
        check(any(re.fullmatch(r"[\d.]+ s", t) for t in texts), f"x axis in seconds: {texts}")
        check("time since the trace began (s)" in texts and "bytes" in texts, "axis titles")
        leak = [e["site"] for e in v["leaks"] if e["site"].startswith("leaky_sampler")][0]
        kv = [e["site"] for e in v["leaks"] if e["site"].startswith("kv_cache_init")][0]
        eq([t for t in texts if t.startswith("leaks ")],
           [f"leaks 64.0 MiB: {kv} (cudaMalloc)", f"leaks 10.0 MiB: {leak} (cudaMalloc)"],
           "the leaking sites, largest first, in the legend")
        p = run_plain(["rsvg-convert", svg, "-o", png])
        eq(p.returncode, 0, f"rsvg-convert: {p.stderr}")
        w, h, rows = png_pixels(png)
        eq((w, h), (int(doc.get("width")), int(float(doc.get("height")))), "PNG size")
        # in the plot (svg.c: 44 px from the top, 300 high, 84 px from the left): the leaking
        # sites' reds (#d62728, #e6550d) and the live line's blue (#1f77b4)
        plot = [r[84:w - 24] for r in rows[44:344]]
        red = sum(1 for r in plot for px in r if px[0] > 180 and px[1] < 100 and px[2] < 60)
        blue = sum(1 for r in plot for px in r if px[0] < 60 and 100 < px[1] < 140 and px[2] > 160)
        check(red > 1000, f"the leaking sites are drawn in red ({red} pixels)")
        check(blue > 500, f"live bytes are drawn in blue ({blue} pixels)")
    finally:
        for f in (svg, png):
            if os.path.exists(f):
                os.unlink(f)


@test
def svg_timeline_by_step_with_persistent_and_pending_lines():
    """With steps from the program (--step sync) the x axis is steps; a rule's persistent
    bytes and the pending frees have lines of their own, one point per step."""
    if not shutil.which("rsvg-convert"):
        raise Fail("rsvg-convert missing (librsvg2-bin: scripts/install-deps.sh)")
    svg, png = tmpfile(".svg"), tmpfile(".png")
    try:
        run_gpuleak(["run", "--interval", "0", "--step", "sync", "--rule",
                     "persistent site=kv_cache_init", "--svg", svg, "--",
                     scenario("loop"), "10", str(MiB)])
        doc = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        texts = ["".join(t.itertext()) for t in doc.iter(ns + "text")]
        check("step" in texts and "time since the trace began (s)" not in texts,
              f"a step axis: {texts}")
        check([str(i) for i in range(0, 10, 2)] == [t for t in texts if t.isdigit()],
              f"integer step ticks: {texts}")
        for legend in ("live", "persistent (by rule)", "pending frees",
                       "grows 1.00 MiB/step: "):
            check(any(t.startswith(legend) for t in texts), f"legend {legend!r}: {texts}")
        lines = {}
        for pl in doc.iter(ns + "polyline"):
            pts = [tuple(float(c) for c in p.split(",")) for p in pl.get("points").split()]
            lines[pl.get("stroke")] = (pts, pl.get("stroke-dasharray"))
        live, _ = lines["#1f77b4"]
        persistent, _ = lines["#7f7f7f"]
        pending, dash = lines["#ff7f0e"]
        eq([len(live), len(persistent), len(pending)], [11, 11, 11], "one point per step")
        eq(len({y for _, y in persistent}), 1, "persistent: the KV cache, flat")
        eq(persistent[0][1], live[0][1], "at step 0 everything live is the KV cache")
        bottom = max(y for _, y in pending)
        check(all(y == bottom for _, y in pending) and dash == "5,3",
              "pending frees: dashed, at zero (each sync completes them)")
        # 64 MiB of KV cache, then 1 MiB more live per step: 10 MiB over the panel
        rise = live[0][1] - live[-1][1]
        check(abs(rise / (bottom - persistent[0][1]) - 10 / 64) < 0.01,
              f"live rises 10 MiB over 64 MiB: {rise} px")
        p = run_plain(["rsvg-convert", svg, "-o", png])
        eq(p.returncode, 0, f"rsvg-convert: {p.stderr}")
        _, _, rows = png_pixels(png)
        y = round(persistent[0][1])
        band = [px for r in rows[y - 2:y + 3] for px in r[int(persistent[0][0]):
                                                             int(persistent[-1][0])]]
        grey = sum(1 for px in band if 0x60 <= px[0] <= 0x9f and px[0] == px[1] == px[2])
        check(grey > 700, f"the persistent line is drawn in grey along its row ({grey} px)")
    finally:
        for f in (svg, png):
            if os.path.exists(f):
                os.unlink(f)


@test
def capture_reports_the_same_stacks_and_pictures_without_the_binaries():
    tmp = tempfile.mkdtemp(prefix="gpuleak-stacks-")
    outs = {k: os.path.join(tmp, k) for k in ("live.folded", "live.json", "live.svg",
                                              "off.folded", "off.json", "off.svg")}
    try:
        # a private copy of the program and its libraries, removed before the report
        os.makedirs(os.path.join(tmp, "bin"))
        shutil.copytree(LIB, os.path.join(tmp, "lib"))
        shutil.copy2(scenario("stacks"), os.path.join(tmp, "bin"))
        # the frame-pointer walk's judgement travels with the capture (--unwind fp: auto
        # unwinds nofp_cb's stack instead)
        r = record(["--unwind", "fp", "--", os.path.join(tmp, "bin", "stacks")],
                   extra=["--folded", outs["live.folded"], "--perfetto", outs["live.json"],
                          "--svg", outs["live.svg"]])
        live = r.verdict()
        stacks_expected(live)
        shutil.rmtree(os.path.join(tmp, "bin"))
        shutil.rmtree(os.path.join(tmp, "lib"))
        rep = report(r.path, ["--folded", outs["off.folded"], "--perfetto", outs["off.json"],
                              "--svg", outs["off.svg"]])
        off = rep.verdict()
        same_verdict(live, off)
        eq(functions(the_stack(stacks_of(off, "inner_c"), "middle_b"))[:4],
           ["inner_c", "middle_b", "outer_a", "main"], "offline: the chain")
        eq(functions(stacks_of(off, "grow_cb")[0])[:3], ["grow_cb", None, GROW],
           "offline: the stripped library")
        eq(stacks_of(off, "nofp_cb")[0]["without_frame_pointers"], {"from_frame": 2},
           "offline: the walk's verdict")
        live_tail = r.out[r.out.index("\npid "):]
        check(rep.out.endswith(live_tail), f"the same report, graph included:\n{live_tail}\n"
              f"offline:\n{rep.out}")
        for kind in ("folded", "json", "svg"):
            with open(outs["live." + kind], "rb") as a, open(outs["off." + kind], "rb") as b:
                eq(a.read() == b.read(), True, f"--{kind}: the same file live and offline")
        eq(sum(n for _, n in folded(outs["off.folded"])), off["live_bytes"], "folded sums")
        r.cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
def output_files_that_cannot_be_written_stop_before_attaching():
    bad = "/nonexistent-dir/x.folded"
    p = run_plain([gl(), "run", "--folded", bad, "--", scenario("stacks")])
    check_sanitizers(p.stderr)
    eq(p.returncode, 1, f"exit status ({p.stderr})")
    check(f"cannot write {bad}: No such file or directory" in p.stderr, p.stderr)
    check("tracing pid" not in p.stderr and "done" not in p.stdout, "nothing ran")
    r = record(["--", scenario("leak3")])
    try:
        rep = report(r.path, ["--svg", "/nonexistent-dir/x.svg"], expect_rc=1)
        check("cannot write /nonexistent-dir/x.svg" in rep.err, rep.err)
    finally:
        r.cleanup()


# ---- code without frame pointers: a PyTorch-like library built -O2 ----

ALLOC_CPU = "c10::alloc_cpu(unsigned long)"
CACHING_MALLOC = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc" \
    "(unsigned long)"


def torchlike_expected(v, what):
    """torchlike 5 (tests/scenarios/torchlike.c): each allocation's stack ends at its call site
    in libtorchlike.so, whose %rbp holds no frame; none of them is lost."""
    sites = leak_sites(v)
    eq(sites[("cudaMalloc", CACHING_MALLOC)], (5 * MiB, 5), f"{what}: cudaMalloc")
    eq(v["losses"]["stack_fail"] + v["losses"]["stack_collision"], 0, f"{what}: no stack lost")
    cuda = stacks_of(v, CACHING_MALLOC)
    eq([(s["bytes"], s["count"], [f["name"] for f in s["frames"]][1:], s["without_frame_pointers"],
         s["truncated"]) for s in cuda],
       [(5 * MiB, 5, ["0x1234"], {"from_frame": 1}, False)],
       f"{what}: cudaMalloc's walk read the allocator object as a frame: marked, after the "
       "call site")
    eq(cuda[0]["frames"][0]["module"], "libtorchlike.so", f"{what}: its call site")
    if ("posix_memalign", ALLOC_CPU) not in sites:
        return
    eq(sites[("posix_memalign", ALLOC_CPU)], (5 * 4096, 5), f"{what}: posix_memalign")
    cpu = stacks_of(v, ALLOC_CPU)
    eq([(s["bytes"], s["count"], functions(s), s["without_frame_pointers"]) for s in cpu],
       [(5 * 4096, 5, [ALLOC_CPU], {"from_frame": 1})],
       f"{what}: posix_memalign's stack: the call site, its callers unknown")


@test
def stacks_through_code_without_frame_pointers_keep_what_the_walk_found():
    """libtorchlike.so (PyTorch-like allocators, -O2 -fomit-frame-pointer, %rbp a general
    register): glibc's posix_memalign does not start with push %rbp, so the kernel's walk had
    the probed address alone and bpf_get_stackid's skip of 1 made it fail: every stack was
    lost (stack_fail=5 of 5) and the report blamed --stack-entries. Now each stack keeps what
    the walk found, says where it stopped, and nothing is lost. Live and from a capture. The
    walk alone (--unwind fp): by default these stacks are unwound (next test)."""
    r = record(["--libc", "--unwind", "fp", "--", scenario("torchlike"), "5"])
    try:
        res = report(r.path)
        for what, v, out in (("live", r.verdict(), r.out), ("report", res.verdict(), res.out)):
            torchlike_expected(v, what)
            check(re.search(r"─ \[callers unknown: no frame pointer\]\n(.*\n)*? +20\.0 KiB +5 .*─ "
                            r"c10::alloc_cpu\(unsigned long\)\+0x[0-9a-f]+ \(libtorchlike\.so\)\n",
                            out), f"{what}: the graph says where the walk stopped:\n{out}")
            check("stacks lost" not in out, f"{what}: no stack lost:\n{out}")
        same_verdict(r.verdict(), res.verdict())
    finally:
        os.unlink(r.path)
    res = run_gpuleak(["run", "--interval", "0", "--unwind", "fp", "--", scenario("torchlike"),
                       "5"])
    torchlike_expected(res.verdict(), "without --libc")


@test
def stacks_through_code_without_frame_pointers_unwound_by_default():
    """The same libtorchlike.so with the defaults (--unwind auto): its code keeps no frame
    pointers and has .eh_frame, so the allocations whose walk met it are copied and unwound:
    cudaMalloc's stack goes from the allocator to forward_step and main, verified throughout,
    and the walk judged sound elsewhere costs no copy."""
    res = run_gpuleak(["run", "-v", "--interval", "0", "--", scenario("torchlike"), "5"])
    v = res.verdict()
    eq(leak_sites(v)[("cudaMalloc", CACHING_MALLOC)], (5 * MiB, 5), "cudaMalloc")
    cuda = stacks_of(v, CACHING_MALLOC)
    eq([(s["bytes"], s["count"], functions(s)[1:3], s["without_frame_pointers"],
         s["truncated"]) for s in cuda],
       [(5 * MiB, 5, ["forward_step", "main"], None, False)],
       "cudaMalloc's stack, unwound through the allocator to its callers")
    m = re.search(r"--unwind auto: (\d+) stack copies, (\d+) unwound", res.err)
    check(m and int(m.group(1)) == 5 and int(m.group(2)) == 5,
          f"one copy per allocation through the library: {res.err}")
