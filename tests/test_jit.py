# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""JIT frames named from perf maps: Node on dawn.node (npm webgpu) running the wgpu_node_jit
scenario with V8's perf map on (--perf-basic-prof --interpreted-frames-native-stack), and
without it (the hint); live, from a capture once the map is gone, and in a container with its
own pid namespace and /tmp, and with its records read only after it exited; with --unwind
dwarf, the JavaScript that creates the GPU buffers through dawn.node; the perf map parser
under libFuzzer. Expected numbers are in
tests/scenarios/wgpu_node_jit.mjs."""
import contextlib
import os
import re
import shutil
import signal
import tempfile

import harness
from harness import (Fail, Proc, check, check_sanitizers, eq, env_for_targets, gpuleak_env,
                     read_ndjson, test, tmpfile)
from test_capture import report, same_verdict

KiB = 1 << 10
DEPS = os.path.join(os.environ.get("GPULEAK_DEPS", "/var/cache/gpuleak"), "npm")
WEBGPU_NODE = os.path.join(DEPS, "webgpu@0.6.2", "node_modules", "webgpu")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios",
                      "wgpu_node_jit.mjs")
V8_FLAGS = ["--perf-basic-prof", "--interpreted-frames-native-stack"]
STEPS = 8
HOST_COPY = 262144          # a Float32Array of 65536, one calloc each
LOGITS = 64 * KiB           # the GPU buffer of each step
HINT = "start node with --perf-basic-prof --interpreted-frames-native-stack"


def defined_at(fn):
    """Line and column where V8 places function fn of the scenario: its parameter list."""
    with open(SCRIPT) as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"function %s\(" % fn, line)
            if m:
                return n, m.end()
    raise Fail(f"no function {fn} in {SCRIPT}")


def need_node():
    if not shutil.which("node") or not os.path.exists(os.path.join(WEBGPU_NODE, "index.js")):
        raise Fail("node or npm webgpu@0.6.2 missing: run scripts/install-deps.sh as root")


@contextlib.contextmanager
def in_dir(path):
    """Processes started here get path as their working directory (V8's --perf-basic-prof
    writes an isolate log there)."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


class NodeRun:
    """wgpu_node_jit under node with the sync handshake, gpuleak (argv, then -p PID) attached
    once it is ready, detached with SIGINT after "done" while node still holds everything."""

    def __init__(self, node_args, gl_args, wrap=(), steps=STEPS, script=SCRIPT):
        need_node()
        self.dir = tempfile.mkdtemp(prefix="gpuleak-jit-")
        self.json_path = os.path.join(self.dir, "live.ndjson")
        env = env_for_targets({"SCENARIO_SYNC": "1",
                               "WEBGPU_INDEX": os.path.join(WEBGPU_NODE, "index.js")})
        self.gl = None
        with in_dir(self.dir):
            self.target = Proc(list(wrap) + ["node"] + node_args + [script, str(steps)],
                               env=env)
        try:
            m = self.target.wait_line(r"^ready (\d+)", timeout=60)
            self.ns_pid = int(m.group(1))
            self.pid = self.target.pid
            if wrap:  # unshare --fork: node is the child of the process we started
                with open(f"/proc/{self.target.pid}/task/{self.target.pid}/children") as f:
                    self.pid = int(f.read().split()[0])
            self.gl = Proc([harness.GPULEAK] + gl_args +
                           ["--json", self.json_path, "--interval", "0", "-p", str(self.pid)],
                           env=gpuleak_env(), stdin=False)
            self.gl.wait_line(r"tracing pid %d" % self.pid, stream="err", timeout=60)
            self.target.send()
            self.target.wait_line(r"^done", timeout=120)
            # Still running, everything kept: what gpuleak saw is what the loop made.
            self.gl.p.send_signal(signal.SIGINT)
            self.rc = self.gl.finish()
            self.err = self.gl.text("err")
            self.out = self.gl.text("out")
            check_sanitizers(self.err)
            eq(self.rc, 0, f"gpuleak exit code ({self.err})")
            self.perf_map = self.read_perf_map()
            self.target.send()
            self.target.finish()
        except BaseException:
            self.cleanup()
            raise
        vs = [r for r in read_ndjson(self.json_path) if r.get("type") == "verdict"]
        eq(len(vs), 1, "one verdict")
        self.v = vs[0]

    def read_perf_map(self):
        path = f"/proc/{self.pid}/root/tmp/perf-{self.ns_pid}.map"
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def cleanup(self):
        self.target.kill()
        if self.gl:
            self.gl.kill(signal.SIGTERM)
        shutil.rmtree(self.dir, ignore_errors=True)
        # V8 leaves its map behind; ours only (the host's /tmp, not a container's).
        if self.ns_pid == self.target.pid:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"/tmp/perf-{self.ns_pid}.map")


