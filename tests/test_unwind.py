# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""--unwind dwarf: allocation stacks unwound from a copy of the user stack with the modules'
call frame information, on real uprobes: unwind_nofp (built -O2 -fomit-frame-pointer, a
value in %rbp across a call), whose callers only unwinding names, the copy's bounds (a stack
deeper than --unwind-bytes, a copy cut where the main thread's stack ends), the `stacks`
scenario's library without frame pointers, frees that never pay for a copy, and a capture
reported offline. The JavaScript that creates GPU buffers through dawn.node is in
tests/test_jit.py. Expected numbers are in the scenarios' headers."""
import os
import re

import harness
from harness import check, eq, leak_sites, run_gpuleak, scenario, test
from test_capture import record, report, same_verdict
from test_stacks import functions, run_stacks, stacks_of

MiB = 1 << 20
CHAIN = ["leak_inner", "leak_middle", "leak_outer", "main"]
COPIES = re.compile(r"--unwind (?:dwarf|auto): (\d+) stack copies, (\d+) unwound stacks in place of "
                    r"frame-pointer walks \((\d+) reached the copy's end\)")


def run_nofp(*extra, steps=4, levels=0):
    args = [scenario("unwind_nofp"), str(steps)] + ([str(levels)] if levels else [])
    res = run_gpuleak(["run", "-v"] + list(extra) + ["--interval", "0", "--"] + args)
    v = res.verdict()
    eq(leak_sites(v), {("cudaMalloc", "leak_inner"): (steps * MiB, steps)}, "the leak")
    st = stacks_of(v, "leak_inner")
    eq(len(st), 1, f"one stack: {[functions(s) for s in st]}")
    eq((st[0]["bytes"], st[0]["count"]), (steps * MiB, steps), "all of it on that stack")
    return res, st[0]


def copies(res):
    m = COPIES.findall(res.err)
    eq(len(m), 1, f"-v says what the copies did: {res.err}")
    return tuple(int(x) for x in m[0])


@test
def unwind_dwarf_names_callers_the_frame_pointer_walk_loses():
    """leak_middle keeps a value in %rbp across its call: the kernel's walk from leak_inner
    reads it as a frame and names no caller. With --unwind dwarf the chain is exact, to
    main and beyond, verified throughout (no frame marked), one copy per allocation. The
    defaults (--unwind auto) do the same: the executable keeps no frame pointers."""
    res, fp = run_nofp("--unwind", "fp")
    for fn in CHAIN[1:]:
        check(fn not in functions(fp), f"the frame-pointer walk does not reach {fn}: "
              f"{functions(fp)}")
    check(not COPIES.search(res.err), "no copies with --unwind fp")
    res, st = run_nofp()
    eq(functions(st)[:4], CHAIN, "the defaults: the chain")
    eq(copies(res), (4, 4, 0), "the defaults: a copy per allocation")
    res, st = run_nofp("--unwind", "dwarf")
    eq(functions(st)[:4], CHAIN, "the chain, innermost first")
    eq([f["module"] for f in st["frames"][:4]], ["unwind_nofp"] * 4, "objects of the chain")
    check(re.fullmatch(r"leak_inner\+0x[0-9a-f]+ \(unwind_nofp\)", st["frames"][0]["name"]),
          f"frame 0 is the call site: {st['frames'][0]}")
    eq(st["frames"][-1]["function"], "_start", "to the outermost frame")
    eq((st["truncated"], st["without_frame_pointers"]), (False, None), "complete, verified")
    eq(copies(res), (4, 4, 0), "copies, stacks replaced, copies that ended first")
    check("leak_middle (unwind_nofp)" in res.out, f"the graph names it:\n{res.out}")


@test
def unwind_dwarf_stops_where_the_copy_ends():
    """Nine 1 KiB frames between main and the chain: 4 KiB of copy reach some of them and
    the stack says it is cut (the frame-pointer walk, lost at leak_middle's %rbp, has nothing
    to add); 16 KiB (the default) reach main. A shallow stack with 32 KiB asked for is
    copied to where the main thread's stack ends, and unwound whole."""
    res, st = run_nofp("--unwind", "dwarf", "--unwind-bytes", "4KiB", steps=2, levels=9)
    fns = functions(st)
    eq(fns[:3], CHAIN[:3], "the chain")
    deep = len(fns) - 3
    check(1 <= deep < 9 and fns[3:] == ["deep"] * deep, f"some of the deep frames: {fns}")
    eq((st["truncated"], st["without_frame_pointers"]), (True, None), "cut, not wrong")
    eq(copies(res), (2, 2, 2), "both copies ended before the outermost frame")
    check("[truncated]" in res.out, f"the graph says so:\n{res.out}")
    res, st = run_nofp("--unwind", "dwarf", steps=2, levels=9)
    eq(functions(st)[:13], CHAIN[:3] + ["deep"] * 9 + ["main"], "16 KiB: all of it")
    eq(st["truncated"], False, "not cut")
    res, st = run_nofp("--unwind", "dwarf", "--unwind-bytes", "32KiB", steps=2)
    eq(functions(st)[:4], CHAIN, "a copy cut at the stack's end still unwinds")
    eq(copies(res), (2, 2, 0), "to the outermost frame")


