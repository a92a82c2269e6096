# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The CUDA calls real stacks make beyond plain allocation (docs/cuda.md): IPC mappings and
shared handles, host registration, stream capture and graph memory, stream-ordered pools and
their reserves, arrays, and the NCCL communicator makers besides ncclCommInitRank; each in its
runtime and driver forms on the stand-ins, live and from a capture, and on the real
libcudart.so.13, libcuda.so.1 and libnccl.so.2 on their error paths."""
import os

import harness
from harness import check, eq, leak_sites, run_gpuleak, run_plain, scenario, test

MiB = 1 << 20
COMM_DEVICE = 4 * MiB + 2 * MiB
COMM_HOST = 65536
REAL_CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
REAL_NCCL = "/usr/local/cuda/lib/libnccl.so.2"
REAL_LIBCUDA = os.environ.get("GPULEAK_LIBCUDA_DIR", "/var/cache/gpuleak/libcuda1") + \
    "/libcuda.so.1"


def verdicts(args, extra=(), env=None, expect_rc=0):
    """The result and the verdicts of a traced run."""
    res = run_gpuleak(["run", "--interval", "0"] + list(extra) + ["--"] + args, env=env,
                      expect_rc=expect_rc)
    return res, res.verdicts()


def one(args, extra=()):
    return verdicts(args, extra)[1][0]


def fn(site):
    return site.split("+")[0]


def entries(v, key):
    """{(api, function, kind): (bytes, count)} of a verdict list (absent: empty)."""
    return {(e["api"], fn(e["site"]), e.get("kind")): (e["bytes"], e["count"])
            for e in v.get(key, [])}


def failures(v):
    return {(f["api"], f["error"]): f["count"] for f in v["failures"]}


def offline(r):
    """The verdicts of `gpuleak report` of capture r, by pid."""
    js = harness.tmpfile(".ndjson")
    p = run_plain([harness.GPULEAK, "report", r.path, "--json", js])
    try:
        eq(p.returncode, 0, f"report exit code ({p.stderr})")
        return {v["pid"]: v for v in harness.read_ndjson(js) if v.get("type") == "verdict"}
    finally:
        if os.path.exists(js):
            os.unlink(js)


def live_and_offline(args, extra=()):
    """[(live, offline)] verdicts of one recorded run, by process, in the live order."""
    from test_capture import record, same_verdict
    r = record(["--interval", "0"] + list(extra) + ["--"] + args)
    try:
        live = [v for v in r.records if v.get("type") == "verdict"]
        off = offline(r)
        for v in live:
            same_verdict(v, off[v["pid"]])
        return live
    finally:
        r.cleanup()


# ---- IPC and shared handles ----

def ipc_pair(vs):
    exporter = [v for v in vs if not v["ppid"]]
    importer = [v for v in vs if v["ppid"]]
    eq((len(exporter), len(importer)), (1, 1), "one exporter and one importer traced")
    return exporter[0], importer[0]


def exporter_expected(v, what):
    eq(v["live_bytes"], 0, f"{what}: the exporter frees its memory")
    eq((v["allocs"], v["frees"]), (1, 1), f"{what}: the exporter's cudaMalloc and cudaFree")
    check("shared" not in v, f"{what}: nothing shared left in the exporter")


@test
def ipc_handle_opened_twice_closed_once_leaks_one_mapping():
    """RL weight sync's leak: the importer opens the exporter's handle twice (CUDA gives the
    same pointer back with one more reference) and closes it once. One mapping is left, of the
    exporter's 4 MiB, none of it the importer's own memory; the exporter is clean. Live and
    from a capture (both processes, --follow)."""
    for vs in (verdicts([scenario("ipc"), "weights"], ["--follow"])[1],
               live_and_offline([scenario("ipc"), "weights"], ["--follow"])):
        exporter, importer = ipc_pair(vs)
        exporter_expected(exporter, "weights")
        eq(entries(importer, "shared"),
           {("cudaIpcOpenMemHandle", "open_weights", "mapping_not_closed"): (4 * MiB, 1)},
           "the mapping left open, with the exporter's size")
        s = importer["shared"][0]
        eq((s["opens"], s["closes"], s["references"], s["exporter_pid"], s["device"],
            s["memory"]), (2, 1, 1, exporter["pid"], 0, "ipc"), "opened 2, closed 1, by whom")
        eq(importer["live_bytes"], 0, "another process's memory is not the importer's")
        eq(importer["leaks"], [], "no memory of its own leaks")
        eq(importer["layers"], 3, "2 cuIpcOpenMemHandle_v2 + 1 cuIpcCloseMemHandle under "
           "the runtime's calls")
        eq(importer["gate"]["violations"],
           [{"kind": "shared", "what": "mapping_not_closed", "api": "cudaIpcOpenMemHandle",
             "site": s["site"], "bytes": 4 * MiB, "count": 1}], "a mapping left open fails "
           "the gate")


@test
def ipc_clean_driver_self_and_imported_handles():
    res, vs = verdicts([scenario("ipc"), "weights"], ["--follow", "--fail-on-leak"],
                       expect_rc=3)
    check("GATE: 1 mapping_not_closed left open at open_weights+" in res.out, res.out)
    check("opened 2 times, closed 1 time: 1 reference left; exported by pid" in res.out,
          f"the text report says how it came to be:\n{res.out}")
    # A rule says a mapping is meant to stay: retained, no gate failure.
    exporter, importer = ipc_pair(verdicts(
        [scenario("ipc"), "weights"],
        ["--follow", "--fail-on-leak", "--rule", "persistent api=cudaIpcOpenMemHandle"])[1])
    check("shared" not in importer, "a persistent mapping is not left open by mistake")
    eq(entries(importer, "retained"),
       {("cudaIpcOpenMemHandle", "open_weights", "mapping_not_closed"): (4 * MiB, 1)},
       "retained by its rule")
    eq((importer["retained"][0]["retained_by"], importer["gate"]["failed"]), ("rule", False),
       "by the rule, and the gate passes")
    exporter, importer = ipc_pair(verdicts([scenario("ipc"), "clean"], ["--follow"])[1])
    exporter_expected(exporter, "clean")
    check("shared" not in importer, "opened twice, closed twice: nothing left")
    eq(importer["layers"], 4, "2 opens and 2 closes one layer down")
    exporter, importer = ipc_pair(verdicts([scenario("ipc"), "driver"], ["--follow"])[1])
    exporter_expected(exporter, "driver")
    eq(entries(importer, "shared"),
       {("cuIpcOpenMemHandle_v2", "drv_open_weights", "mapping_not_closed"): (4 * MiB, 1)},
       "the driver's form")
    s = importer["shared"][0]
    eq((s["opens"], s["closes"], s["exporter_pid"], s["owner"]["kind"]),
       (2, 1, exporter["pid"], "context"), "the driver's open, its context's")
    v = one([scenario("ipc"), "self"], ["--follow"])
    eq(failures(v), {("cudaIpcOpenMemHandle", 201): 1}, "a process opening its own handle")
    eq(v["failures"][0]["error_name"], "cudaErrorDeviceUninitialized", "its error's name")
    check("shared" not in v, "a failed open maps nothing")
    exporter, importer = ipc_pair(verdicts([scenario("ipc"), "vmm"], ["--follow"])[1])
    eq((exporter["live_bytes"], exporter["allocs"], exporter["frees"]), (0, 1, 1),
       "the exporter releases its handle")
    eq(entries(importer, "shared"),
       {("cuMemImportFromShareableHandle", "import_segment", "import_not_released"):
        (2 * MiB, 1)}, "the imported handle never released, its size from its mapping")
    s = importer["shared"][0]
    eq((s["opens"], s["closes"], s["exporter_pid"]), (1, 0, None),
       "a file descriptor names no exporter")
    eq(importer["live_bytes"], 0, "not the importer's own memory")
    eq(importer["address_space"], [], "the importer freed its range")


# ---- host registration ----

@test
def host_registration_until_unregistered():
    for v in (one([scenario("hostreg"), "leak"]),
              live_and_offline([scenario("hostreg"), "leak"])[0]):
        eq(entries(v, "leaks"), {("cudaHostRegister", "register_staging", "live"): (MiB, 1)},
           "the registration never undone")
        l = v["leaks"][0]
        eq((l["device"], l["memory"], l["owner"]), (-1, "registered", None), "host, pinned")
        eq(l["layers"], [{"api": "cuMemHostRegister_v2", "same_memory": True, "count": 1}],
           "the driver's registration underneath, the same memory")
        eq(failures(v), {("cudaHostRegister", 712): 1}, "registering it again fails")
        eq(v["failures"][0]["error_name"], "cudaErrorHostMemoryAlreadyRegistered", "its name")
        eq((v["allocs"], v["frees"], v["live_bytes"]), (2, 1, MiB), "2 made, 1 undone")
        eq(v["unknown_frees"], 0, "cuMemHostUnregister under cudaHostUnregister is a layer")
    v = one([scenario("hostreg"), "clean"])
    eq((v["live_bytes"], v["leaks"], v["allocs"], v["frees"]), (0, [], 1, 1), "clean")
    v = one([scenario("hostreg"), "driver"])
    eq(entries(v, "leaks"),
       {("cuMemHostRegister_v2", "drv_register_staging", "live"): (MiB, 1)}, "driver form")
    eq(v["leaks"][0]["owner"]["kind"], "context", "the driver's registration is its context's")
    eq(failures(v), {("cuMemHostRegister_v2", 712): 1}, "registered twice")


# ---- CUDA graphs ----

def decode_expected(v, api, site, inst_site):
    eq(v["leaks"], [], "graph memory and the logits freed at the end: no leak")
    eq(entries(v, "graph_memory"), {(api, site, "held_by_graph"): (2 * MiB, 1)},
       "the exec holds the node its graph frees itself")
    eq(v["live_bytes"], 2 * MiB, "held by the graph: this process's device memory")
    eq((v["allocs"], v["frees"]), (6, 5), "activations once, logits at each of 5 launches")
    g = v["graphs"]
    eq([(x["state"], x["held_bytes"], x["held_count"], x["nodes"], x["launches"], x["flags"],
         fn(x["site"])) for x in g], [("launched", 2 * MiB, 1, 2, 5, 1, inst_site)],
       "one exec, launched 5 times, AutoFreeOnLaunch")
    eq(v["graph_execs_destroyed"], 0, "none destroyed")
    eq([(p["kind"], p["device"], p["in_use_bytes"], p["reserve_bytes"], p["release_threshold"])
        for p in v["pools"]], [("graph", 0, 2 * MiB, MiB, None)],
       "the graph pool: the exec's 2 MiB in use, the last logits freed into it")
    eq(v["pool_reserve_bytes"], MiB, "the reserve")


@test
def graph_memory_is_its_own_class():
    """A cudaMallocAsync under stream capture allocates nothing: memory exists once the exec
    is launched, the node its graph frees is the exec's (class graph, not a leak), the node it
    does not free is the program's after each launch."""
    for v in (one([scenario("graphs"), "decode"]),
              live_and_offline([scenario("graphs"), "decode"])[0]):
        decode_expected(v, "cudaMallocAsync", "capture_act", "instantiate_decode")
    res, vs = verdicts([scenario("graphs"), "decode"])
    check("held by CUDA graphs (memory nodes of launched execs" in res.out and
          "device 0: CUDA graph memory (CUDA runtime)" in res.out, res.out)
    decode_expected(one([scenario("graphs"), "driver"]), "cuMemAllocAsync", "drv_capture_act",
                    "drv_instantiate")
    v = one([scenario("graphs"), "destroy"])
    eq((v["live_bytes"], v["leaks"], v["allocs"], v["frees"]), (0, [], 6, 6),
       "the exec destroyed: its memory back to the graph pool")
    check("graph_memory" not in v, "nothing held")
    eq((v["graphs"], v["graph_execs_destroyed"]), ([], 1), "one exec destroyed")
    eq([(p["kind"], p["reserve_bytes"], p["reserve_peak_bytes"]) for p in v["pools"]],
       [("graph", 0, 3 * MiB)], "cudaDeviceGraphMemTrim gave the graph pool's 3 MiB back")
    check("pool_reserve_bytes" not in v, "no reserve left")