def frames(stack, key="function"):
    return [f[key] for f in stack["frames"]]


def entries(v, api):
    return [e for e in v["leaks"] if e["api"] == api]


def js_stacks(v, api, fn):
    """(bytes, count) of the api's live stacks that pass through JavaScript function fn."""
    got = [s for e in entries(v, api) for s in e["stacks"] if fn in frames(s)]
    return got, (sum(s["bytes"] for s in got), sum(s["count"] for s in got))


def webgpu_expected(v, named=True):
    """The logits buffers, with the defaults (--unwind auto): dawn.node keeps no frame
    pointers (its code uses %rbp as a general register, the kernel's walk ends there on a
    made-up frame), so their stacks are copied and unwound through it, into V8. With V8's
    perf map (named) the site is makeLogits, the program's innermost JavaScript frame: not
    the webgpu package's createBuffer wrapper (under node_modules), nor the binding; the
    module body above it resumed from a promise reaction (after an await): a callback."""
    eq([(e["label"], e["bytes"], e["count"]) for e in entries(v, "wgpuDeviceCreateBuffer")],
       [("logits", STEPS * LOGITS, STEPS)], "GPU buffers")
    line, col = defined_at("makeLogits")
    where = f"wgpu_node_jit.mjs:{line}:{col}"
    for e in entries(v, "wgpuDeviceCreateBuffer"):
        if named:
            eq((e["site"], e["module"]), (f"makeLogits ({where})", where), "site")
        else:
            check(e["site"].startswith("wgpu::binding::GPUDevice::createBuffer(") and
                  e["module"] == "dawn.node", f"site: {e['site']}")
        for s in e["stacks"]:
            fns = frames(s)
            check(fns[0].startswith("wgpu::binding::GPUDevice::createBuffer("),
                  f"from the binding: {fns}")
            check(any(f["module"] == "node" and f["function"].startswith(
                "v8impl::(anonymous namespace)::FunctionCallbackWrapper::Invoke(")
                for f in s["frames"]), f"unwound through dawn.node into N-API: {fns}")
            if named:
                i = fns.index("makeLogits")
                check(s["frames"][i + 1]["module"] == "wgpu_node_jit.mjs:1:1",
                      f"the module body calls it: {fns[i:]}")
                eq(s.get("called_from_callback"), True, "the module body runs in a callback")
            else:
                check("makeLogits" not in fns, f"no JavaScript named without a map: {fns}")


def named_js(v, perf_map, script=SCRIPT):
    """makeLogits and the module body named as V8 wrote them, with the exact host copies."""
    line, col = defined_at("makeLogits")
    where = f"wgpu_node_jit.mjs:{line}:{col}"
    # what V8 wrote: the tier marker, the function, the script's URL, line and column
    written = re.findall(r"^[0-9a-f]+ [0-9a-f]+ JS:[~^+*]?makeLogits (\S+)$", perf_map or "",
                         re.M)
    check(written and set(written) == {f"file://{script}:{line}:{col}"},
          f"V8's perf map names makeLogits at {script}:{line}:{col}: {set(written)}")
    got, total = js_stacks(v, "calloc", "makeLogits")
    eq(total, (STEPS * HOST_COPY, STEPS), "host copies allocated under makeLogits")
    for s in got:
        i = frames(s).index("makeLogits")
        f = s["frames"][i]
        eq(f["module"], where, "makeLogits's location")
        eq(f["name"], f"makeLogits ({where})", "frame name: the function, no offset")
        body = [x for x in s["frames"][i + 1:] if x["module"] == "wgpu_node_jit.mjs:1:1"]
        check(body and body[0]["function"] == "(anonymous)",
              f"the module body calls it: {frames(s)[i:]} {frames(s, 'module')[i:]}")
    return where


