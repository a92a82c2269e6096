# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Python frames, on real interpreters: Debian's /usr/bin/python3.11 (3.11.2: .dynsym only,
no frame pointers, a static executable) and the machine image's pyenv builds 3.10.13, 3.11.7,
3.12.1 and 3.13.0 (libpython). Each runs tests/scenarios/python/workload.py, which allocates
through the stand-in CUDA runtime with ctypes; every test runs under every interpreter the
machine has and says which it lacks. Sites, bytes, counts and the Python frames of stacks
(function, line, in order) are exact; lines come from the "# line: NAME" markers of the
workload, so editing it moves no expectation."""
import os
import re

from harness import (LIB, ROOT, Proc, check, env_for_targets, eq, gpuleak_env,
                     read_ndjson, run_gpuleak, test, tmpfile, check_sanitizers)
import harness

MiB = 1 << 20
KiB = 1 << 10
PYDIR = os.path.join(ROOT, "tests", "scenarios", "python")
WORKLOAD = os.path.join(PYDIR, "workload.py")
CUDART = os.path.join(LIB, "libcudart.so.13")

# (name, interpreter, (major, minor))
PYTHONS = [
    ("3.11.2 (Debian)", "/usr/bin/python3.11", (3, 11)),
    ("3.10.13", "/root/.pyenv/versions/3.10.13/bin/python3.10", (3, 10)),
    ("3.11.7", "/root/.pyenv/versions/3.11.7/bin/python3.11", (3, 11)),
    ("3.12.1", "/root/.pyenv/versions/3.12.1/bin/python3.12", (3, 12)),
    ("3.13.0", "/root/.pyenv/versions/3.13.0/bin/python3.13", (3, 13)),
]
_said = set()


def interpreters(required=True):
    """The interpreters this machine has; each missing one is said once."""
    got = []
    for name, path, ver in PYTHONS:
        if os.access(path, os.X_OK):
            got.append((name, path, ver))
        elif name not in _said:
            _said.add(name)
            print(f"# Python {name}: {path} not on this machine, not tested")
    check(got or not required,
          "no Python interpreter to test (/usr/bin/python3.11, /root/.pyenv/versions)")
    return got


def lines():
    out = {}
    for path in (WORKLOAD, os.path.join(PYDIR, "site-packages", "torch", "_alloc.py"),
                 os.path.join(PYDIR, "site-packages", "mylib", "pool.py")):
        with open(path) as f:
            for i, text in enumerate(f, 1):
                m = re.search(r"# line: (\w+)", text)
                if m:
                    out[m.group(1)] = i
    return out


L = lines()


def site(fn, line, file="workload.py"):
    return f"{fn} ({file}:{L[line]})"


def qual(ver, qualname):
    """3.10 has no co_qualname: a method is named by its own name."""
    return qualname if ver >= (3, 11) else qualname.rsplit(".", 1)[-1]


def workload(python, *args):
    return ["--", python, WORKLOAD] + [str(a) for a in args]


def env():
    return dict(gpuleak_env(), GPULEAK_CUDART=CUDART)


def run(python, args, gl_args=(), expect_rc=0):
    return run_gpuleak(["run", "--interval", "0", *gl_args, *workload(python, *args)],
                       expect_rc=expect_rc, env=env())


def py_frames(stack):
    """[(function, line)] of a stack's Python frames, innermost first."""
    return [(f["function"], f["line"]) for f in stack["frames"] if f.get("python")]


def entry(v, name, lst="leaks"):
    got = [e for e in v[lst] if e["site"] == name]
    check(len(got) == 1, f"one {lst} entry at {name}: {[e['site'] for e in v[lst]]}")
    return got[0]


def no_python_losses(v):
    eq((v["losses"]["python_lost"], v["losses"]["python_walk_failed"]), (0, 0),
       "Python frames lost or walks failed")


def within(actual, expected, rel, what):
    check(abs(actual - expected) <= rel * expected,
          f"{what}: {actual} not within {rel:.0%} of {expected}")