@test
def graph_nodes_added_by_hand_and_graphs_made_every_step():
    v = one([scenario("graphs"), "nodes"])
    eq(entries(v, "graph_memory"),
       {("cudaGraphAddMemAllocNode", "add_alloc_node", "held_by_graph"): (4 * MiB, 1)},
       "uploaded: the node the graph frees is held")
    eq(entries(v, "leaks"),
       {("cudaGraphAddMemAllocNode", "add_alloc_kept", "live"): (MiB, 1)},
       "launched: the node the graph does not free is the program's, never freed")
    eq([(x["held_bytes"], x["launches"]) for x in v["graphs"]], [(4 * MiB, 1)], "its exec")
    steps = 12
    v = one([scenario("graphs"), "recapture", str(steps)],
            ["--step", "sym:graphs:step_boundary"])
    eq(entries(v, "graph_memory"),
       {("cudaMallocAsync", "capture_step_alloc", "held_by_graph"): (steps * 2 * MiB, steps)},
       "an exec a step, never destroyed")
    eq(len(v["graphs"]), steps, "every exec listed")
    eq([(g["api"], fn(g["site"]), g["bytes"]) for g in v["growth"]],
       [("cudaMallocAsync", "capture_step_alloc", steps * 2 * MiB)],
       "graph memory that grows step over step is a growth leak")
    eq(v["leaks"], [], "held by graphs: not a leak at the end")