@test
def jit_node_names_javascript_frames_live_and_offline():
    """Node with V8's perf map: makeLogits, which keeps a host copy of its logits every step,
    is named in the stacks of those copies (function, file:line:col as V8 wrote them; exact
    bytes and count) in the verdict, the graph and --folded, live and from a capture reported
    after the process and its perf map are gone. The GPU buffers it makes are counted exactly,
    with the defaults their site is makeLogits (webgpu_expected), offline too; the text tree
    folds V8's and Node's frames around the JavaScript and says it runs in a callback."""
    cap = tmpfile(".glc")
    folded = tmpfile(".folded")
    run = NodeRun(V8_FLAGS, ["record", "-o", cap, "--libc", "--folded", folded])
    try:
        v = run.v
        webgpu_expected(v)
        where = named_js(v, run.perf_map)
        check(f"makeLogits ({where})" in run.out, f"the graph names it:\n{run.out}")
        check(re.search(r"─ \[native: \d+ frames\]\n.*─ \[called from a callback: the caller's "
                        r"frames are not on this stack\]\n.*─ \(anonymous\) \(wgpu_node_jit"
                        r"\.mjs:1:1\)\n.*─ makeLogits \(%s\)\n" % re.escape(where), run.out),
              f"the tree folds the event loop and says it is a callback:\n{run.out}")
        check("have no names" not in run.err, f"no hint with a perf map: {run.err}")
        with open(folded) as f:
            lines = [l.rsplit(" ", 1) for l in f.read().splitlines()]
        js = [int(n) for path, n in lines
              if re.search(r";(\? )?makeLogits;", path) and path.endswith(";calloc")]
        eq(sum(js), STEPS * HOST_COPY, "--folded: host copies under makeLogits")
        run.cleanup()
        check(not os.path.exists(f"/tmp/perf-{run.pid}.map"), "the perf map is gone")
        rep = report(cap, ["--folded", folded])
        off = rep.verdict()
        same_verdict(v, off)
        webgpu_expected(off)
        named_js(off, run.perf_map)
        check(f"makeLogits ({where})" in rep.out, f"the offline graph names it:\n{rep.out}")
        with open(folded) as f:
            eq(sum(int(n) for path, n in (l.rsplit(" ", 1) for l in f.read().splitlines())
                   if re.search(r";(\? )?makeLogits;", path) and path.endswith(";calloc")),
               STEPS * HOST_COPY, "offline --folded")
        # rules see JavaScript frames: function and location
        ruled = report(cap, ["--rule", f"persistent site=makeLogits lib={where} "
                             f"size>={HOST_COPY}"]).verdict()
        eq(ruled["persistent_bytes"], STEPS * HOST_COPY, "persistent by a rule on makeLogits")
    finally:
        run.cleanup()
        for p in (cap, folded):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)


def unwound_js(v, where):
    """--unwind dwarf: every GPU buffer's stack goes from dawn.node's createBuffer through
    V8 into makeLogits and the module body that called it, no frame marked up to them."""
    got, total = js_stacks(v, "wgpuDeviceCreateBuffer", "makeLogits")
    eq(total, (STEPS * LOGITS, STEPS), "GPU buffers created under makeLogits")
    for s in got:
        fns = frames(s)
        i = fns.index("makeLogits")
        eq(s["frames"][i]["module"], where, "makeLogits's location")
        check(fns[0].startswith("wgpu::binding::GPUDevice::createBuffer(") and
              s["frames"][0]["module"] == "dawn.node", f"from dawn.node: {fns}")
        check(any(f["module"] == "index.js:63:47" for f in s["frames"][1:i]),
              f"through the package's createBuffer: {fns[:i + 1]}")
        check(s["frames"][i + 1]["module"] == "wgpu_node_jit.mjs:1:1",
              f"the module body calls it: {fns[i:]}")
        nofp = s["without_frame_pointers"]
        check(nofp is None or nofp["from_frame"] > i + 1,
              f"no frame up to makeLogits's caller marked: {nofp} {fns}")


