"""What tracing costs each process (docs/overhead.md): the trap costs calibrated at start, the
traps counted per process and kind, the BPF time and CPU time beside them (the verdict's
overhead object, the text verdict, the metrics), and --max-overhead's steps.

Counts only: a trap count is the exact number of probes the scenario's calls hit; no test
says how fast anything is."""
import json
import os
import re
import subprocess
import time
import urllib.request

import harness
from harness import (Proc, check, check_sanitizers, eq, gpuleak_env, leak_sites, run_gpuleak,
                     scenario, test, tmpfile)

MiB = 1 << 20

KEYS = {"measured", "cpu_fraction", "traps_per_s", "trap_ns", "bpf_ns", "cpu_ns", "traced_s",
        "traps", "per_trap_ns", "budget"}
KINDS = {"entry", "return", "usdt"}
# soak's step: 4 cudaMalloc and their 4 cuMemAlloc_v2 (entry and return probes), 4 cudaFree
# and their 4 cuMemFree_v2 (entry only), cudaStreamSynchronize and cuStreamSynchronize
# (entry and return): 18 entry probes, 10 return probes.
STEP_ENTRY, STEP_RETURN = 18, 10


def overhead_of(v):
    o = v["overhead"]
    eq(set(o), KEYS, "overhead keys")
    eq(set(o["traps"]), KINDS, "trap kinds")
    eq(set(o["per_trap_ns"]), KINDS, "calibrated kinds")
    for k in ("trap_ns", "bpf_ns", "cpu_ns"):
        check(isinstance(o[k], int) and o[k] >= 0, f"{k} an integer: {o}")
    for k in ("cpu_fraction", "traps_per_s", "traced_s"):
        check(isinstance(o[k], (int, float)) and o[k] >= 0, f"{k} a number: {o}")
    return o


def check_consistent(o):
    """The figures agree with each other as the docs define them (their rounding aside)."""
    eq(o["measured"], True, "measured live")
    total = sum(o["traps"].values())
    eq(o["trap_ns"], sum(o["traps"][k] * o["per_trap_ns"][k] for k in KINDS),
       "trap_ns = traps x calibrated cost, by kind")
    check(o["per_trap_ns"]["entry"] > 0 and o["per_trap_ns"]["usdt"] > 0,
          f"an entry and a USDT trap cost something: {o}")
    check(o["traced_s"] > 0 and o["cpu_ns"] > 0, f"traced time and CPU time: {o}")
    # traps_per_s is printed with one decimal, traced_s with three
    check(abs(o["traps_per_s"] * o["traced_s"] - total) <= 0.06 * o["traced_s"] +
          0.0006 * o["traps_per_s"], f"traps_per_s = traps / traced_s: {o}")
    want = min(1.0, (o["trap_ns"] + o["bpf_ns"]) / o["cpu_ns"])
    check(abs(o["cpu_fraction"] - want) <= 1e-6, f"cpu_fraction = cost / CPU: {o}")


def soak(steps, *gl_args):
    res = run_gpuleak(["run", "--interval", "0", *gl_args, "--", scenario("soak"), str(steps)],
                      timeout=600)
    v = res.verdict()
    eq(v["calls"], 4 + 18 * steps, "every call")
    return res, v


@test
def traps_are_the_probes_each_call_hits():
    """Two runs of soak, 200 steps apart: the entry and return traps differ by exactly 200
    steps' probes (18 entries, 10 returns a step), no USDT; the verdict's figures agree with
    each other, and the text verdict says the same count."""
    runs = {}
    for steps in (100, 300):
        res, v = soak(steps)
        o = overhead_of(v)
        check_consistent(o)
        eq(o["traps"]["usdt"], 0, "no USDT probes")
        eq(o["budget"], None, "no budget")
        m = re.search(r"^tracing cost ~ [\d.]+ % of pid (\d+)'s CPU: (\d+) traps", res.out, re.M)
        check(m, f"the text verdict's cost line: {res.out}")
        eq((int(m.group(1)), int(m.group(2))), (v["pid"], sum(o["traps"].values())),
           "the text verdict's pid and traps")
        runs[steps] = o["traps"]
    eq(runs[300]["entry"] - runs[100]["entry"], 200 * STEP_ENTRY, "entry traps of 200 steps")
    eq(runs[300]["return"] - runs[100]["return"], 200 * STEP_RETURN, "return traps of 200 steps")