@test
def unwind_dwarf_through_a_library_without_frame_pointers():
    """The `stacks` scenario: nofp_call (libnofp.so, -fomit-frame-pointer) makes the kernel's
    walk skip main ("without_frame_pointers" from frame 2); unwound, main is there and no
    frame is marked. The stacks the walk got right stay as they were. The defaults
    (--unwind auto) copy nofp_cb's stack only, and unwind it the same."""
    res, v = run_stacks("--unwind", "fp")
    nofp = stacks_of(v, "nofp_cb")
    eq(functions(nofp[0])[:2], ["nofp_cb", "nofp_call"], "frame-pointer walk")
    eq(nofp[0]["without_frame_pointers"], {"from_frame": 2}, "marked")
    check("main" not in functions(nofp[0]), f"main skipped: {functions(nofp[0])}")
    res, v = run_stacks("--unwind", "dwarf")
    nofp = stacks_of(v, "nofp_cb")
    eq(len(nofp), 1, "one stack")
    eq(functions(nofp[0])[:3], ["nofp_cb", "nofp_call", "main"], "unwound")
    eq(nofp[0]["without_frame_pointers"], None, "verified by CFI")
    chain = [s for s in stacks_of(v, "inner_c") if functions(s)[1] == "middle_b"]
    eq(functions(chain[0])[:4], ["inner_c", "middle_b", "outer_a", "main"], "the chain")
    res, v = run_stacks("-v")
    nofp = stacks_of(v, "nofp_cb")
    eq((functions(nofp[0])[:3], nofp[0]["without_frame_pointers"]),
       (["nofp_cb", "nofp_call", "main"], None), "the defaults: unwound")
    eq(copies(res)[:2], (1, 1), "the defaults: one copy, nofp_cb's; none for the sound walks")


@test
def unwind_dwarf_copies_at_allocations_only():
    """loop 3: 10 allocations (cudaMalloc, cudaMallocAsync; their cuMemAlloc layers take no
    stack), the runtime's one cuDevicePrimaryCtxRetain (a context: memory of its own, with its
    stack), 6 frees and 3 syncs: 11 copies, none for a free, a sync or a layer."""
    res = run_gpuleak(["run", "-v", "--unwind", "dwarf", "--interval", "0", "--",
                       scenario("loop"), "3", "65536"])
    v = res.verdict()
    eq(v["live_count"], 4, "kv cache and 3 leaks")
    eq((v["allocs"], v["frees"]), (10, 6), "allocations and frees")
    eq(copies(res)[0], 11, "one copy per allocation-shaped call")


@test
def unwind_dwarf_through_open_traced_calls():
    """hostleak --libc: the stand-in driver's calloc inside cuMemAlloc_v2 inside cudaMalloc,
    both traced: their return addresses on the stack are the kernel's uretprobe trampoline
    by then. The copy says what they were, and the unwind goes through both to main."""
    res = run_gpuleak(["run", "--libc", "--unwind", "dwarf", "--interval", "0", "--",
                       scenario("hostleak")])
    v = res.verdict()
    got = [s for e in v["leaks"] if e["api"] == "calloc" for s in e["stacks"]
           if "cuMemAlloc_v2" in functions(s)]
    eq(len(got), 1, "one calloc under cuMemAlloc_v2")
    fns = functions(got[0])
    i = fns.index("cuMemAlloc_v2")
    eq(fns[i:i + 4], ["cuMemAlloc_v2", "cudaMalloc", "gpu_leak", "main"],
       f"through both open calls: {[f['name'] for f in got[0]['frames']]}")
    eq((got[0]["truncated"], got[0]["without_frame_pointers"]), (False, None), "verified")


@test
def unwind_dwarf_capture_reports_the_unwound_stack_offline():
    """The unwound stack is what the capture keeps: `gpuleak report` draws it with the same
    verdict, with no copy of the stack in the file."""
    r = record(["--", scenario("unwind_nofp"), "3"], extra=["--unwind", "dwarf"])
    try:
        live = r.verdict()
        rep = report(r.path)
        off = rep.verdict()
        same_verdict(live, off)
        st = stacks_of(off, "leak_inner")
        eq(functions(st[0])[:4], CHAIN, "offline")
        eq((st[0]["bytes"], st[0]["count"]), (3 * MiB, 3), "bytes and count")
        check("leak_middle (unwind_nofp)" in rep.out, f"the offline graph:\n{rep.out}")
        check(os.path.getsize(r.path) < 64 << 10, "no stack copies in the capture")
    finally:
        os.unlink(r.path)


@test
def unwind_options_are_checked():
    for args, msg in ((["--unwind", "lbr"], "invalid --unwind 'lbr' (auto, fp or dwarf)"),
                      (["--unwind-bytes", "100"],
                       "invalid --unwind-bytes '100' (1KiB..32KiB, a multiple of 8)"),
                      (["--unwind-bytes", "64KiB"],
                       "invalid --unwind-bytes '64KiB' (1KiB..32KiB, a multiple of 8)")):
        res = run_gpuleak(["run"] + args + ["--", "true"], expect_rc=2)
        eq([l for l in res.err.splitlines() if "invalid" in l],
           [f"gpuleak run: {msg}"], f"one line: {res.err}")


@test
def fuzz_unwind_short():
    """5,000 inputs of libFuzzer on what the unwinder reads of a target (stack bytes and
    registers stepped through real CFI, CFI's DWARF expressions) over its committed seeds
    (`make fuzz-unwind` runs it for long)."""
    harness.run_fuzzer("unwind", 5000)