@test
def jit_node_unwind_dwarf_names_javascript_that_creates_buffers():
    """--unwind dwarf: the stacks of the GPU buffers (8 x 64 KiB "logits", exact) are
    unwound through dawn.node, which keeps no frame pointers, with its .eh_frame, then
    through V8's frames by their frame pointers, to makeLogits (named from the perf map) and
    the module body; in the graph, and from the capture with the process and map gone."""
    cap = tmpfile(".glc")
    run = NodeRun(V8_FLAGS, ["record", "-o", cap, "-v", "--unwind", "dwarf"])
    try:
        v = run.v
        eq([(e["label"], e["bytes"], e["count"]) for e in entries(v, "wgpuDeviceCreateBuffer")],
           [("logits", STEPS * LOGITS, STEPS)], "GPU buffers")
        line, col = defined_at("makeLogits")
        where = f"wgpu_node_jit.mjs:{line}:{col}"
        unwound_js(v, where)
        check(f"makeLogits ({where})" in run.out, f"the graph names it:\n{run.out}")
        m = re.search(r"--unwind dwarf: (\d+) stack copies", run.err)
        check(m and int(m.group(1)) >= STEPS, f"copies: {run.err}")
        run.cleanup()
        rep = report(cap)
        off = rep.verdict()
        same_verdict(v, off)
        unwound_js(off, where)
    finally:
        run.cleanup()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(cap)


@test
def jit_node_without_perf_map_says_which_flags():
    """Node without V8's perf map: the same memory, JavaScript unnamed (its frames in V8's
    shared interpreter entry, its compiled code as addresses), and one hint naming the flags."""
    run = NodeRun([], ["attach", "--libc"])
    try:
        v = run.v
        webgpu_expected(v, named=False)
        eq(run.perf_map, None, "no perf map")
        check(not any(f["module"] and f["module"].startswith("wgpu_node_jit.mjs")
                      for e in v["leaks"] for s in e["stacks"] for f in s["frames"]),
              "no JavaScript frame named")
        # the host copies, by the typed array constructor on their path
        _, total = js_stacks(v, "calloc", "Builtins_CreateTypedArray")
        eq(total, (STEPS * HOST_COPY, STEPS), "host copies")
        hints = re.findall(r"^gpuleak: warning: pid (\d+): (.*) have no names without "
                           r"/tmp/perf-(\d+)\.map: (.*)$", run.err, re.M)
        eq([(int(p), int(n), how) for p, _, n, how in hints], [(run.pid, run.pid, HINT)],
           f"one hint: {run.err}")
    finally:
        run.cleanup()


@test
def jit_node_in_a_container_reads_its_own_perf_map():
    """Node as pid 1 of its own pid namespace, with a /tmp of its own (a tmpfs in its mount
    namespace): its perf-1.map is read there, through /proc/PID/root, and names makeLogits."""
    if not shutil.which("unshare"):
        return "skip"
    if os.path.exists("/tmp/perf-1.map"):
        return "skip"
    need_node()
    wrap = ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
            'mount -t tmpfs tmpfs /tmp && exec "$@"', "sh"]
    # The tmpfs hides the host's /tmp from node: a checkout under /tmp gives it the scenario
    # from a copy outside it (the same file, so the same lines and columns).
    script, copy = SCRIPT, None
    if os.path.realpath(SCRIPT).startswith("/tmp/"):
        copy = tempfile.mkdtemp(prefix="gpuleak-jit-", dir="/var/tmp")
        script = shutil.copy(SCRIPT, copy)
    try:
        run = NodeRun(V8_FLAGS, ["attach", "--libc"], wrap=wrap, script=script)
    finally:
        if copy:
            shutil.rmtree(copy, ignore_errors=True)
    try:
        eq(run.ns_pid, 1, "node's pid in its namespace")
        check(run.pid != 1 and run.v["ns_pid"] == 1, f"host pid {run.pid}, ns pid 1")
        check(not os.path.exists("/tmp/perf-1.map"), "the map is not in the host's /tmp")
        webgpu_expected(run.v)
        named_js(run.v, run.perf_map, script)
    finally:
        run.cleanup()


@test
def fuzz_perfmap_parser_short():
    """5,000 inputs of libFuzzer on the perf map reader over its committed seeds and corpus:
    no crash, the same entries fed at once, in chunks and from a growing file, bounds kept
    (`make fuzz-perfmap` runs it for long)."""
    harness.run_fuzzer("perfmap", 5000)