@test
def calibration_is_said_at_verbose_and_priced_in_the_verdict():
    """-v says the calibrated costs before tracing; the verdict prices its traps at them."""
    res = run_gpuleak(["run", "-v", "--", scenario("leak3")])
    m = re.search(r"trap costs on this machine: entry probe (\d+) ns, return probe (\d+) ns, "
                  r"USDT probe (\d+) ns \(calibrated in [\d.]+ ms on (uprobe_multi|classic "
                  r"uprobe) links, (\d+) calls each\)", res.err)
    check(m, f"the calibration line: {res.err}")
    check(res.err.index("trap costs on this machine") < res.err.index("tracing pid"),
          "calibrated before tracing")
    v = res.verdict()
    o = overhead_of(v)
    check_consistent(o)
    eq((o["per_trap_ns"]["entry"], o["per_trap_ns"]["return"], o["per_trap_ns"]["usdt"]),
       tuple(int(m.group(i)) for i in (1, 2, 3)), "the verdict's costs are the calibrated ones")
    eq(v["live_bytes"], 3 * MiB, "the verdict is unchanged")


@test
def metrics_expose_the_cost():
    """The metrics endpoint: the process's traps by kind and its CPU fraction, as the verdict
    has them at the end (soak stopped at a known step)."""
    json_path = tmpfile(".ndjson")
    g = Proc([harness.GPULEAK, "run", "--interval", "0", "--metrics", ":0", "--json", json_path, "--",
              scenario("soak"), "400", "200"], env=gpuleak_env())
    try:
        url = g.wait_line(r"serving metrics on (http://\S+)", stream="err").group(1)
        g.wait_line(r"^at 200$", timeout=120)
        g.send()
        g.wait_line(r"^at 400$", timeout=120)
        body = ""
        # the ring drained and a cost sample taken (about once a second): every step's traps
        for _ in range(600):
            body = urllib.request.urlopen(url, timeout=10).read().decode()
            m = re.search(r'^gpuleak_traps_total\{[^}]*kind="return"\} (\d+)$', body, re.M)
            if m and int(m.group(1)) >= 400 * STEP_RETURN and \
                    "gpuleak_tracing_cpu_fraction{" in body:
                break
            time.sleep(0.1)
        for kind in KINDS:
            check(re.search(r'^gpuleak_traps_total\{pid="\d+",comm="soak",kind="%s"\} \d+$'
                            % kind, body, re.M), f"traps of kind {kind}: {body}")
        m = re.search(r'^gpuleak_tracing_cpu_fraction\{pid="\d+",comm="soak"\} ([\d.]+)$', body,
                      re.M)
        check(m and 0 <= float(m.group(1)) <= 1, f"the CPU fraction: {body}")
        check(re.search(r'^gpuleak_tracing_level\{pid="\d+",comm="soak"\} 0$', body, re.M),
              f"no budget: level 0: {body}")
        g.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
    finally:
        g.kill()
    check_sanitizers(g.text("err"))
    vs = [r for r in harness.read_ndjson(json_path) if r.get("type") == "verdict"]
    eq(len(vs), 1, "one verdict")
    check_consistent(overhead_of(vs[0]))


def budget_notes(g, given_up, taken_back):
    """gpuleak's stderr once it has exited: no sanitizer report, and the budget's steps said
    given_up and taken_back times. The text."""
    err = g.text("err")
    check_sanitizers(err)
    eq(len(re.findall(r"given up at", err)), given_up, f"parts given up: {err}")
    eq(len(re.findall(r"taken back at", err)), taken_back, f"parts taken back: {err}")
    return err