# ---- stream-ordered pools ----

def pools_of(v):
    return [(p["kind"], p["device"], p["state"], p["in_use_bytes"], p["reserve_bytes"],
             p["release_threshold"]) for p in v["pools"]]


@test
def pools_keep_what_is_freed_up_to_their_threshold():
    for v in (one([scenario("pools"), "reserve"]),
              live_and_offline([scenario("pools"), "reserve"])[0]):
        eq((v["live_bytes"], v["leaks"], v["allocs"], v["frees"]), (0, [], 5, 5),
           "every allocation freed")
        eq(pools_of(v), [("created", 0, "live", 0, 2 * MiB, (1 << 64) - 1),
                         ("default", 0, "live", 0, 4 * MiB, 4 * MiB)],
           "the pool trimmed to 2 MiB, the default pool kept its threshold's 4 MiB")
        eq(fn(v["pools"][0]["site"]), "make_pool", "where the pool was made")
        eq(v["pool_reserve_bytes"], 6 * MiB, "reserves")
    v = one([scenario("pools"), "driver"])
    eq(pools_of(v), [("created", 0, "live", 0, 2 * MiB, (1 << 64) - 1)], "the driver's form")
    eq((v["allocs"], v["frees"], v["pool_reserve_bytes"]), (4, 4, 2 * MiB), "driver")
    v = one([scenario("pools"), "current"])
    eq(pools_of(v), [("created", 0, "destroyed", 0, 0, (1 << 64) - 1)],
       "cudaDeviceSetMemPool made it the one cudaMallocAsync uses; destroyed, its reserve "
       "went")
    eq((v["allocs"], v["frees"]), (1, 1), "current")