@test
def python_decode_loop_leak_named_by_its_function():
    """decode 20, a step per cudaDeviceSynchronize: custom_attention_forward keeps 1 MiB per
    step, scratch_buffer frees its 64 KiB; the leak is named by the Python function and
    line, with its Python callers."""
    for name, py, ver in interpreters():
        res = run(py, ["decode", 20], ["--step", "sync"])
        v = res.verdict()
        leak = entry(v, site("custom_attention_forward", "leak"))
        eq((leak["bytes"], leak["count"]), (20 * MiB, 20), f"{name}: leaked")
        eq(leak["module"], "workload.py", f"{name}: the site's file")
        within(leak["slope_bytes_per_step"], MiB, 0.01, f"{name}: slope")
        g = entry(v, site("custom_attention_forward", "leak"), "growth")
        within(g["slope_bytes_per_step"], MiB, 0.01, f"{name}: growth slope")
        eq([e["site"] for e in v["leaks"]], [site("custom_attention_forward", "leak")],
           f"{name}: the one leak (scratch_buffer frees what it takes)")
        eq(v["retained"], [], f"{name}: nothing made before the first step")
        eq(len(leak["stacks"]), 1, f"{name}: one stack")
        st = leak["stacks"][0]
        eq(py_frames(st), [("custom_attention_forward", L["leak"]),
                           (qual(ver, "Decoder.forward"), L["forward"]),
                           ("decode", L["decode"]), ("main", L["main_decode"]),
                           ("<module>", L["module"])], f"{name}: Python callers in order")
        check(not st["frames"][0].get("python") and
              st["frames"][0]["module"].startswith("libffi"),
              f"{name}: the native call site first: {st['frames'][0]}")
        eq(st["truncated"], False, f"{name}: whole")
        no_python_losses(v)
        check(f"{site('custom_attention_forward', 'leak')}" in res.out,
              f"{name}: the text report names it:\n{res.out}")


@test
def python_walk_loaded_when_a_shell_execs_python():
    """A command that is not Python (a shell script) starts without the Python frame walk
    (a third of the verifier's work); when it execs the interpreter the walk is loaded
    while the process is held at the dynamic linker, so its every allocation has its Python
    frames, as when Python is the command, which loads the walk at start."""
    name, py, ver = interpreters()[0]
    script = tmpfile(".sh")
    with open(script, "w") as f:
        f.write(f"#!/bin/sh\nexec {py} \"$@\"\n")
    os.chmod(script, 0o755)
    # Classic uprobe links too: there the entry program has no expected attach type while
    # libbpf gives the USDT program uprobe_multi's, and the kernel tail-calls only between
    # programs of one type (each has its own array).
    for cmd, later, links in (([script, WORKLOAD], True, []), ([py, WORKLOAD], False, []),
                              ([script, WORKLOAD], True, ["--uprobe-links", "classic"])):
        res = run_gpuleak(["run", "-v", "--interval", "0", "--step", "sync", *links, "--", *cmd,
                           "decode", "5"], env=env())
        eq("gpuleak: the Python frame walk loaded in" in res.err, later,
           f"{name} {cmd[0]}: the walk loaded on demand ({later}): {res.err}")
        # the shell's exec: its program until then has a verdict of its own, with nothing
        vs = [v for v in res.verdicts() if v["leaks"]]
        eq(len(vs), 1, f"{name} {cmd[0]}: one verdict with leaks")
        v = vs[0]
        leak = entry(v, site("custom_attention_forward", "leak"))
        eq((leak["bytes"], leak["count"]), (5 * MiB, 5), f"{name} {cmd[0]}: leaked")
        eq([f[0] for f in py_frames(leak["stacks"][0])],
           ["custom_attention_forward", qual(ver, "Decoder.forward"), "decode", "main",
            "<module>"], f"{name} {cmd[0]}: every allocation with its Python frames")
        no_python_losses(v)
    os.unlink(script)


