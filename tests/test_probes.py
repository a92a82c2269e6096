# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Probe placement: entries whose first instruction the kernel single-steps under a uprobe
(~20 us a hit on a VM, against ~0.6 us). gpuleak moves such a probe past instructions that
provably do not matter to it and reports the others; tests/standin/reloc.S has one entry of
each kind, in assembly (real libraries: libnccl.so.2 and glibc's free in
test_driver_nccl.py)."""
import glob
import os
import re
import shutil
import subprocess

import harness
from harness import Proc, check, eq, leak_sites, run_gpuleak, run_plain, scenario, test

RELOC_LIB = os.path.join(harness.OUT, "tests", "lib-reloc", "libcudart.so.13")
MiB = 1 << 20


def entry_offsets(lib):
    """File offsets of the library's exported functions, from binutils (not gpuleak)."""
    loads = []
    for l in subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True,
                            check=True).stdout.splitlines():
        f = l.split()
        if f and f[0] == "LOAD":
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # off, vaddr, filesz
    out = {}
    for l in subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                            text=True, check=True).stdout.splitlines():
        addr, kind, name = l.split()
        if kind != "T":
            continue
        for off, vaddr, size in loads:
            if vaddr <= int(addr, 16) < vaddr + size:
                out[name.split("@")[0]] = int(addr, 16) - vaddr + off
    return out


def probes(*args):
    p = run_plain([harness.GPULEAK, "probes", "--lib", RELOC_LIB, *args])
    eq(p.returncode, 0, f"probes exit code ({p.stderr})")
    return {r[0]: (int(r[2], 16), r[4]) for r in harness.probe_rows(p.stdout)}, p.stdout


def check_exact(v):
    """What the reloc scenario did, seen through whatever probes: nothing lost or extra."""
    eq(leak_sites(v), {("cudaMalloc", "device_buffers"): (2 * MiB, 2),
                       ("cudaMallocHost", "host_buffers"): (4096, 1)}, "live by site")
    eq((v["allocs"], v["frees"], v["calls"]), (5, 2, 7), "allocations, frees, calls")
    eq((v["unknown_frees"], v["double_frees"], v["dropped_events"]), (0, 0, 0),
       "no free of an unknown pointer (a probe passed twice), none lost")


@test
def moved_probes_record_exact_arguments():
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("reloc"), "3", "1M"])
    v = res.verdict()
    check_exact(v)
    eq(sorted((s["api"], s["insn"], s["moved_bytes"]) for s in v["moved_probe_sites"]),
       [("cudaFree", "movabs", 10), ("cudaMalloc", "endbr64", 4)], "moved probes")
    eq(sorted((s["api"], s["insn"], s["why"]) for s in v["slow_probe_sites"]),
       [("cudaFreeHost", "xor", "a branch in the function lands after it"),
        ("cudaMallocHost", "sub", "sub cannot be skipped")], "probes left on slow entries")
    check(re.search(r"2 probes in libcudart\.so\.13 sit on an instruction the kernel "
                    r"single-steps.*cudaMallocHost \(sub\)", res.err) and
          "cudaFreeHost (xor)" in res.err, f"warns about the two left: {res.err}")


@test
def probes_shows_where_each_probe_sits():
    entries = entry_offsets(RELOC_LIB)
    rows, out = probes()
    eq(rows, {"cudaMalloc": (entries["cudaMalloc"] + 4, "entry+4"),
              "cudaFree": (entries["cudaFree"] + 10, "entry+10"),
              "cudaMallocHost": (entries["cudaMallocHost"], "slow"),
              "cudaFreeHost": (entries["cudaFreeHost"], "slow")}, "probe offsets")
    for needle in ("  cudaMalloc in libcudart.so.13: probe moved 4 bytes past its entry's endbr64",
                   "  cudaFree in libcudart.so.13: probe moved 10 bytes past its entry's movabs",
                   "  cudaMallocHost in libcudart.so.13: probe on sub, which the kernel "
                   "single-steps",
                   "  cudaFreeHost in libcudart.so.13: probe on xor, which the kernel "
                   "single-steps (~20 us per call on a VM), not moved: a branch in the "
                   "function lands after it"):
        check(needle in out, f"'{needle}' in:\n{out}")


