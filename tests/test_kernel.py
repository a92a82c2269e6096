# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The kernel gpuleak runs on: what `gpuleak probes --kernel` reports (checked against the
machine itself), the verifier check that every BPF program fits 512 bytes of stack in every
configuration whatever the host kernel offers (and that it fails on an object built too big),
and the classic uprobe links kernels before 6.6 get, giving the same verdict as uprobe_multi."""
import json
import os
import re

import harness
from harness import check, eq, leak_sites, run_gpuleak, run_plain, scenario, test

MiB = 1 << 20
STACKPAD = os.path.join(harness.OUT, "tests", "stackpad.bpf.o")
# Each BPF program, and the configurations `probes --kernel --verifier` loads them in.
PROGRAMS = {"gl_usdt", "gl_enter", "gl_exit", "gl_fork", "gl_exec", "gl_task_exit",
            "gl_calib_enter", "gl_calib_exit"}
FLOOR = ["BTF (/sys/kernel/btf/vmlinux)", "BPF ring buffer", "task storage maps",
         "BTF tracepoints (tp_btf)", "uprobe attach cookies", "perf uprobe PMU"]


def probes_kernel(*extra, expect_rc=0, timeout=600):
    p = run_plain([harness.GPULEAK, "probes", "--kernel=json", *extra], timeout=timeout)
    harness.check_sanitizers(p.stderr)
    eq(p.returncode, expect_rc, f"exit status of probes --kernel=json {extra} ({p.stderr})")
    return json.loads(p.stdout)


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except OSError:
        return -1


@test
def kernel_features_match_the_machine():
    k = probes_kernel()
    eq(k["release"], os.uname().release, "release")
    eq(k["probed"], True, "test loads ran (root)")
    feats = {f["name"]: f for f in k["features"]}
    eq(len(feats), 17, "features listed")
    eq([n for n, f in feats.items() if f["floor"]], FLOOR, "the floor's features, in order")
    eq(feats["BTF (/sys/kernel/btf/vmlinux)"]["present"],
       os.path.exists("/sys/kernel/btf/vmlinux"), "BTF")
    eq(feats["perf uprobe PMU"]["present"],
       os.path.exists("/sys/bus/event_source/devices/uprobe/type"), "uprobe PMU")
    eq(k["perf_event_paranoid"], read_int("/proc/sys/kernel/perf_event_paranoid"),
       "perf_event_paranoid")
    eq(k["unprivileged_bpf_disabled"], read_int("/proc/sys/kernel/unprivileged_bpf_disabled"),
       "unprivileged_bpf_disabled")
    eq(k["supported"], all(feats[n]["present"] for n in FLOOR), "supported = the floor holds")
    check(k["supported"], f"the test machine is above the floor: {k}")
    for n, f in feats.items():
        check(f["floor"] == (f["without"] is None), f"{n}: a degradation or the floor: {f}")
    # The text table says the same, and what gpuleak does on this kernel.
    p = run_plain([harness.GPULEAK, "probes", "--kernel"])
    eq(p.returncode, 0, f"probes --kernel ({p.stderr})")
    check("gpuleak on this kernel: runs" in p.stdout, f"verdict line: {p.stdout}")
    for n in feats:
        check(n in p.stdout, f"{n} in the table: {p.stdout}")


def build_id(path):
    p = run_plain(["readelf", "-n", path])
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout)
    check(m, f"{path} has a GNU build id: {p.stdout}")
    return m.group(1)


@test
def kernel_features_cached_per_boot_and_build():
    """A session's start takes the kernel's features (test loads, the kernel's BTF) from
    /run/gpuleak, kept per boot id and build id by the first start: the same bits as probes
    --kernel says, what the file says is obeyed (a floor feature cleared there refuses), and a
    file that does not parse or that others may write is probed again and replaced."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    path = f"/run/gpuleak/kernel-{boot}-{build_id(harness.GPULEAK)}"
    feats = probes_kernel()["features"]
    bits = sum(1 << i for i, f in enumerate(feats) if f["present"])
    want = f"gpuleak-kernel-features 1 1 {bits:x}\n"

    def start():
        return run_plain([harness.GPULEAK, "run", "-v", "--interval", "0", "--", "/bin/true"])

    def said(p, what):
        check(f"gpuleak: kernel features {what} {path}" in p.stderr, f"{what}: {p.stderr}")

    if os.path.exists(path):
        os.unlink(path)
    p = start()
    eq(p.returncode, 0, f"first start ({p.stderr})")
    said(p, "probed, kept in")
    with open(path) as f:
        eq(f.read(), want, "the cache: the test loads' answers, as probes --kernel says")
    eq(os.stat(path).st_mode & 0o777, 0o600, "only root reads and writes it")
    p = start()
    eq(p.returncode, 0, f"second start ({p.stderr})")
    said(p, "from")
    # Obeyed: without the ring buffer (bit 1) gpuleak refuses, as on such a kernel.
    with open(path, "w") as f:
        f.write(f"gpuleak-kernel-features 1 1 {bits & ~2:x}\n")
    p = start()
    eq(p.returncode, 1, f"refused ({p.stderr})")
    check("BPF ring buffer" in p.stderr, f"the missing feature named: {p.stderr}")
    for bad, mode in (("gpuleak-kernel-features 1 1 zz\n", 0o600), (want, 0o622)):
        with open(path, "w") as f:
            f.write(bad)
        os.chmod(path, mode)
        p = start()
        eq(p.returncode, 0, f"start over {bad!r} {mode:o} ({p.stderr})")
        said(p, "probed, kept in")
        with open(path) as f:
            eq(f.read(), want, "replaced")
        eq(os.stat(path).st_mode & 0o777, 0o600, "replaced with its own mode")


@test
def verifier_every_program_fits_512_bytes_in_every_configuration():
    """Loaded one by one in each configuration that changes their code, every program is
    accepted and needs at most 512 bytes of stack along its deepest chain of calls, as counted
    without private stacks: on a kernel that offers them the check still holds the line."""
    d = probes_kernel("--verifier")
    eq(d["failed"], 0, "programs refused or over 512 bytes")
    # --follow's fallback hold (fexit on schedule_tail) is loaded where the kernel takes it.
    fexit = {f["name"]: f["present"] for f in probes_kernel()["features"]}["fexit on schedule_tail"]
    configs = d["verifier"]
    eq(len(configs), 9, "configurations")
    check(any(c["budget"] and c["python_depth"] and c["unwind_bytes"] for c in configs),
          "--max-overhead's level lookups in the deepest configuration")
    check(any(c["python_depth"] == 64 and c["unwind"] == "auto" and c["follow"]
              for c in configs), "the deepest configuration is among them")
    eq([(c["python_depth"], c["stack_depth"], c["unwind"]) for c in configs[:2]],
       [(32, 32, "auto"), (32, 32, "fp")], "the defaults (--unwind auto), and --unwind fp")
    for c in configs:
        names = {p["name"] for p in c["programs"]}
        want = PROGRAMS | ({"gl_oom_victim"} if c["oom_kill"] else set()) | \
            ({"gl_fork_hold"} if c["follow"] and fexit else set())
        eq(names, want, f"programs loaded in {c}")
        for p in c["programs"]:
            check(p["loaded"] and p["ok"], f"{p['name']} in {c}: {p}")
            check(32 <= p["stack"] <= 512, f"{p['name']} stack in {c}: {p}")
            check(p["insns"] > 0, f"{p['name']} instructions: {p}")
    # The Python walk's callbacks are counted: with Python frames gl_enter has more frames.
    enter = {(c["python_depth"], c["stack_depth"], c["unwind_bytes"]):
             next(p for p in c["programs"] if p["name"] == "gl_enter") for c in configs}
    check(enter[(64, 0, 0)]["frames"] > enter[(0, 0, 0)]["frames"],
          f"bpf_loop callbacks counted: {enter}")


@test
def verifier_check_refuses_an_oversized_stack():
    """The same source built with 288 more bytes of stack in gl_enter's own frame
    (tests/build.mk): one frame alone stays within clang's 512-byte limit, but with the chain
    of calls down to a bpf_loop or bpf_find_vma callback (Python frames, --unwind dwarf) the
    program needs more than 512. The check fails for gl_enter in exactly those
    configurations, and for nothing else."""
    check(os.path.exists(STACKPAD), f"{STACKPAD} not built (make standins)")
    d = probes_kernel("--verifier", "--bpf-object", STACKPAD, expect_rc=1)
    with_callbacks = [c for c in d["verifier"] if c["python_depth"] or c["unwind_bytes"]]
    eq(d["failed"], len(with_callbacks), "gl_enter fails once per configuration with callbacks")
    eq(len(with_callbacks), 7, "configurations with callbacks")
    for c in d["verifier"]:
        for p in c["programs"]:
            if p["name"] == "gl_enter" and c in with_callbacks:
                check(not p["ok"] and p["stack"] > 512, f"gl_enter too big in {c}: {p}")
            else:
                check(p["ok"], f"{p['name']} within the limit in {c}: {p}")


@test
def verifier_check_refuses_an_object_laid_out_otherwise():
    """--bpf-object stands in for the built-in object only where the settings the built-in
    skeleton writes land where they belong: the same source with one more read-only variable
    first (tests/build.mk) is refused in one line naming the variable, before any load, as
    is a file that is no BPF object."""
    layout = os.path.join(harness.OUT, "tests", "layout.bpf.o")
    check(os.path.exists(layout), f"{layout} not built (make standins)")
    for path, why in ((layout, ".rodata's specs is not where the built-in object has it "
                               "(offset 0): another layout of the source"),
                      ("/etc/passwd", "not a BPF object libbpf opens: BPF object format "
                                      "invalid")):
        p = run_plain([harness.GPULEAK, "probes", "--kernel", "--verifier", "--bpf-object",
                       path])
        eq(p.returncode, 1, f"refused ({p.stderr})")
        eq(p.stderr, f"gpuleak: {path}: {why}\n", "one line, and why")
        eq(p.stdout, "", "nothing loaded or printed")


@test(root=False)
def probes_kernel_usage_errors():
    for args in (["--kernel", "--lib", "/bin/true"], ["--verifier"],
                 ["--kernel=yaml"], ["--kernel", "--bpf-object", "/x"]):
        p = run_plain([harness.GPULEAK, "probes", *args])
        eq(p.returncode, 2, f"probes {args}: {p.stderr}")
        eq(len(p.stderr.strip().splitlines()) >= 1, True, f"a message: {p.stderr}")


@test
def classic_uprobe_links_give_the_same_verdict():
    """--uprobe-links classic: one uprobe link per probe with its API id as the link's cookie,
    what kernels before 6.6 get; the verdict is the uprobe_multi one's, exactly."""
    v = run_gpuleak(["run", "--uprobe-links", "classic", "--", scenario("leak3")],
                    timeout=180).verdict()
    eq(v["live_bytes"], 3 * MiB, "live bytes")
    eq(v["live_count"], 3, "live count")
    eq(leak_sites(v), {("cudaMalloc", "leak_one_mib"): (3 * MiB, 3)}, "leak sites")
    eq((v["allocs"], v["frees"], v["failed_calls"], v["unknown_frees"], v["dropped_events"]),
       (8, 5, 0, 0, 0), "allocs, frees, failed, unknown frees, dropped")
    # Runtime over driver: the driver's layer is folded into the runtime's allocation.
    r = run_gpuleak(["run", "--uprobe-links", "classic", "--step", "sym:loop:decode_step",
                     "--", scenario("loop"), "6", str(MiB)], timeout=180)
    v = r.verdict()
    eq(leak_sites(v), {("cudaMalloc", "leaky_sampler"): (6 * MiB, 6)}, "loop's leak")
    eq((v["live_bytes"], v["live_count"]), (70 * MiB, 7), "live: the KV cache and the leak")
    check("uprobe_multi" not in r.err, f"classic links were asked for: no warning: {r.err}")