@test
def python_frames_in_the_pictures():
    """--folded, --perfetto and --svg name the Python frames and the site as the report does."""
    name, py, ver = interpreters()[-1]
    paths = {k: tmpfile("." + k) for k in ("folded", "perfetto", "svg")}
    try:
        run(py, ["decode", 10], ["--step", "sync"] +
            [x for k, p in paths.items() for x in (f"--{k}", p)])
        text = {}
        for k, p in paths.items():
            with open(p) as f:
                text[k] = f.read()
    finally:
        for p in paths.values():
            if os.path.exists(p):
                os.unlink(p)
    want = ";".join(["<module> (workload.py:%d)" % L["module"],
                     "main (workload.py:%d)" % L["main_decode"],
                     "decode (workload.py:%d)" % L["decode"],
                     "%s (workload.py:%d)" % (qual(ver, "Decoder.forward"), L["forward"]),
                     site("custom_attention_forward", "leak")])
    check(any(want in line for line in text["folded"].splitlines()),
          f"{name}: the folded stack:\n{text['folded']}")
    check(site("custom_attention_forward", "leak") in text["perfetto"], f"{name}: Perfetto")
    check(site("custom_attention_forward", "leak") in text["svg"], f"{name}: SVG")


@test
def python_thread_allocating_while_main_holds_the_gil():
    """thread 40: a worker thread allocates 40 x 64 KiB at worker_alloc, releasing the GIL
    in each ctypes call, while the main thread spins in Python holding it: the worker's own
    Python frames, not the GIL holder's."""
    for name, py, ver in interpreters():
        v = run(py, ["thread", 40]).verdict()
        leak = entry(v, site("worker_alloc", "worker_alloc"))
        eq((leak["bytes"], leak["count"]), (40 * 64 * KiB, 40), f"{name}: the worker's")
        fr = py_frames(leak["stacks"][0])
        eq(fr[:3], [("worker_alloc", L["worker_alloc"]), ("worker_loop", L["worker_loop"]),
                    (qual(ver, "Thread.run"), fr[2][1])], f"{name}: the worker thread's frames")
        check(all(f[0] != "spin_with_the_gil" for f in fr), f"{name}: none of main's: {fr}")
        check(fr[-1][0] == qual(ver, "Thread._bootstrap"), f"{name}: its outermost: {fr}")
        eq(len(v["leaks"]), 1, f"{name}: nothing else")
        no_python_losses(v)


@test
def python_recursion_past_the_depth_is_marked_truncated():
    """recurse 50: 1 MiB at the bottom of 50 recursive calls. --python-depth 32 keeps the
    innermost 32 frames and marks the stack truncated; --python-depth 64 keeps them all."""
    for name, py, ver in interpreters():
        v = run(py, ["recurse", 50], ["--python-depth", "32"]).verdict()
        st = entry(v, site("recurse", "recurse_bottom"))["stacks"][0]
        eq(py_frames(st), [("recurse", L["recurse_bottom"])] + [("recurse", L["recurse"])] * 31,
           f"{name}: the innermost 32")
        eq(st["truncated"], True, f"{name}: cut, and said")
        no_python_losses(v)
        v = run(py, ["recurse", 50], ["--python-depth", "64"]).verdict()
        st = entry(v, site("recurse", "recurse_bottom"))["stacks"][0]
        eq(py_frames(st), [("recurse", L["recurse_bottom"])] + [("recurse", L["recurse"])] * 50 +
           [("main", L["main_recurse"]), ("<module>", L["module"])], f"{name}: all 53")
        eq(st["truncated"], False, f"{name}: whole")


@test
def python_generator_and_async_frames():
    """gen 5: a generator's frame on top of the loop that drives it; async 4: a coroutine
    awaited by another under asyncio.run, the event loop's frames between them and main."""
    for name, py, ver in interpreters():
        v = run(py, ["gen", 5]).verdict()
        leak = entry(v, site("gen_buffers", "gen_buffers"))
        eq((leak["bytes"], leak["count"]), (5 * 256 * KiB, 5), f"{name}: generator")
        eq(py_frames(leak["stacks"][0])[:4], [("gen_buffers", L["gen_buffers"]),
                                             ("consume", L["consume"]), ("main", L["main_gen"]),
                                             ("<module>", L["module"])], f"{name}: generator")
        v = run(py, ["async", 4]).verdict()
        leak = entry(v, site("fetch_block", "fetch_block"))
        eq((leak["bytes"], leak["count"]), (4 * 512 * KiB, 4), f"{name}: coroutine")
        fr = py_frames(leak["stacks"][0])
        eq(fr[:2], [("fetch_block", L["fetch_block"]), ("run_requests", L["run_requests"])],
           f"{name}: the coroutines")
        eq(fr[-2:], [("main", L["main_async"]), ("<module>", L["module"])],
           f"{name}: under asyncio.run: {fr}")
        no_python_losses(v)