@test
def time_to_oom_counts_pool_reserves():
    steps = 12
    v = one([scenario("pools"), "oom", str(steps)],
            ["--step", "sym:pools:step_boundary", "--device-mem", "1G"])
    pr = v["projection"]
    eq((pr["device"], pr["capacity_bytes"], pr["reserve_bytes"], pr["used_bytes"]),
       (0, 1 << 30, 64 * MiB, steps * MiB + 64 * MiB),
       "used: what is live plus the 64 MiB the pool keeps")
    eq(v["pool_reserve_bytes"], 64 * MiB, "the pool's reserve")
    eq(entries(v, "leaks"), {("cudaMalloc", "leak_step", "live"): ((steps - 1) * MiB, steps - 1)},
       "the leak, less the allocation made before the first step (retained by init)")


# ---- arrays ----

@test
def arrays_bytes_from_format_and_extent():
    for v in (one([scenario("arrays"), "leak"]),
              live_and_offline([scenario("arrays"), "leak"])[0]):
        eq(entries(v, "leaks"),
           {("cudaMallocArray", "texture_2d", "live"): (256 * 128 * 16, 1),
            ("cudaMallocMipmappedArray", "mip_chain", "live"):
            ((128 * 128 + 64 * 64 + 32 * 32 + 16 * 16) * 4, 1)}, "texels x element size")
        eq({l["api"]: l["layers"] for l in v["leaks"]},
           {"cudaMallocArray": [{"api": "cuArray3DCreate_v2", "same_memory": True,
                                 "count": 1}],
            "cudaMallocMipmappedArray": [{"api": "cuMipmappedArrayCreate", "same_memory": True,
                                          "count": 1}]}, "the driver's arrays underneath")
        eq((v["allocs"], v["frees"], v["unknown_frees"]), (3, 1, 0), "the volume freed")
        eq(failures(v), {("cudaMallocArray", 20): 1}, "a 3-channel format refused")
    v = one([scenario("arrays"), "clean"])
    eq((v["live_bytes"], v["allocs"], v["frees"]), (0, 2, 2), "clean")
    v = one([scenario("arrays"), "driver"])
    eq(entries(v, "leaks"),
       {("cuArrayCreate_v2", "drv_texture_2d", "live"): (100 * 50 * 4, 1),
        ("cuMipmappedArrayCreate", "drv_mip_chain", "live"):
        ((64 * 64 + 32 * 32 + 16 * 16) * 4, 1)}, "the driver's formats")
    for l in v["leaks"]:
        eq(l["owner"]["kind"], "context", f"{l['api']}: its context's")