def budgeted_soak_verdict(json_path, pid, steps, budget, nsteps):
    """The one verdict of soak (steps decode steps, the calm ones included) under a budget
    that ended at sites_only after nsteps steps: every call traced, nothing lost, the two
    levels it ran at. Its overhead object and its budget."""
    vs = [r for r in harness.read_ndjson(json_path) if r.get("type") == "verdict"]
    eq(len(vs), 1, "one verdict")
    v = vs[0]
    eq(v["pid"], pid, "pid")
    eq(v["calls"], 4 + 18 * steps, "every call traced")
    eq((v["allocs"], v["frees"]), (1 + 4 * steps, 4 * steps), "allocations and frees")
    eq((v["live_bytes"], v["live_count"]), (64 * MiB, 1), "the live set: the KV cache")
    eq(v["dropped_events"], 0, "nothing lost")
    o = overhead_of(v)
    check_consistent(o)
    b = o["budget"]
    eq((b["max_cpu_fraction"], b["level"], b["steps"]), (budget, "sites_only", nsteps), "budget")
    eq([(l["level"], l["gives_up"]) for l in b["levels"]],
       [("full", ""), ("sites_only", "native stacks")], "the levels it ran at")
    eq(b["levels"][0]["first_s"], 0.0, "full from the attach")
    return o, b


@test
def budget_gives_up_stacks_and_loses_no_allocation():
    """--max-overhead 0.1 on soak, a loop of nothing but traced calls (its traps alone cost
    far more than 0.1 % of its CPU on any machine): the first cost sample past 10,000 steps
    gives up native stacks (soak has no Python frames nor --unwind dwarf to give up first),
    once, and says so; the traps remain above the budget, which is said once too. Every call
    is still traced: allocations, frees and the live set are exact, the leak site still named
    by its call site; the verdict says which level ran from when."""
    steps, every = 20000, 10000
    json_path = tmpfile(".ndjson")
    g = Proc([harness.GPULEAK, "run", "--interval", "0", "--max-overhead", "0.1", "--json", json_path,
              "--", scenario("soak"), str(steps), str(every)], env=gpuleak_env())
    try:
        g.wait_line(r"^at %d$" % every, timeout=300)
        # the target waits here: the next cost sample (about a second) judges its steps
        m = g.wait_line(r"pid (\d+): tracing costs [\d.]+ % of its CPU, above --max-overhead "
                        r"0\.1 %: native stacks given up at ([\d.]+) s \(level sites_only\)",
                        stream="err", timeout=60)
        g.send()
        g.wait_line(r"^at %d$" % steps, timeout=300)
        g.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
    finally:
        g.kill()
    err = budget_notes(g, 1, 0)
    check(len(re.findall(r"with nothing left to give up", err)) <= 1, f"the floor said once: {err}")
    o, b = budgeted_soak_verdict(json_path, int(m.group(1)), steps, 0.001, 1)
    check(abs(b["levels"][1]["first_s"] - float(m.group(2))) <= 0.051,
          f"stacks given up when it said: {b}, {m.group(0)}")
    check(re.search(r"^  --max-overhead 0\.1 %: full from 0\.0 s", g.text("out"), re.M),
          f"the text verdict's levels: {g.text('out')}")


