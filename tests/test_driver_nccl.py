# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The allocation graph under the runtime: the CUDA driver, VMM handles, NCCL
communicators and registrations, host memory (--libc); stand-in libraries for success
paths, the real libnccl.so.2 and NVIDIA driver on their error paths."""
import os
import re
import subprocess

import harness
from harness import check, eq, leak_sites, run_gpuleak, run_plain, scenario, test

MiB = 1 << 20
REAL_NCCL = "/usr/local/cuda/lib/libnccl.so.2"
REAL_LIBCUDA = os.environ.get("GPULEAK_LIBCUDA_DIR", "/var/cache/gpuleak/libcuda1") + \
    "/libcuda.so.1"
COMM_DEVICE = 4 * MiB + 2 * MiB        # 4 channel buffers + one VMM handle per communicator
COMM_HOST = 65536                      # the pinned proxy buffer


def verdict(args, env=None):
    return run_gpuleak(["run", "--interval", "0", "--"] + args, env=env).verdict()


def counter(v, *names):
    return {n: v[n] for n in names}


def by_kind(v, key):
    return {(l["api"], l.get("kind")): (l["bytes"], l["count"]) for l in v[key]}


@test
def runtime_over_driver_counts_once():
    v = verdict([scenario("runtime_over_driver")])
    eq(leak_sites(v), {("cudaMalloc", "rt_alloc"): (3 * 2 * MiB, 3)}, "one allocation per cudaMalloc")
    eq(v["allocs"], 4, "allocs (not 8)")
    eq(v["frees"], 1, "frees (not 2)")
    eq(v["unknown_frees"], 0, "the driver's free is the runtime's")
    eq(v["layers"], 5, "4 cuMemAlloc_v2 + 1 cuMemFree_v2 folded into their runtime calls")
    layers = v["leaks"][0]["layers"]
    eq(layers, [{"api": "cuMemAlloc_v2", "same_memory": True, "count": 3}], "layers in JSON")


@test
def driver_api_directly():
    v = verdict([scenario("driver_alloc")])
    sites = {(l["api"], l["site"].split("+")[0], l["device"]): (l["bytes"], l["count"])
             for l in v["leaks"]}
    eq(sites, {("cuMemAlloc_v2", "drv_alloc", 0): (2 * MiB, 2),
               ("cuMemAllocHost_v2", "drv_alloc_host", -1): (65536, 1),
               ("cuMemAllocManaged", "drv_alloc_managed", 0): (131072, 1),
               ("cuMemAllocPitch_v2", "drv_alloc_pitch", 0): (10240, 1)}, "live by site")
    eq(v["pending_bytes"], 524288, "cuMemFreeAsync never synchronized: pending")
    eq([(p["api"], p["bytes"]) for p in v["pending"]], [("cuMemAllocAsync", 524288)], "pending")
    eq(v["allocs"], 9, "allocs")
    eq(v["frees"], 3, "completed frees")
    for l in v["leaks"]:
        eq(l["owner"]["kind"], "context", f"{l['api']} belongs to its context")


VMM_CASES = {
    # mode: (leaks by (api, kind), address ranges left (bytes, count), allocs, frees)
    "clean": ({}, None, 2, 2),
    "leak_handle": ({("cuMemCreate", "handle_not_released"): (2 * MiB, 1)}, None, 1, 0),
    "release_while_mapped": ({("cuMemCreate", "released_while_mapped"): (2 * MiB, 1)},
                             (2 * MiB, 1), 1, 0),
    "release_then_unmap": ({}, None, 1, 1),
    "leak_range": ({}, (8 * MiB, 1), 0, 0),
    "double_map": ({}, None, 1, 1),
    "double_map_live": ({("cuMemCreate", "handle_not_released"): (2 * MiB, 1)}, (4 * MiB, 2), 1, 0),
}


@test
def vmm_every_order_and_leak_kind():
    for mode, (leaks, ranges, allocs, frees) in VMM_CASES.items():
        v = verdict([scenario("vmm"), mode])
        eq(by_kind(v, "leaks"), leaks, f"vmm {mode}: leaks by kind")
        eq(v["live_bytes"], sum(b for b, _ in leaks.values()),
           f"vmm {mode}: bytes count once per physical handle, ranges are not bytes")
        got_ranges = [(a["bytes"], a["count"]) for a in v["address_space"]]
        eq(got_ranges, [ranges] if ranges else [], f"vmm {mode}: reserved ranges never freed")
        eq(v["allocs"], allocs, f"vmm {mode}: allocs")
        eq(v["frees"], frees, f"vmm {mode}: frees")
        eq(v["unknown_frees"], 0, f"vmm {mode}: unknown frees")


def comms(v):
    return [(c["state"], c["live_bytes"], c["live_count"], c["registrations"])
            for c in v["communicators"]]


@test
def nccl_init_and_destroy_leaves_nothing():
    for mode in ("clean", "abort", "config"):
        v = verdict([scenario("nccl_comm"), mode])
        eq(v["live_bytes"], 0, f"{mode}: live")
        eq(comms(v), [("destroyed", 0, 0, 0)], f"{mode}: the communicator")
        eq(v["unknown_frees"], 0, f"{mode}: unknown frees")


@test
def nccl_init_without_destroy_is_the_communicators():
    v = verdict([scenario("nccl_comm"), "leak"])
    eq(v["live_bytes"], COMM_DEVICE + COMM_HOST, "live: the communicator's memory")
    eq(comms(v), [("live", COMM_DEVICE + COMM_HOST, 6, 0)], "per-communicator totals")
    handle = v["communicators"][0]["handle"]
    for l in v["leaks"]:
        eq(l["owner"], {"kind": "communicator", "handle": handle}, f"{l['api']} owner")
    check(v["communicators"][0]["site"].startswith("nccl_init+"), "created at nccl_init")
    eq([(a["bytes"], a["count"]) for a in v["address_space"]], [(2 * MiB, 1)],
       "its reserved range")


@test
def nccl_init_all_split_and_memalloc():
    v = verdict([scenario("nccl_comm"), "all"])
    eq(comms(v), [("destroyed", 0, 0, 0), ("live", COMM_DEVICE + COMM_HOST, 6, 0)],
       "InitAll: one communicator per device, the second left")
    eq({l["device"] for l in v["leaks"] if l["memory"] == "device"}, {1}, "on device 1")
    v = verdict([scenario("nccl_comm"), "split"])
    eq(comms(v), [("destroyed", 0, 0, 0), ("live", COMM_DEVICE + COMM_HOST, 6, 0)],
       "split: the child communicator left")
    check(v["communicators"][1]["site"].startswith("nccl_split+"), "made by ncclCommSplit")
    v = verdict([scenario("nccl_comm"), "memalloc"])
    eq(leak_sites(v), {("ncclMemAlloc", "nccl_mem_alloc"): (3 * MiB, 1)}, "ncclMemAlloc once")
    layers = {l["api"]: (l["bytes"], l["count"]) for l in v["leaks"][0]["layers"]}
    eq(layers, {"cuMemCreate": (4 * MiB, 1), "cuMemAddressReserve": (4 * MiB, 1)},
       "its VMM layers")
    eq(v["unknown_frees"], 0, "ncclMemFree's unmap/release/free found their layers")
    eq(v["double_frees"], 0, "ncclCuMemFree releases the handle it retained: no double free")


@test
def nccl_cumem_free_sequence_is_no_double_free():
    """The stand-in NCCL frees cuMem memory as NCCL 2.28's ncclCuMemFree does:
    cuMemRetainAllocationHandle, cuMemRelease, cuMemGetAddressRange, cuMemUnmap, cuMemRelease,
    cuMemAddressFree. The retain is a reference on the handle: three ncclMemFree, and every
    communicator destroy, are no double frees. Live and from a capture."""
    from test_capture import record, report, same_verdict
    v = verdict([scenario("nccl_comm"), "memfree"])
    eq(counter(v, "allocs", "frees", "live_bytes", "double_frees", "unknown_frees"),
       {"allocs": 3, "frees": 3, "live_bytes": 0, "double_frees": 0, "unknown_frees": 0},
       "3 x ncclMemAlloc, 3 x ncclMemFree")
    eq((v["leaks"], v["address_space"]), ([], []), "no handle, no range left")
    for mode in ("clean", "window", "abort"):
        v = verdict([scenario("nccl_comm"), mode])
        eq((v["live_bytes"], v["double_frees"], v["unknown_frees"]), (0, 0, 0),
           f"{mode}: the communicator's VMM buffer freed as NCCL does")
    r = record(["--", scenario("nccl_comm"), "memfree"])
    try:
        same_verdict(r.verdict(), report(r.path).verdict())
        eq(report(r.path).verdict()["double_frees"], 0, "offline too")
    finally:
        os.unlink(r.path)


@test
def nccl_cumem_host_memory_is_no_device_memory():
    """NCCL_CUMEM_HOST_ENABLE=1: the communicator's proxy buffer comes from cuMemCreate on the
    host (ncclCuMemHostAlloc, CU_MEM_LOCATION_TYPE_HOST_NUMA): pinned host memory, never device
    0's, and not part of device 0's time to OOM."""
    env = dict(harness.gpuleak_env(), NCCL_CUMEM_HOST_ENABLE="1")
    v = verdict([scenario("nccl_comm"), "leak"], env=env)
    mem = {}
    for l in v["leaks"]:
        b, c = mem.get((l["api"], l["memory"], l["device"]), (0, 0))
        mem[(l["api"], l["memory"], l["device"])] = (b + l["bytes"], c + l["count"])
    eq(mem, {("cuMemAlloc_v2", "device", 0): (4 * MiB, 4),
             ("cuMemCreate", "device", 0): (2 * MiB, 1),
             ("cuMemCreate", "pinned", -1): (2 * MiB, 1)},
       "the channels and the P2P buffer on device 0, the proxy buffer on the host")
    eq(comms(v), [("live", COMM_DEVICE + 2 * MiB, 6, 0)], "all of it the communicator's")
    eq([(a["bytes"], a["count"]) for a in v["address_space"]], [(4 * MiB, 2)], "two ranges")
    # growth on device 0, with --device-mem: used is device memory only
    res = run_gpuleak(["run", "--interval", "0", "--step", "sym:nccl_comm:nccl_step",
                       "--device-mem", "64MiB", "--", scenario("nccl_comm"), "hoststeps"],
                      env=env)
    v = res.verdict()
    eq([(g["site"].split("+")[0], g["slope_bytes_per_step"]) for g in v["growth"]],
       [("alloc_buffer", float(MiB))], "the growth")
    pr = v["projection"]
    eq((pr["device"], pr["capacity_bytes"], pr["used_bytes"], round(pr["steps_to_oom"])),
       (0, 64 * MiB, COMM_DEVICE + 10 * MiB, 48),
       "device 0: the communicator's 6 MiB and the 10 MiB grown, not the 2 MiB on the host")
    check(re.search(r"^device 0: 16\.0 MiB of 64\.0 MiB in use; OOM in ~48 steps", res.out,
                    re.M), f"said so:\n{res.out}")


def init_threads_expected(v, what):
    """C0 destroyed, C1 left with all of its memory, made on a libnccl thread, on device 1."""
    eq(comms(v), [("destroyed", 0, 0, 0), ("live", COMM_DEVICE + COMM_HOST, 6, 0)],
       f"{what}: each communicator owns what its thread allocated")
    eq(v["live_bytes"], COMM_DEVICE + COMM_HOST, f"{what}: live")
    handle = v["communicators"][1]["handle"]
    for l in v["leaks"]:
        eq(l["owner"], {"kind": "communicator", "handle": handle}, f"{what}: {l['api']} owner")
    eq({l["device"] for l in v["leaks"] if l["memory"] == "device"}, {1}, f"{what}: device")
    eq(v["unknown_frees"], 0, f"{what}: C0's memory freed by its destroy, found")


@test
def nccl_init_on_helper_threads_belongs_to_the_communicators():
    """As NCCL 2.28 does, the stand-in initialises the communicators of one ncclCommInitAll,
    or of a group (ncclCommInitRank x 2 between ncclGroupStart/End), on one new thread
    each: a scheduler tracepoint sees each thread made inside the call, and what it
    allocates before the call returns is the communicator's of its device."""
    env = harness.gpuleak_env()
    env["GPULEAK_STANDIN_NCCL_INITALL_THREADS"] = "1"
    init_threads_expected(verdict([scenario("nccl_comm"), "all"], env=env), "InitAll, threads")
    init_threads_expected(verdict([scenario("nccl_comm"), "group"]), "group")