@test
def python_fork_followed_with_its_frames():
    """fork 6 --follow: the parent keeps 1 MiB at parent_alloc, its child (configured by BPF
    at the fork, before user space knows of it) 6 x 128 KiB at child_work, with the frames
    it inherited."""
    for name, py, ver in interpreters():
        res = run(py, ["fork", 6], ["--follow"])
        vs = res.verdicts()
        eq(len(vs), 2, f"{name}: parent and child")
        parent = [v for v in vs if not v.get("ppid")][0]
        child = [v for v in vs if v.get("ppid")][0]
        eq(entry(parent, site("parent_alloc", "parent_alloc"))["bytes"], MiB, f"{name}: parent")
        leak = entry(child, site("child_work", "child_work"))
        eq((leak["bytes"], leak["count"]), (6 * 128 * KiB, 6), f"{name}: child")
        eq(py_frames(leak["stacks"][0]), [("child_work", L["child_work"]),
                                         ("fork_and_wait", L["fork_child"]),
                                         ("main", L["main_fork"]), ("<module>", L["module"])],
           f"{name}: the child's frames")
        no_python_losses(child)


@test
def python_attach_to_a_running_process():
    """attach -p to a decode loop already running: its outer frames (main, decode) started
    before gpuleak did, and are named."""
    for name, py, ver in interpreters():
        jp = tmpfile(".ndjson")
        t = Proc([py, WORKLOAD, "decode", "12"],
                 env=env_for_targets(dict(SCENARIO_SYNC="1", GPULEAK_CUDART=CUDART)))
        gl = None
        try:
            m = t.wait_line(r"ready (\d+)")
            eq(int(m.group(1)), t.pid, "pid")
            gl = Proc([harness.GPULEAK, "attach", "-p", str(t.pid), "--json", jp, "--interval", "0",
                       "--step", "sync"], env=env(), stdin=False)
            gl.wait_line(r"tracing pid %d" % t.pid, stream="err")
            check(re.search(r"pid %d runs Python 3\.%d" % (t.pid, ver[1]), gl.text("err")),
                  f"{name}: said: {gl.text('err')}")
            t.send()
            t.wait_line("done")
            t.send()
            eq(t.finish(), 0, "workload")
            eq(gl.finish(), 0, "gpuleak")
            check_sanitizers(gl.text("err"))
            v = [r for r in read_ndjson(jp) if r["type"] == "verdict"][0]
        finally:
            t.kill()
            if gl:
                gl.kill()
            if os.path.exists(jp):
                os.unlink(jp)
        leak = entry(v, site("custom_attention_forward", "leak"))
        eq(leak["count"] + sum(e["count"] for e in v["retained"]), 12, f"{name}: 12 kept")
        eq(py_frames(leak["stacks"][0])[2:], [("decode", L["decode"]), ("main", L["main_decode"]),
                                             ("<module>", L["module"])],
           f"{name}: frames begun before attach")


@test
def python_rules_match_python_frames():
    """site= names a Python function, or a file and line: the leak is persistent by rule."""
    for name, py, ver in interpreters():
        for rule in ("persistent site=custom_attention_forward",
                     f"persistent site=workload.py:{L['leak']}",
                     f"persistent site=*/workload.py:{L['forward']}"):
            v = run(py, ["decode", 8], ["--step", "sync", "--rule", rule]).verdict()
            eq(v["leaks"], [], f"{name}: {rule}: no leak")
            r = entry(v, site("custom_attention_forward", "leak"), "retained")
            eq((r["bytes"], r.get("rule")), (8 * MiB, rule), f"{name}: {rule}")
        v = run(py, ["decode", 8], ["--step", "sync", "--rule",
                                    f"persistent site=workload.py:{L['scratch']}"]).verdict()
        eq(entry(v, site("custom_attention_forward", "leak"))["bytes"], 8 * MiB,
           f"{name}: a rule on another line holds nothing")