# ---- NCCL communicator makers ----

def comms(v):
    return [(c["api"], fn(c["site"]), c["state"], c["live_bytes"], c["live_count"])
            for c in v["communicators"]]


@test
def nccl_scalable_shrink_and_device_communicators_own_their_memory():
    for v in (one([scenario("nccl_owners"), "scalable"]),
              live_and_offline([scenario("nccl_owners"), "scalable"])[0]):
        eq(comms(v), [("ncclCommInitRankScalable", "scalable_init", "live",
                       COMM_DEVICE + COMM_HOST, 6)], "made by ncclCommInitRankScalable")
        for l in v["leaks"]:
            eq(l["owner"]["handle"], v["communicators"][0]["handle"], f"{l['api']}: its")
    v = one([scenario("nccl_owners"), "shrink"])
    eq(comms(v), [("ncclCommInitRankScalable", "scalable_init", "destroyed", 0, 0),
                  ("ncclCommShrink", "shrink", "live", COMM_DEVICE + COMM_HOST, 6)],
       "the shrunk child owns its memory")
    v = one([scenario("nccl_owners"), "devcomm"])
    eq(comms(v), [("ncclCommInitRankScalable", "scalable_init", "destroyed", 0, 0),
                  ("ncclDevCommCreate", "dev_create", "destroyed", 0, 0),
                  ("ncclDevCommCreate", "dev_create", "live", 64 * 1024 + 4 * MiB, 2)],
       "each device communicator owns its window table and its resource window")
    parent = v["communicators"][0]["handle"]
    eq([c.get("parent") for c in v["communicators"]], [None, parent, parent],
       "made on the first communicator")
    eq(v["live_bytes"], 64 * 1024 + 4 * MiB, "the device communicator never destroyed")


# ---- the real libraries ----

RT_COVERAGE = ("cudaIpcGetMemHandle cudaIpcOpenMemHandle cudaHostRegister "
               "cudaStreamBeginCapture cudaStreamBeginCapture_ptsz cudaStreamEndCapture "
               "cudaStreamEndCapture_ptsz cudaStreamIsCapturing cudaStreamIsCapturing_ptsz "
               "cudaGraphAddMemAllocNode cudaGraphAddMemFreeNode cudaGraphInstantiate "
               "cudaGraphInstantiateWithFlags cudaGraphLaunch cudaGraphLaunch_ptsz "
               "cudaGraphUpload cudaGraphUpload_ptsz cudaGraphExecDestroy cudaGraphDestroy "
               "cudaDeviceGraphMemTrim cudaMemPoolCreate cudaMemPoolDestroy cudaMemPoolTrimTo "
               "cudaMemPoolSetAttribute cudaDeviceSetMemPool cudaDeviceGetMemPool "
               "cudaDeviceGetDefaultMemPool cudaMallocArray cudaMalloc3DArray "
               "cudaMallocMipmappedArray").split()
RT_FREES = "cudaIpcCloseMemHandle cudaHostUnregister cudaFreeArray cudaFreeMipmappedArray".split()
DRV_COVERAGE = ("cuMemHostRegister_v2 cuIpcGetMemHandle cuIpcOpenMemHandle_v2 "
                "cuStreamBeginCapture_v2 cuStreamBeginCapture_v2_ptsz cuStreamEndCapture "
                "cuStreamEndCapture_ptsz cuStreamIsCapturing cuStreamIsCapturing_ptsz "
                "cuGraphAddMemAllocNode cuGraphAddMemFreeNode cuGraphInstantiateWithFlags "
                "cuGraphLaunch cuGraphLaunch_ptsz cuGraphUpload cuGraphUpload_ptsz "
                "cuGraphExecDestroy cuGraphDestroy cuDeviceGraphMemTrim cuMemPoolCreate "
                "cuMemPoolDestroy cuMemPoolTrimTo cuMemPoolSetAttribute cuDeviceSetMemPool "
                "cuDeviceGetMemPool cuDeviceGetDefaultMemPool cuArrayCreate_v2 "
                "cuArray3DCreate_v2 cuMipmappedArrayCreate cuMemExportToShareableHandle "
                "cuMemImportFromShareableHandle cuMulticastCreate cuMulticastBindMem "
                "cuMulticastUnbind").split()