@test
def jit_node_growth_stacks_name_javascript():
    """Who grows, in JavaScript: with queue submits as steps, the growth entry of the host
    copies makeLogits keeps every step carries their stack through makeLogits (named as V8
    wrote it), with their exact bytes, in the verdict and in the text report's path. The first
    copy, made before the first submit, is init's."""
    steps = 24
    run = NodeRun(V8_FLAGS, ["attach", "--libc", "--step", "sync"], steps=steps)
    try:
        v = run.v
        line, col = defined_at("makeLogits")
        where = f"wgpu_node_jit.mjs:{line}:{col}"
        got = [(s["bytes"], s["count"], s["frames"][frames(s).index("makeLogits")]["module"])
               for g in v["growth"] if g["api"] == "calloc" for s in g["stacks"]
               if "makeLogits" in frames(s)]
        # one stack per tier V8 ran makeLogits in (interpreted, then compiled)
        eq((sum(b for b, _, _ in got), sum(n for _, n, _ in got), {m for _, _, m in got}),
           ((steps - 1) * HOST_COPY, steps - 1, {where}),
           "the growing host copies, by their JavaScript caller")
        eq([(r["retained_by"], s["bytes"], s["count"]) for r in v["retained"]
            if r["api"] == "calloc" for s in r["stacks"] if "makeLogits" in frames(s)],
           [("init", HOST_COPY, 1)], "the first copy, made before the first submit")
        m = re.search(r"^ .* \(calloc\)\n((?: +from .*\n)+)", run.out, re.M)
        check(m and re.search(r"makeLogits\S* \(%s\)" % re.escape(where), m.group(1)),
              f"the growing calloc's paths name makeLogits:\n{run.out}")
    finally:
        run.cleanup()


@test
def jit_node_site_skip_on_javascript_paths():
    """--site-skip on a script's path, as on a Python file's: with the program's own script
    skipped, the GPU buffers' site is the innermost JavaScript frame left, the webgpu
    package's createBuffer (a package's frame is a site only when nothing of the program's
    is); the stacks are the same."""
    run = NodeRun(V8_FLAGS, ["attach", "--site-skip", "*/wgpu_node_jit.mjs"])
    try:
        v = run.v
        got = [(e["site"], e["module"], e["bytes"], e["count"])
               for e in entries(v, "wgpuDeviceCreateBuffer")]
        eq(len(got), 1, f"one site: {got}")
        eq(got, [("GPUDevice.createBuffer (index.js:63:47)", "index.js:63:47", STEPS * LOGITS,
                  STEPS)], "the package's frame names the site")
    finally:
        run.cleanup()


@test
def jit_node_named_after_it_exited():
    """Node's records read only once it has exited (gpuleak stopped with SIGSTOP from before
    the loop until node is gone, the records waiting in the ring buffer): its root, held from
    when its mappings were read, still leads to its perf map, and makeLogits names the site."""
    need_node()
    tmp = tempfile.mkdtemp(prefix="gpuleak-jit-")
    json_path = os.path.join(tmp, "live.ndjson")
    env = env_for_targets({"SCENARIO_SYNC": "1",
                           "WEBGPU_INDEX": os.path.join(WEBGPU_NODE, "index.js")})
    gl = None
    with in_dir(tmp):
        target = Proc(["node"] + V8_FLAGS + [SCRIPT, str(STEPS)], env=env)
    try:
        target.wait_line(r"^ready (\d+)", timeout=60)
        gl = Proc([harness.GPULEAK, "attach", "--json", json_path, "--interval", "0", "-p",
                   str(target.pid)], env=gpuleak_env(), stdin=False)
        gl.wait_line(r"tracing pid %d" % target.pid, stream="err", timeout=60)
        gl.p.send_signal(signal.SIGSTOP)
        try:
            target.send()
            target.wait_line(r"^done", timeout=120)
            target.send()
            eq(target.finish(), 0, "node's exit status")
            check(not os.path.exists(f"/proc/{target.pid}"), "node is gone")
        finally:
            gl.p.send_signal(signal.SIGCONT)
        eq(gl.finish(), 0, f"gpuleak's exit status ({gl.text('err')})")
        check_sanitizers(gl.text("err"))
        vs = [r for r in read_ndjson(json_path) if r.get("type") == "verdict"]
        eq(len(vs), 1, "one verdict")
        webgpu_expected(vs[0])
    finally:
        target.kill()
        if gl:
            gl.p.send_signal(signal.SIGCONT)
            gl.kill(signal.SIGTERM)
        shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"/tmp/perf-{target.pid}.map")