@test
def budget_takes_stacks_back_when_the_rate_falls_and_gives_them_up_again():
    """--max-overhead 10 on soak with a calm spell between two surges of calls. The first
    surge costs far above 10 % of the target's CPU: native stacks are given up. In the calm
    spell each step first computes for 20 ms of CPU time, and what its calls would cost with
    stacks, at their cost per trap in the surge, is far under 10 %: the stacks are taken back.
    The second surge gives them up again. Said once each time, every call traced all along,
    and the verdict has the three steps and the time at each level. The spell lasts until
    gpuleak has said so (CPU time, not wall time, sets its rate: a loaded machine changes
    nothing here)."""
    hot, calm_us = 10000, 20000
    json_path = tmpfile(".ndjson")
    given_up = (r"pid (\d+): tracing costs [\d.]+ % of its CPU, above --max-overhead 10\.0 %: "
                r"native stacks given up at ([\d.]+) s \(level sites_only\)")
    g = Proc([harness.GPULEAK, "run", "--interval", "0", "--max-overhead", "10", "--json",
              json_path, "--", scenario("soak"), str(2 * hot), str(hot), str(calm_us)],
             env=gpuleak_env())
    try:
        g.wait_line(r"^at %d$" % hot, timeout=300)
        m1 = g.wait_line(given_up, stream="err", timeout=60)
        g.send()
        back = g.wait_line(r"pid (\d+): tracing costs [\d.]+ % of its CPU, back under "
                           r"--max-overhead 10\.0 %: native stacks taken back at ([\d.]+) s "
                           r"\(level full\)", stream="err", timeout=300)
        g.send()
        calm = int(g.wait_line(r"^calm (\d+)$", timeout=60).group(1))
        g.wait_line(r"^at %d$" % (2 * hot), timeout=300)
        m2 = g.wait_line(given_up, stream="err", timeout=60, nth=2)
        g.send()
        eq(g.finish(), 0, f"exit code ({g.text('err')})")
    finally:
        g.kill()
    err = budget_notes(g, 2, 1)
    t1, tb, t2 = float(m1.group(2)), float(back.group(2)), float(m2.group(2))
    check(t1 < tb < t2, f"given up, taken back, given up, in that order: {t1} {tb} {t2}")
    eq(len({m1.group(1), back.group(1), m2.group(1)}), 1, "one process")
    check(calm >= 1, f"calm steps: {calm}")
    steps = 2 * hot + calm
    o, b = budgeted_soak_verdict(json_path, int(m1.group(1)), steps, 0.1, 3)
    full, sites = b["levels"]
    check(abs(sites["first_s"] - t1) <= 0.051, f"first given up when it said: {b}, {t1}")
    # full ran until t1 and from tb to t2; sites_only in between and from t2 to the end
    check(full["s"] >= t1 + (t2 - tb) - 0.1, f"the time at full adds both spells: {b}")
    check(sites["s"] >= tb - t1 - 0.1, f"the time at sites_only: {b}")
    check(abs(full["s"] + sites["s"] - o["traced_s"]) <= 0.01,
          f"the levels' times add up to the traced time: {b}, {o['traced_s']}")
    check(sites["cpu_fraction"] > b["max_cpu_fraction"],
          f"the surges at sites_only cost more than the budget: {b}")
    # No figure says tracing took more CPU than the process had: a program's run is the CPU
    # time of the process that trapped (the levels' slack: a tick of /proc's CPU time).
    said = [float(x) for x in re.findall(r"tracing costs ([\d.]+) % of its CPU", err)]
    check(said and max(said) <= 100.0, f"the notes' fractions: {said}")
    check(all(l["cpu_fraction"] <= 1.05 for l in b["levels"]), f"the levels' fractions: {b}")
    check(o["bpf_ns"] + o["trap_ns"] <= o["cpu_ns"] * 1.05, f"cost within the CPU time: {o}")

# The map types live/premake.c makes ahead of the load (linux/bpf.h's numbers): hash 1,
# array 2, prog array 3, percpu array 6, stack trace 7, LRU hash 9, ring buffer 27.
PREMADE_TYPES = {1, 2, 3, 6, 7, 9, 27}


