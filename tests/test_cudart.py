# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""CUDA runtime tracing end to end: stand-in runtime (success paths) and the real
libcudart.so.13 and a static-cudart executable (error paths, no GPU here)."""
import os

import harness
from harness import (Attached, Proc, check, eq, leak_sites, run_gpuleak, run_plain, scenario,
                     test, env_for_targets)

MiB = 1 << 20
REAL_CUDART = "/usr/local/cuda/lib64/libcudart.so.13"


@test
def leak3_reports_three_mib_at_one_function():
    v = run_gpuleak(["run", "--", scenario("leak3")]).verdict()
    eq(v["live_bytes"], 3 * MiB, "live bytes")
    eq(v["live_count"], 3, "live count")
    eq(leak_sites(v), {("cudaMalloc", "leak_one_mib"): (3 * MiB, 3)}, "leak sites")
    eq(len(v["leaks"]), 1, "one site")
    check(v["leaks"][0]["site"].endswith("(leak3)"), f"site names the object: {v['leaks']}")
    eq(v["allocs"], 8, "allocations (3 leaked + 5 transient)")
    eq(v["frees"], 5, "frees")
    eq(v["failed_calls"], 0, "failed calls")
    eq(v["unknown_frees"], 0, "unknown frees")
    eq(v["dropped_events"], 0, "dropped events")
    eq(v["state"], "exited", "state")
    eq(v["exit_status"], 0, "exit status")


@test
def basic_n_allocs_m_freed():
    n, m, size = 10, 7, 1 << 20
    v = run_gpuleak(["run", "--", scenario("basic"), str(n), str(m), str(size)]).verdict()
    eq(v["live_bytes"], (n - m) * size, "live bytes")
    eq(v["live_count"], n - m, "live count")
    eq(v["allocs"], n, "allocs")
    eq(v["frees"], m, "frees")
    eq(leak_sites(v), {("cudaMalloc", "alloc_buffers"): ((n - m) * size, n - m)}, "sites")


@test
def every_runtime_allocation_api():
    v = run_gpuleak(["run", "--", scenario("apis")]).verdict()
    sites = {(l["api"], l["site"].split("+")[0], l["device"]): (l["bytes"], l["count"])
             for l in v["leaks"]}
    expected = {
        ("cudaMalloc", "alloc_malloc", 0): (1000, 1),
        ("cudaMallocManaged", "alloc_managed", 0): (2000, 1),
        ("cudaHostAlloc", "alloc_host_alloc", -1): (4000, 1),
        ("cudaMallocPitch", "alloc_pitch", 0): (10240, 1),
        ("cudaMallocFromPoolAsync", "alloc_from_pool", 0): (6000, 1),
        ("cudaMalloc", "alloc_on_device1", 1): (8000, 1),
    }
    eq(sites, expected, "live allocations by (api, site, device)")
    eq(v["live_bytes"], sum(b for b, _ in expected.values()), "live bytes")
    eq(v["pending_bytes"], 0, "pending bytes (all async frees synchronized)")
    eq(v["frees"], 3, "frees (host, async, async_ptsz)")
    eq(v["allocs"], 9, "allocs")
    eq(v["unknown_frees"], 0, "unknown frees")
    eq(v["double_frees"], 0, "double frees")


@test
def device_reset_releases_all_but_pool_memory():
    """cudaDeviceReset (the runtime resets the primary context with the driver underneath):
    the cudaMalloc before it is released by its owner, the cudaMallocAsync block stays
    (cuda_runtime_api.h: the reset "will not destroy" it), what comes after is live."""
    v = run_gpuleak(["run", "--interval", "0", "--", scenario("reset")]).verdict()
    eq(leak_sites(v), {("cudaMalloc", "after_reset"): (4 * MiB, 1),
                       ("cudaMallocAsync", "pool_before_reset"): (2 * MiB, 1)}, "live by site")
    eq((v["live_bytes"], v["live_count"]), (6 * MiB, 2), "live")
    eq((v["allocs"], v["frees"], v["released_by_owner"]), (3, 1, 1),
       "the reset freed one allocation, as its owner")
    eq((v["unknown_frees"], v["failed_calls"]), (0, 0), "nothing unexpected")


@test
def failed_allocation_is_not_memory():
    v = run_gpuleak(["run", "--", scenario("fail")]).verdict()
    eq(v["live_bytes"], 4096, "live bytes: only the successful allocation")
    eq(v["live_count"], 1, "live count")
    fails = {(f["api"], f["error"]): f["count"] for f in v["failures"]}
    eq(fails, {("cudaMalloc", 2): 1, ("cudaSetDevice", 101): 1}, "failures by api and error")
    eq(v["failed_calls"], 2, "failed calls")


@test
def free_of_pointer_allocated_before_attach():
    k = 4
    a = Attached("prealloc", [k])
    try:
        a.wait_attached()
        a.target.send()
        a.target.wait_line("done")
        a.target.send()
        v = a.finish().verdict()
    finally:
        a.cleanup()
    eq(v["unknown_frees"], k, "frees of pointers allocated before attach")
    eq(v["live_bytes"], 2 * 65536, "live bytes")
    eq(v["live_count"], 2, "live count")
    eq(v["frees"], 0, "tracked frees")
    eq(v["state"], "exited", "state")


@test
def alloc_on_one_thread_free_on_another():
    n = 16
    v = run_gpuleak(["run", "--", scenario("threads"), str(n)]).verdict()
    eq(v["allocs"], n, "allocs")
    eq(v["frees"], n - 1, "frees (on the consumer thread)")
    eq(v["unknown_frees"], 0, "unknown frees")
    eq(leak_sites(v), {("cudaMalloc", "producer"): (8192, 1)}, "sites")


@test
def runtime_dlopened_after_attach():
    a = Attached("dlopen")
    try:
        a.target.send()                       # go: the scenario dlopen()s libcudart
        a.target.wait_line("loaded")
        a.wait_attached()                      # gpuleak saw the rendezvous and attached
        a.target.send()                        # now allocate
        a.target.wait_line("done")
        a.target.send()
        v = a.finish().verdict()
    finally:
        a.cleanup()
    eq(leak_sites(v), {("cudaMalloc", "alloc_after_dlopen"): (3 * 16384, 3)}, "sites")
    eq(v["allocs"], 4, "allocs")
    eq(v["frees"], 1, "frees")


@test
def runtime_dlopened_in_run_mode():
    # No handshake: the rendezvous stops the target until the probes are in place.
    v = run_gpuleak(["run", "--", scenario("dlopen")]).verdict()
    eq(leak_sites(v), {("cudaMalloc", "alloc_after_dlopen"): (3 * 16384, 3)}, "sites")
    eq(v["allocs"], 4, "allocs")
    eq(v["frees"], 1, "frees")


@test
def attach_to_running_process():
    a = Attached("basic", [6, 2, 4096])
    try:
        a.wait_attached()
        a.target.send()
        a.target.wait_line("done")
        a.target.send()
        v = a.finish().verdict()
    finally:
        a.cleanup()
    eq(v["live_bytes"], 4 * 4096, "live bytes")
    eq(v["allocs"], 6, "allocs")
    eq(v["frees"], 2, "frees")


@test
def other_processes_are_not_traced():
    """Two instances of one program: only the attached one is seen."""
    other = Proc([scenario("basic"), "5", "0", "4096"],
                 env=env_for_targets({"SCENARIO_SYNC": "1"}))
    a = Attached("basic", [3, 0, 8192])
    try:
        other.wait_line("ready")
        a.wait_attached()
        other.send()
        other.wait_line("done")
        a.target.send()
        a.target.wait_line("done")
        a.target.send()
        other.send()
        v = a.finish().verdict()
        other.finish()
    finally:
        a.cleanup()
        other.kill()
    eq(v["allocs"], 3, "allocs of the attached process only")
    eq(v["live_bytes"], 3 * 8192, "live bytes")


@test
def real_libcudart_error_paths():
    """The real CUDA 13 runtime without a GPU: every call fails with 35."""
    v = run_gpuleak(["run", "--", scenario("realcudart")]).verdict()
    fails = {(f["api"], f["error"]): f["count"] for f in v["failures"]}
    eq(fails, {("cudaMalloc", 35): 3, ("cudaMallocHost", 35): 2}, "failed calls by api")
    eq(v["live_bytes"], 0, "no memory from failed calls")
    eq(v["allocs"], 0, "allocs")


@test
def probes_lists_real_libcudart():
    p = run_plain([harness.GPULEAK, "probes", "--lib", REAL_CUDART])
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    apis = {l.split()[0] for l in p.stdout.splitlines()[1:]}
    for name in ("cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync_ptsz",
                 "cudaMallocPitch", "cudaStreamSynchronize", "cudaSetDevice"):
        check(name in apis, f"{name} listed: {sorted(apis)}")
    # 23 for plain allocation, 34 for IPC, registration, graphs, pools, arrays (test_coverage)
    eq(len(apis), 57, "runtime APIs found in libcudart.so.13")


@test
def static_cudart_executable():
    exe = scenario("static_cudart")
    p = run_plain([harness.GPULEAK, "probes", "--lib", exe])
    eq(p.returncode, 0, f"probes exit code ({p.stderr})")
    rows = [l.split() for l in p.stdout.splitlines()[1:]]
    local = {r[0] for r in rows if r[3] == "local"}
    check("cudaMalloc" in local, f"cudaMalloc found as a LOCAL symbol: {rows}")
    v = run_gpuleak(["run", "--", exe]).verdict()
    fails = {}
    for f in v["failures"]:
        fails[f["api"]] = fails.get(f["api"], 0) + f["count"]
    eq(fails.get("cudaMalloc"), 2, f"failed cudaMalloc calls seen in the executable: {fails}")
    for f in v["failures"]:
        if f["api"] == "cudaMalloc":
            eq(f["module"], "static_cudart", "site module")
    eq(v["live_bytes"], 0, "live bytes")