@test
def python_site_skips_framework_frames():
    """framework 4: what PyTorch's own files allocate is sited at the caller that asked
    (build_cache), a library's pool at its own function (mylib's take) until --site-skip
    names its files, live and from a capture."""
    for name, py, ver in interpreters():
        v = run(py, ["framework", 4]).verdict()
        eq(sorted((e["site"], e["bytes"]) for e in v["leaks"]),
           sorted([(site("build_cache", "build_cache"), 4 * MiB),
                   (site("take", "pool_take", "pool.py"), 2 * MiB)]), f"{name}: built in")
        st = entry(v, site("build_cache", "build_cache"))["stacks"][0]
        eq(py_frames(st)[:2], [("empty", L["torch_empty"]), ("build_cache", L["build_cache"])],
           f"{name}: the framework's frame stays in the stack")
        cap = tmpfile(".glc")
        try:
            v = run_gpuleak(["record", "-o", cap, "--interval", "0", "--site-skip",
                             "*/site-packages/mylib/*", *workload(py, "framework", 4)],
                            env=env()).verdict()
            rv = run_gpuleak(["report", cap, "--site-skip", "*/site-packages/mylib/*"]).verdict()
            r0 = run_gpuleak(["report", cap]).verdict()
        finally:
            if os.path.exists(cap):
                os.unlink(cap)
        want = sorted([(site("build_cache", "build_cache"), 4 * MiB),
                       (site("grow_pool", "grow_pool"), 2 * MiB)])
        eq(sorted((e["site"], e["bytes"]) for e in v["leaks"]), want, f"{name}: --site-skip")
        eq(sorted((e["site"], e["bytes"]) for e in rv["leaks"]), want, f"{name}: offline")
        eq(sorted(e["site"] for e in r0["leaks"]),
           sorted([site("build_cache", "build_cache"), site("take", "pool_take", "pool.py")]),
           f"{name}: a report decides its own sites")


@test
def python_tensor_leak_named_by_its_python_function():
    """torch 12: tensors of PyTorch's caching allocator (the stand-in libc10_cuda.so, through
    ctypes) are sited at the user's Python function, past the allocator's library and
    PyTorch's own Python files: kv_append's 1 MiB per step is the leak, load_weights' tensor
    made before the first step is retained; the four buckets exact; the same from a capture,
    and through the profiler hook where libc10_cuda.so has no probes."""
    # 13 blocks live: the weights (4 MiB, a 20 MiB segment that caches the 3 MiB scratch)
    # and 12 x 1 MiB, two to each 2 MiB segment; the workspace's cudaMalloc is outside.
    want = {"allocated_bytes": 16 * MiB, "allocated_count": 13, "reserved_bytes": 32 * MiB,
            "segments": 7, "cached_bytes": 16 * MiB, "outside_bytes": 2 * MiB}
    nosdt = os.path.join(os.path.dirname(LIB), "lib-nosdt", "libc10_cuda.so")
    for name, py, ver in interpreters():
        cap = tmpfile(".glc")
        try:
            v = run_gpuleak(["record", "-o", cap, "--interval", "0", "--step", "sync",
                             *workload(py, "torch", 12)], env=env()).verdict()
            rv = run_gpuleak(["report", cap, "--step", "sync"]).verdict()
        finally:
            if os.path.exists(cap):
                os.unlink(cap)
        hv = run_gpuleak(["run", "--interval", "0", "--step", "sync", *workload(py, "torch", 12)],
                         env=dict(env(), GPULEAK_C10_CUDA=nosdt)).verdict()
        for how, x, api in (("live", v, "pytorch:malloc"), ("offline", rv, "pytorch:malloc"),
                            ("hook", hv, "c10::reportMemoryUsageToProfiler")):
            what = f"{name}, {how}"
            eq(x["pytorch"]["source"], "usdt" if api.startswith("pytorch") else "profiler_hook",
               f"{what}: the blocks' source")
            d = x["pytorch"]["devices"][0]
            eq({k: d[k] for k in want}, want, f"{what}: allocated, reserved, cached, outside")
            eq([(e["api"], e["site"], e["bytes"], e["count"]) for e in x["leaks"]],
               [(api, site("kv_append", "kv_append"), 12 * MiB, 12)], f"{what}: the leak")
            g = entry(x, site("kv_append", "kv_append"), "growth")
            within(g["slope_bytes_per_step"], MiB, 0.01, f"{what}: its slope")
            eq(sorted((r["api"], r["site"], r["bytes"], r["retained_by"]) for r in x["retained"]),
               sorted([(api, site("load_weights", "load_weights"), 4 * MiB, "init"),
                       ("cudaMalloc", site("make_workspace", "workspace"), 2 * MiB, "init")]),
               f"{what}: the weights and the workspace, made before the first step")
            st = entry(x, site("kv_append", "kv_append"))["stacks"][0]
            eq(py_frames(st)[:3], [("block", L["torch_block"]), ("kv_append", L["kv_append"]),
                                   ("torch_steps", L["torch_step"])],
               f"{what}: PyTorch's Python frame stays in the stack, not the site")
            check(st["frames"][0]["module"] == "libc10_cuda.so",
                  f"{what}: the allocator's frame first: {st['frames'][0]}")
            no_python_losses(x)