@test
def nccl_helper_threads_offline_as_live():
    from test_capture import record, report, same_verdict
    r = record(["--", scenario("nccl_comm"), "group"])
    try:
        live = r.verdict()
        init_threads_expected(live, "group, live")
        same_verdict(live, report(r.path).verdict())
    finally:
        os.unlink(r.path)


@test
def nccl_register_without_deregister():
    v = verdict([scenario("nccl_comm"), "register"])
    regs = [(r["api"], r["bytes"], r["count"]) for r in v["registrations"]]
    eq(regs, [("ncclCommRegister", 4 * MiB, 1)],
       "registered twice (same handle), deregistered once: one left")
    eq(comms(v), [("destroyed", 0, 0, 1)], "the registration is the communicator's")
    eq(v["live_bytes"], 0, "a registration is not memory")
    eq(v["addr_reuse"], 0, "the same handle again is a reference, not reuse")
    v = verdict([scenario("nccl_comm"), "window"])
    eq([(r["api"], r["count"]) for r in v["registrations"]],
       [("ncclCommWindowRegister", 1)], "one window never deregistered")


@test
def real_nccl_error_paths():
    if not os.path.exists(REAL_NCCL):
        return "skip"
    p = run_plain([harness.GPULEAK, "probes", "--lib", REAL_NCCL])
    eq(p.returncode, 0, f"probes exit code ({p.stderr})")
    rows = harness.probe_rows(p.stdout)
    names = [r[0] for r in rows]
    eq(len(names), len(set(r[2] for r in rows)), "one probe per address (ncclX = pncclX)")
    for n in ("ncclMemAlloc", "ncclCommInitRank", "ncclCommDestroy", "ncclCommRegister"):
        check(n in names, f"{n} found")
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("realnccl")])
    v = res.verdict()
    fails = {(f["api"], f["error"]) for f in v["failures"]}
    check(("ncclCommInitRank", 1) in fails and ("ncclMemAlloc", 1) in fails,
          f"failures seen: {fails}")
    eq(v["live_bytes"], 0, "no memory from failed calls")
    eq((v["unknown_frees"], v["double_frees"]), (1, 0),
       "ncclMemFree of a host address: a free of something never allocated, refused by NCCL")
    # The three entries that start with movabs $imm64,%rax carry their probe past it.
    moved = {(s["api"], s["insn"], s["moved_bytes"]) for s in v["moved_probe_sites"]
             if s["module"] == "libnccl.so.2"}
    eq(moved, {("ncclCommRegister", "movabs", 10), ("ncclCommInitRankConfig", "movabs", 10),
               ("ncclCommInitAll", "movabs", 10)}, "probes moved in libnccl.so.2")
    eq([s for s in v["slow_probe_sites"] if s["module"] == "libnccl.so.2"], [],
       "no probe left on a single-stepped instruction in libnccl.so.2")
    check("single-steps" not in res.err, f"nothing left to warn about: {res.err}")