DRV_FREES = ("cuMemHostUnregister cuIpcCloseMemHandle cuArrayDestroy "
             "cuMipmappedArrayDestroy").split()
NCCL_NEW = "ncclCommInitRankScalable ncclCommShrink ncclDevCommCreate ncclDevCommDestroy".split()


@test
def real_runtime_driver_and_nccl_fail_the_new_calls_as_failed_calls():
    """Without a GPU NVIDIA's own libraries fail every new call: each is one failed call with
    its code, never memory; the frees among them are entry-only (unknown or NULL frees)."""
    v = one([scenario("realcudart"), "coverage"])
    eq(failures(v), {(api, 35): 1 for api in RT_COVERAGE}, "libcudart.so.13: 30 calls, 35")
    eq((v["unknown_frees"], v["null_frees"], v["live_bytes"], v["allocs"]), (2, 2, 0, 0),
       "its frees: 2 of pointers never seen, 2 of NULL")
    eq(v["approximate"], False, "nothing lost")
    if os.path.exists(REAL_NCCL):
        v = one([scenario("realnccl"), "coverage"])
        eq(failures(v), {("ncclCommInitRankScalable", 1): 1, ("ncclDevCommCreate", 1): 1},
           "libnccl.so.2: ncclUnhandledCudaError")
        eq((v["live_bytes"], v["communicators"]), (0, []), "no communicator made")
    if not os.path.exists(REAL_LIBCUDA):
        print("  (no real libcuda.so.1: scripts/install-deps.sh could not fetch it)")
        return
    res = run_gpuleak(["run", "--interval", "0", "--", "setpriv", "--reuid=65534",
                       "--regid=65534", "--clear-groups", scenario("realdriver"), "coverage"],
                      env=dict(harness.gpuleak_env(), GPULEAK_REAL_LIBCUDA=REAL_LIBCUDA))
    # setpriv execs the scenario: the program it became has a verdict of its own
    eq([(x["comm"], x["state"]) for x in res.verdicts()],
       [("setpriv", "exec"), ("realdriver", "exited")], "setpriv, then what it exec'd")
    v = res.verdicts()[1]
    eq(failures(v), {(api, 3): 1 for api in DRV_COVERAGE},
       "libcuda.so.1 535: CUDA_ERROR_NOT_INITIALIZED after cuInit's 100 (untraced)")
    eq((v["unknown_frees"], v["null_frees"], v["live_bytes"]), (2, 2, 0), "its frees")
    eq(v["approximate"], False, "nothing lost, nothing unreadable")
    # Its entry is a cmp and a je to an early return of 4: a branch lands after the cmp.
    eq([(s["api"], s["insn"], s["why"]) for s in v["slow_probe_sites"]
        if s["module"].startswith("libcuda.so")],
       [("cuGraphAddMemFreeNode", "cmp", "a branch in the function lands after it")],
       "the one probe left on a single-stepped instruction")


def probe_names(lib):
    p = run_plain([harness.GPULEAK, "probes", "--lib", lib])
    eq(p.returncode, 0, f"probes --lib {lib} ({p.stderr})")
    return [r[0] for r in harness.probe_rows(p.stdout)]


@test(root=False)
def probes_lists_the_new_apis_in_the_real_libraries():
    names = probe_names(REAL_CUDART)
    for n in RT_COVERAGE + RT_FREES:
        check(n in names, f"{n} in libcudart.so.13: {sorted(names)}")
    if os.path.exists(REAL_NCCL):
        names = probe_names(REAL_NCCL)
        for n in NCCL_NEW:
            check(n in names, f"{n} in libnccl.so.2")
    if os.path.exists(REAL_LIBCUDA):
        names = probe_names(REAL_LIBCUDA)
        for n in DRV_COVERAGE + DRV_FREES:
            check(n in names, f"{n} in libcuda.so.1")