@test
def python_capture_report_names_frames_offline():
    """record, then report the capture: the same sites, bytes and Python frames, named from
    the records with the process gone, and the same text."""
    for name, py, ver in interpreters():
        cap = tmpfile(".glc")
        try:
            live = run_gpuleak(["record", "-o", cap, "--interval", "0", "--step", "sync",
                                *workload(py, "decode", 10)], env=env())
            rep = run_gpuleak(["report", cap, "--step", "sync"])
        finally:
            if os.path.exists(cap):
                os.unlink(cap)
        lv, rv = live.verdict(), rep.verdict()
        for k in ("leaks", "retained", "growth"):
            eq([(e["site"], e.get("bytes"), [py_frames(s) for s in e.get("stacks", [])])
                for e in rv[k]],
               [(e["site"], e.get("bytes"), [py_frames(s) for s in e.get("stacks", [])])
                for e in lv[k]], f"{name}: {k} offline as live")
        graph = lambda out: out[out.index("allocation graph"):]
        eq(graph(rep.out), graph(live.out), f"{name}: the graph offline")
        check(site("custom_attention_forward", "leak") in rep.out, f"{name}: named offline")


@test
def python_depth_zero_names_call_sites_only():
    """--python-depth 0: no walk, the call site names the site (libffi's), as without Python
    support; and no "runs Python" line."""
    name, py, ver = interpreters()[0]
    res = run(py, ["decode", 6], ["--step", "sync", "--python-depth", "0"])
    v = res.verdict()
    check(all(e["site"].startswith("libffi") for e in v["leaks"] + v["retained"]),
          f"call sites: {[e['site'] for e in v['leaks']]}")
    check("runs Python" not in res.err, "no Python line")
    check(all(not f.get("python") for e in v["leaks"] for s in e["stacks"]
              for f in s["frames"]), "no Python frames")


def attached(cmd, envs, steps=None, gl_args=()):
    """cmd started with the sync handshake, gpuleak attached by pid (the first child's when
    cmd is unshare). steps: (pattern, stream, say) to wait for ("err": gpuleak's stderr) and
    whether to say a line to the target then, from the attach to the target's "done"; by
    default gpuleak's "tracing pid". The verdict, gpuleak's stderr and the host pid."""
    jp = tmpfile(".ndjson")
    t = Proc(cmd, env=env_for_targets(dict(SCENARIO_SYNC="1", GPULEAK_CUDART=CUDART, **envs)))
    gl = None
    try:
        t.wait_line(r"ready (\d+)")
        pid = t.pid
        if cmd[0] == "unshare":
            with open(f"/proc/{t.pid}/task/{t.pid}/children") as f:
                pid = int(f.read().split()[0])
        gl = Proc([harness.GPULEAK, "attach", "-p", str(pid), "--json", jp, "--interval", "0",
                   "--step", "sync", *gl_args], env=env(), stdin=False)
        for pattern, stream, say in steps or [(r"tracing pid %d" % pid, "err", True)]:
            (t if stream == "out" else gl).wait_line(pattern, stream=stream)
            if say:
                t.send()
        t.wait_line("done")
        t.send()
        eq(t.finish(), 0, "target")
        eq(gl.finish(), 0, "gpuleak")
        check_sanitizers(gl.text("err"))
        v = [r for r in read_ndjson(jp) if r["type"] == "verdict"][0]
    finally:
        t.kill()
        if gl:
            gl.kill()
        if os.path.exists(jp):
            os.unlink(jp)
    return v, gl.text("err"), pid