@test
def real_nvidia_driver_error_paths():
    if not os.path.exists(REAL_LIBCUDA):
        print("  (no real libcuda.so.1: scripts/install-deps.sh could not fetch it)")
        return "skip"
    # As root the real driver creates /dev/nvidiactl: the target runs as nobody.
    res = run_gpuleak(["run", "--interval", "0", "--", "setpriv", "--reuid=65534",
                       "--regid=65534", "--clear-groups", scenario("realdriver")],
                      env=dict(harness.gpuleak_env(), GPULEAK_REAL_LIBCUDA=REAL_LIBCUDA))
    # setpriv execs the scenario: the program it became has a verdict of its own, by its name
    eq([(x["comm"], x["state"]) for x in res.verdicts()],
       [("setpriv", "exec"), ("realdriver", "exited")], "setpriv, then what it exec'd")
    v = res.verdicts()[1]
    fails = {(f["api"], f["error"]): f["count"] for f in v["failures"]}
    eq(fails, {("cuMemAlloc_v2", 3): 1, ("cuMemCreate", 3): 1,
               ("cuMemRetainAllocationHandle", 3): 1},
       "the real driver's allocation calls and NCCL's first call of a free, failed, none "
       "counted as memory or as a reference")
    eq(v["live_bytes"], 0, "live")