def object_maps(obj):
    """{map name: map type} of a BPF object's .maps section, read from its BTF as libbpf
    reads it: each variable's struct has a member `type`, a pointer to an array whose length
    is the type."""
    raw = subprocess.run(["bpftool", "btf", "dump", "file", obj], capture_output=True,
                         text=True, check=True).stdout
    types = {}
    cur = None
    for line in raw.splitlines():
        m = re.match(r"\[(\d+)\] (\w+) '([^']*)'(.*)", line)
        if m:
            cur = {"kind": m.group(2), "name": m.group(3), "rest": m.group(4), "members": []}
            types[int(m.group(1))] = cur
        elif cur is not None:
            cur["members"].append(line.strip())

    def ref(t, key):
        return int(re.search(key + r"=(\d+)", t["rest"]).group(1))

    sec = next(t for t in types.values() if t["kind"] == "DATASEC" and t["name"] == ".maps")
    out = {}
    for v in sec["members"]:
        var = types[int(re.match(r"type_id=(\d+)", v).group(1))]
        st = types[ref(var, "type_id")]
        member = next(mb for mb in st["members"] if mb.startswith("'type' "))
        ptr = types[int(re.search(r"type_id=(\d+)", member).group(1))]
        arr = types[ref(ptr, "type_id")]
        out[var["name"]] = int(re.search(r"nr_elems=(\d+)", arr["rest"]).group(1))
    return out


@test
def start_up_makes_maps_ahead_and_loads_no_decoder():
    """The maps are made before libbpf loads the object, several at once (live/premake.c):
    every map of the object but those needing its BTF (task storage), none left to libbpf, on
    one thread per CPU (at most 4). And the tracer has not loaded capstone (Dawn's decoder,
    opened only for a Dawn without symbols) nor, where the build does not need it for the
    sanitizers, libstdc++ (the demangler, opened at the first C++ name). Its hash tables are
    not preallocated where the kernel allocates their elements as they fill (6.1+)."""
    maps = object_maps(os.path.join(harness.OUT, "gpuleak.bpf.o"))
    check(29 in maps.values(), f"the object has its task storage: {maps}")
    want = sum(1 for t in maps.values() if t in PREMADE_TYPES)
    a = harness.Attached("loop", [3, 65536], gl_args=["-vv"])
    try:
        a.wait_attached()
        with open(f"/proc/{a.gl.pid}/maps") as f:
            mapped = f.read()
        # Every BPF map the tracer holds, as the kernel made it: (type, flags).
        held = []
        for fd in os.listdir(f"/proc/{a.gl.pid}/fd"):
            try:
                if os.readlink(f"/proc/{a.gl.pid}/fd/{fd}") != "anon_inode:bpf-map":
                    continue
                with open(f"/proc/{a.gl.pid}/fdinfo/{fd}") as f:
                    info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            except OSError:
                continue
            held.append((int(info["map_type"]), int(info["map_flags"], 16)))
        a.target.send()
        res = a.finish()
    finally:
        a.cleanup()
    m = re.search(r"(\d+) BPF maps made ahead on (\d+) threads in [0-9.]+ ms \((\d+) left to "
                  r"libbpf\)", res.err)
    check(m, "-vv says how the maps were made")
    eq((int(m.group(1)), int(m.group(3))), (want, 0), "maps made ahead, maps left to libbpf")
    eq(int(m.group(2)), min(os.cpu_count(), 4), "threads")
    feats = json.loads(harness.run_plain([harness.GPULEAK, "probes", "--kernel=json"]).stdout)
    grow = {f["name"]: f["present"] for f in feats["features"]}[
        "hash tables allocated as they fill (bpf_mem_alloc)"]
    hashes = [flags for t, flags in held if t == 1]  # BPF_MAP_TYPE_HASH
    check(len(hashes) >= 6, f"the object's hash tables held: {held}")
    eq(sorted(set(flags & 1 for flags in hashes)), [1 if grow else 0],
       "BPF_F_NO_PREALLOC on every hash table where the kernel allows it")
    check("libcapstone" not in mapped, "capstone not loaded by a session without Dawn")
    needs = subprocess.run(["ldd", harness.GPULEAK], capture_output=True, text=True).stdout
    if "libstdc++" not in needs:
        check("libstdc++" not in mapped, "libstdc++ not loaded before a C++ name")
    # And the session traced as ever: the loop's KV cache (no rule) and its leak.
    sites = {fn: (b, n) for (_, fn), (b, n) in leak_sites(res.verdict()).items()}
    eq(sites, {"kv_cache_init": (64 * MiB, 1), "leaky_sampler": (3 * 65536, 3)}, "verdict")