@test
def python_libpython_dlopened_after_attach():
    """An application that dlopen()s libpython after gpuleak attached (tests/scenarios/
    pyembed.c): the rendezvous' rescan finds the interpreter, and what the embedded
    interpreter allocates is named by its Python frames."""
    embed = harness.scenario("pyembed")
    for name, py, ver in interpreters():
        lib = os.path.join(os.path.dirname(os.path.dirname(py)), "lib",
                           f"libpython{ver[0]}.{ver[1]}.so.1.0")
        if not os.path.exists(lib):
            continue  # a static interpreter: nothing to dlopen
        home = os.path.dirname(os.path.dirname(py))
        # attached before any GPU library or interpreter is mapped (--wait); the interpreter
        # once dlopen()ed and found; the stand-in runtime once its script loaded it
        # Attached before any GPU library or interpreter is mapped (--wait). The embedder
        # dlopen()s libpython, its script loads the stand-in runtime and waits (its own
        # "ready"): by then gpuleak has found both.
        v, err, pid = attached([embed, lib, WORKLOAD, "decode", "6"], {"PYTHONHOME": home},
                               [(r"waiting for it to load one", "err", True),
                                (r"^loaded", "out", True), (r"^ready", "out", False),
                                (r"runs Python 3\.%d" % ver[1], "err", False),
                                (r"tracing pid", "err", True)], ["--wait"])
        leak = entry(v, site("custom_attention_forward", "leak"))
        eq(leak["count"] + sum(e["count"] for e in v["retained"]), 6, f"{name}: 6 kept")
        eq(py_frames(leak["stacks"][0])[-1], ("<module>", L["module"]), f"{name}: its script")
        no_python_losses(v)


@test
def python_in_a_container():
    """Debian's interpreter copied to a directory of its own (another inode than the host's)
    and run in its own pid namespace (pid 1 there): attached by its host pid, its Python
    frames are named as anywhere."""
    import shutil
    if not shutil.which("unshare"):
        return "skip"
    name, py, ver = interpreters()[0]
    d = tempfile_dir()
    try:
        copy = os.path.join(d, os.path.basename(py))
        shutil.copy(py, copy)
        v, err, pid = attached(["unshare", "--pid", "--fork", "--mount-proc", copy, WORKLOAD,
                                "decode", "8"], {})
    finally:
        shutil.rmtree(d)
    eq(v["ns_pid"], 1, f"{name}: pid 1 in its namespace")
    leak = entry(v, site("custom_attention_forward", "leak"))
    eq(leak["count"] + sum(e["count"] for e in v["retained"]), 8, f"{name}: 8 kept")
    eq(py_frames(leak["stacks"][0])[2:], [("decode", L["decode"]), ("main", L["main_decode"]),
                                         ("<module>", L["module"])], f"{name}: its frames")
    check(re.search(r"pid %d runs Python" % pid, err), f"{name}: configured: {err}")


def tempfile_dir():
    import tempfile
    return tempfile.mkdtemp(prefix="gpuleak-python-")