@test
def host_memory_with_libc():
    res = run_gpuleak(["run", "--libc", "--interval", "0", "--", scenario("hostleak")])
    v = res.verdict()
    sites = leak_sites(v)
    want = {("malloc", "host_leak"): (300000, 3), ("calloc", "host_calloc"): (10000, 1),
            ("posix_memalign", "host_aligned"): (65536, 1),
            # glibc 2.36 exports aligned_alloc and memalign at one address: one probe,
            # named memalign, sees both calls
            ("memalign", "host_aligned2"): (8192 + 4096, 2),
            ("realloc", "host_realloc"): (300000, 1), ("mmap", "host_mmap"): (MiB, 1),
            ("cudaMalloc", "gpu_leak"): (MiB, 1)}
    for key, val in want.items():
        eq(sites.get(key), val, f"{key}")
    check(not any(k[1] == "host_temp" for k in sites), "freed temporaries are gone")
    check(("malloc", "host_realloc") not in sites, "the realloc'd block's old self is gone")
    check("host: C library" in res.out and "│     │  └─ posix_memalign" in res.out,
          f"host memory in the allocation graph, under its call sites:\n{res.out}")
    # glibc's free starts with test %rdi,%rdi, which the kernel single-steps: its probe sits
    # on the je after it, and every free above was still seen with its pointer.
    moved = {(s["api"], s["insn"], s["moved_bytes"]) for s in v["moved_probe_sites"]}
    check(("free", "test", 3) in moved, f"free's probe moved past its test: {moved}")
    v = verdict([scenario("hostleak")])
    check(not any(l["api"] in ("malloc", "mmap") for l in v["leaks"]), "no libc without --libc")