@test
def probe_at_entry_keeps_every_probe_at_its_entry():
    entries = entry_offsets(RELOC_LIB)
    rows, _ = probes("--probe-at-entry")
    eq(rows, {n: (entries[n], "slow") for n in
              ("cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost")}, "probe offsets")
    v = run_gpuleak(["run", "--probe-at-entry", "--interval", "0", "--", scenario("reloc"),
                     "3", "1M"]).verdict()
    check_exact(v)
    eq(v["moved_probe_sites"], [], "nothing moved")
    eq(sorted((s["api"], s["why"]) for s in v["slow_probe_sites"]),
       [(n, "--probe-at-entry") for n in
        ("cudaFree", "cudaFreeHost", "cudaMalloc", "cudaMallocHost")], "all four at entry")


@test
def probes_pid_says_what_is_wrong():
    """probes -p PID: each refusal one line on stderr, exit 1, as attach says it: a pid that
    does not exist, a kernel thread, a process with no GPU library (it was "no traced GPU
    allocation API found in the process's mapped objects", no pid named), another user's
    process without the capabilities (it was "Permission denied: PID")."""
    with open("/proc/sys/kernel/pid_max") as f:
        gone = int(f.read()) + 1
    t = Proc(["sleep", "30"], stdin=False)
    try:
        cases = [([], gone, f"no such process: {gone}"),
                 ([], 2, "pid 2 (kthreadd) is a kernel thread: nothing to trace"),
                 ([], t.pid, f"pid {t.pid} (sleep): no traced GPU allocation API nor USDT "
                  "probe in the objects it maps (no CUDA, NCCL, WebGPU or PyTorch library "
                  "loaded yet?)")]
        if shutil.which("setpriv"):
            cases.append((["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
                          t.pid, f"pid {t.pid} (sleep) belongs to uid 0, not to uid 65534 that "
                          "gpuleak runs as: tracing another user's process needs "
                          "CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (run gpuleak as root)"))
        for pre, pid, line in cases:
            p = run_plain(pre + [harness.GPULEAK, "probes", "-p", str(pid)])
            harness.check_sanitizers(p.stderr)
            eq((p.returncode, p.stderr.splitlines()), (1, [f"gpuleak: {line}"]),
               f"probes -p {pid} {pre[:1]}")
    finally:
        t.kill()


def gnu_build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", run_plain(["readelf", "-n", path]).stdout)
    check(m, f"{path} has a GNU build id")
    return m.group(1)


def attach_counts(env=None):
    """Attach -v to the loop scenario: (objects scanned, spared by earlier runs), the objects
    probed, and the verdict."""
    a = harness.Attached("loop", [3, 65536], gl_args=["-v"], env=env)
    try:
        a.wait_attached()
        a.target.send()
        res = a.finish()
    finally:
        a.cleanup()
    m = re.search(r"objects scanned (\d+), spared by earlier runs (\d+)\)", res.err)
    check(m, f"attach -v says what it scanned: {res.err}")
    # At attach (libcuda.so.1 is loaded later, and scanned then).
    probed = sorted(set(re.findall(r"attached \d+ probes to (\S+)", res.err[:m.start()])))
    return (int(m.group(1)), int(m.group(2))), probed, res


def probes_placed(res):
    """What attach -v and the verdict say of the probes: per object, how many and from what;
    which were moved past their entry or left single-stepped, and how."""
    v = res.verdict()
    return (sorted(re.findall(r"attached (\d+ probes to \S+ \(addresses from [^)]*\))", res.err)),
            v.get("moved_probe_sites"), v.get("slow_probe_sites"))


@test
def object_scans_kept_between_runs():
    """What a scan found is not scanned again by the next run (the store in /run/gpuleak, per
    build): objects with nothing to trace, and the probe sites of those it traces, where each
    probe went included; the same probes, placed alike, and the same verdict; a library
    changed since (here only touched) is scanned afresh; kept sites that do not fit their
    object are not used; a store that does not parse or that others may write is ignored and
    replaced."""
    store_glob = f"/run/gpuleak/objects-{gnu_build_id(harness.GPULEAK)}-*"
    for f in glob.glob(store_glob):
        os.unlink(f)
    d = harness.tmpfile("")
    os.makedirs(d)
    try:
        # A library of ours among the target's: one the test may change.
        z = os.path.join(d, "libz.so.1")
        shutil.copy("/usr/lib/x86_64-linux-gnu/libz.so.1", z)
        env = {"LD_PRELOAD": z}
        (scanned, spared), probed, res = attach_counts(env)
        eq(spared, 0, "the first run spares nothing")
        check(len(probed) >= 2 and any("libcudart" in p for p in probed),
              f"objects probed: {probed}")
        stores = glob.glob(store_glob)
        eq(len(stores), 1, "one store for this build and these options")
        eq(os.stat(stores[0]).st_mode & 0o777, 0o600, "only root reads and writes it")
        with open(stores[0]) as f:
            lines = f.read().splitlines()
        eq(lines[0], "gpuleak-object-facts 1", "its first line")

        def id_line(path):
            st = os.stat(path)
            return f"{st.st_dev:x} {st.st_ino:x} {st.st_size:x} {st.st_mtime_ns:x} {st.st_ctime_ns:x}"

        zline = id_line(z)
        check(any(l.startswith(zline + " ") for l in lines), f"libz's facts kept: {lines}")
        nsites = int(re.search(r"attached (\d+) probes to \S*libcudart",
                               res.err).group(1))
        cudart = next(p for p in probed if "libcudart" in p)
        at = next(i for i, l in enumerate(lines) if l.startswith(id_line(cudart) + " "))
        eq((int(lines[at].split()[5], 16) & 0x10, [l[:2] for l in lines[at + 1:at + 1 + nsites]]),
           (0x10, ["s "] * nsites), f"libcudart's {nsites} sites kept after its line")
        want = (leak_sites(res.verdict()), res.verdict()["allocs"], res.verdict()["frees"])
        placed = probes_placed(res)

        (s2, sp2), probed2, res2 = attach_counts(env)
        eq((s2, sp2), (0, scanned), "the second run scans nothing, not even what it probes")
        eq(probed2, probed, "the same objects probed")
        eq(probes_placed(res2), placed, "the same probes, placed alike")
        eq((leak_sites(res2.verdict()), res2.verdict()["allocs"], res2.verdict()["frees"]),
           want, "the same verdict")

        os.utime(z)  # a new mtime and ctime: another version of the file
        (s3, sp3), _, _ = attach_counts(env)
        eq((s3, sp3), (1, scanned - 1), "libz scanned afresh")

        # A kept site whose entry is not where its object has it: that object is scanned.
        with open(stores[0]) as f:
            cur = f.read().splitlines()
        at = next(i for i, l in enumerate(cur) if l.startswith(id_line(cudart) + " "))
        fld = cur[at + 1].split()
        fld[2] = f"{int(fld[2], 16) + 16:x}"
        fld[4] = f"{int(fld[4], 16) + 16:x}"
        cur[at + 1] = " ".join(fld)
        with open(stores[0], "w") as f:
            f.write("".join(l + "\n" for l in cur))
        (s6, sp6), probed6, res6 = attach_counts(env)
        eq((s6, sp6), (1, scanned - 1), "libcudart scanned: its kept sites do not fit it")
        eq((probed6, probes_placed(res6)), (probed, placed), "the same probes, placed alike")

        # Kept as found with a debug file's symbols, which this run has not: still what the
        # object has (its offsets), used as it is.
        with open(stores[0]) as f:
            cur = f.read().splitlines()
        at = next(i for i, l in enumerate(cur) if l.startswith(id_line(cudart) + " "))
        fld = cur[at].split()
        eq(int(fld[5], 16) & 0x30, 0x10, "kept sites, found without a debug file")
        fld[5] = f"{int(fld[5], 16) | 0x20:x}"
        cur[at] = " ".join(fld)
        with open(stores[0], "w") as f:
            f.write("".join(l + "\n" for l in cur))
        (s7, sp7), probed7, res7 = attach_counts(env)
        eq((s7, sp7), (0, scanned), "kept with a debug file's symbols: spared")
        eq((probed7, probes_placed(res7)), (probed, placed), "the same probes, placed alike")

        for bad, mode in (("gpuleak-object-facts 1\nfe00 zz\n", 0o600),
                          ("".join(l + "\n" for l in lines), 0o622)):
            with open(stores[0], "w") as f:
                f.write(bad)
            os.chmod(stores[0], mode)
            (s4, sp4), probed4, res4 = attach_counts(env)
            eq((s4, sp4), (scanned, 0), f"a store {bad[:30]!r} {mode:o}: everything scanned")
            eq(probed4, probed, "the same objects probed")
            if mode == 0o600:
                check("line 2: not six hex fields of known facts: objects are scanned afresh"
                      in res4.err, f"said why, with the line: {res4.err}")
            eq(os.stat(stores[0]).st_mode & 0o777, 0o600, "replaced with its own mode")
            (s5, sp5), _, _ = attach_counts(env)
            eq((s5, sp5), (0, scanned), "replaced: spared again")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@test(root=False)
def fuzz_objfacts_parser_short():
    """The store of facts about objects under libFuzzer for a few thousand inputs
    (`make fuzz-objfacts` runs it for long)."""
    harness.run_fuzzer("objfacts", 5000)