# DWARF of each layout field, as gdb evaluates offsetof() in the interpreter's own debug info.
_COMMON = {
    "ts_next": "&((PyThreadState*)0)->next",
    "ts_thread_id": "&((PyThreadState*)0)->thread_id",
    "co_filename": "&((PyCodeObject*)0)->co_filename",
    "co_firstlineno": "&((PyCodeObject*)0)->co_firstlineno",
    "co_linetable": "&((PyCodeObject*)0)->co_linetable",
    "str_state": "&((PyASCIIObject*)0)->state",
    "str_length": "&((PyASCIIObject*)0)->length",
    "str_ascii_data": "sizeof(PyASCIIObject)",
    "str_compact_data": "sizeof(PyCompactUnicodeObject)",
    "bytes_size": "&((PyBytesObject*)0)->ob_base.ob_size",
    "bytes_data": "&((PyBytesObject*)0)->ob_sval",
    "is_next": "&((PyInterpreterState*)0)->next",
    "rt_interp_head": "&((_PyRuntimeState*)0)->interpreters.head",
}
_IFRAME = "((struct _PyInterpreterFrame*)0)"
DWARF = {
    (3, 10): dict(_COMMON, is_threads_head="&((PyInterpreterState*)0)->tstate_head",
                  ts_frame="&((PyThreadState*)0)->frame", fr_back="&((struct _frame*)0)->f_back",
                  fr_code="&((struct _frame*)0)->f_code",
                  fr_instr="&((struct _frame*)0)->f_lasti", co_name="&((PyCodeObject*)0)->co_name"),
    (3, 11): dict(_COMMON, is_threads_head="&((PyInterpreterState*)0)->threads.head",
                  ts_frame="&((PyThreadState*)0)->cframe",
                  cf_current_frame="&((_PyCFrame*)0)->current_frame",
                  ts_chunk="&((PyThreadState*)0)->datastack_chunk",
                  ts_top="&((PyThreadState*)0)->datastack_top",
                  chunk_data="&((_PyStackChunk*)0)->data", fr_back=f"&{_IFRAME}->previous",
                  fr_code=f"&{_IFRAME}->f_code", fr_instr=f"&{_IFRAME}->prev_instr",
                  fr_entry=f"&{_IFRAME}->is_entry", co_name="&((PyCodeObject*)0)->co_qualname",
                  co_code_adaptive="&((PyCodeObject*)0)->co_code_adaptive"),
}
DWARF[(3, 12)] = {k: v for k, v in DWARF[(3, 11)].items() if k != "fr_entry"}
DWARF[(3, 12)]["fr_owner"] = f"&{_IFRAME}->owner"
DWARF[(3, 13)] = {k: v for k, v in DWARF[(3, 12)].items() if k != "cf_current_frame"}
DWARF[(3, 13)].update(ts_frame="&((PyThreadState*)0)->current_frame",
                      fr_code=f"&{_IFRAME}->f_executable", fr_instr=f"&{_IFRAME}->instr_ptr")


def debug_file(name, py):
    """The object with the interpreter's DWARF: pyenv's libpython (built with -g), Debian's
    build-id debug file of /usr/bin/python3.11 (python3.11-dbg); None when not here."""
    if py.startswith("/root/.pyenv/"):
        lib = [f for f in os.listdir(os.path.join(os.path.dirname(os.path.dirname(py)), "lib"))
               if re.match(r"libpython3\.\d+\.so\.1\.0$", f)]
        return os.path.join(os.path.dirname(os.path.dirname(py)), "lib", lib[0]) if lib else None
    out = harness.run_plain(["readelf", "-n", py]).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    path = m and f"/usr/lib/debug/.build-id/{m.group(1)[:2]}/{m.group(1)[2:]}.debug"
    return path if path and os.path.exists(path) else None


@test(root=False)
def python_layouts_match_dwarf():
    """Every offset of the layout table (user/probe/py_abi.c) is the one the compiler used,
    as each interpreter's DWARF says: gdb evaluates offsetof() in its debug info."""
    import shutil
    if not shutil.which("gdb"):
        print("# gdb not on this machine: layouts not checked against DWARF")
        return "skip"
    unit = os.path.join(harness.OUT, "tests", "unit", "test_python")
    checked = 0
    for name, py, ver in interpreters(required=False):
        dbg = debug_file(name, py)
        if not dbg:
            print(f"# Python {name}: no debug info here, its layout is checked by the tests")
            continue
        p = harness.run_plain([unit, "--layout", f"0x03{ver[1]:02x}"])
        eq(p.returncode, 0, f"{name}: the table has it")
        table = {k: int(v) for k, v in (l.split() for l in p.stdout.splitlines())}
        exprs = DWARF[ver]
        args = ["gdb", "-batch", "-nx", dbg]
        for e in exprs.values():
            args += ["-ex", f"print (long){e}"]
        out = harness.run_plain(args, timeout=120).stdout
        got = [int(l.split("=")[1]) for l in out.splitlines() if l.startswith("$")]
        eq(len(got), len(exprs), f"{name}: gdb evaluated every field:\n{out}")
        for (field, _), value in zip(exprs.items(), got):
            eq(table[field], value, f"{name}: {field}")
            checked += 1
    if not checked:
        print("# no interpreter with debug info here: layouts not checked against DWARF")
        return "skip"
