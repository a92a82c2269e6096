# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""How gpuleak conducts itself as root on a shared machine or a CI runner (issue 15): strings of
the target never reach the terminal raw, the exit status says what happened (the target's
failure, a marker that cannot be placed, a usage error), a process it started is never left
stopped, signals end every wait, and each refusal says what is wrong."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import harness
from harness import (ROOT, Fail, Proc, check, eq, env_for_targets, gpuleak_env, leak_sites,
                     run_gpuleak, run_plain, scenario, test, tmpfile)
from test_reliability import proc_state


def gl():
    return harness.GPULEAK


ESC_NAME = "a\x1b]0;PWNED\x07\x1b[2J"       # 15 bytes: all of it is the process's comm
ESC_SHOWN = "a\\x1b]0;PWNED\\x07\\x1b[2J"


class Renamed:
    """A scenario's binary copied under another name, beside a lib/ of the stand-ins (its
    DT_RPATH is $ORIGIN/../lib)."""

    def __init__(self, name, as_name):
        self.dir = tempfile.mkdtemp(prefix="gpuleak-test-")
        os.mkdir(os.path.join(self.dir, "bin"))
        os.symlink(harness.LIB, os.path.join(self.dir, "lib"))
        self.path = os.path.join(self.dir, "bin", as_name)
        shutil.copy(scenario(name), self.path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


def no_raw_controls(text, what):
    bad = [c for c in set(text) if (ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) <= 0x9f]
    eq(sorted(bad), [], f"control characters on {what}")


# ---- terminal escapes -----------------------------------------------------------------------

@test
def target_strings_are_escaped_on_the_terminal():
    """A binary named a ESC ]0;PWNED BEL ESC [2J: its name in the report header, in every
    site (the module the sites are in is the executable), the step lines, the interval
    tables and the diagnostics is escaped as \\xNN; the NDJSON keeps the real bytes."""
    with Renamed("loop", ESC_NAME) as r:
        res = run_gpuleak(["run", "--step", "sym:%s:decode_step" % ESC_NAME, "--interval",
                           "1ms", "--", r.path, "5", "65536"])
    for stream, text in (("stdout", res.out), ("stderr", res.err)):
        no_raw_controls(text, stream)
    v = res.verdict()
    eq(v["comm"], ESC_NAME, "the verdict's comm: the real bytes, JSON-escaped")
    check(re.search(r"^pid %d \(%s\): exited with status 0" % (v["pid"], re.escape(ESC_SHOWN)),
                    res.out, re.M), f"the header names it escaped: {res.out}")
    check("leaky_sampler+0x14 (%s)" % ESC_SHOWN in res.out, f"sites escaped: {res.out}")
    check("step marker on decode_step in %s" % ESC_SHOWN in res.err,
          f"the marker line escaped: {res.err}")
    # A capture made elsewhere carries the same strings: its report's header escapes them.
    cap = tmpfile(".glc")
    with Renamed("loop", ESC_NAME) as r:
        run_gpuleak(["record", "-o", cap, "--force", "--", r.path, "2", "65536"])
    res = run_gpuleak(["report", cap])
    for stream, text in (("stdout", res.out), ("stderr", res.err)):
        no_raw_controls(text, stream)
    check(re.search(r"^  pid \d+ \(%s\) started .*: .*%s 2 65536$" %
                    (re.escape(ESC_SHOWN), re.escape(ESC_SHOWN)), res.out, re.M),
          f"the capture's process line escaped: {res.out}")


# ---- the exit status: the command's failure ------------------------------------------------

@test
def run_exit_status_says_the_command_failed():
    """The command gpuleak runs exits 2 or dies of SIGSEGV: exit status 4, the command's end
    said on stderr, with or without the gate; a leak the gate fails on comes first (3);
    record -- CMD the same; a command that succeeds is 0."""
    loop = scenario("loop")
    for gate in ([], ["--fail-on-leak"]):
        res = run_gpuleak(["run"] + gate + ["--", loop, "1", "1MiB"], expect_rc=4)
        check(f"gpuleak: the command {loop} exited with status 2\n" in res.err,
              f"said: {res.err!r}")
        eq(res.verdict()["exit_status"], 2, "the verdict has it too")
    crash = scenario("crash")
    res = run_gpuleak(["run", "--", crash], expect_rc=4)
    check(f"gpuleak: the command {crash} was killed by SIGSEGV (signal 11)\n" in res.err,
          f"said: {res.err!r}")
    # crash leaves 2 MiB live at its exit: the gate's finding wins over the command's status
    res = run_gpuleak(["run", "--fail-on-leak", "--max-live-at-exit", "0", "--", crash],
                      expect_rc=3)
    check("GATE: " in res.out and "was killed by SIGSEGV" not in res.err,
          f"the gate's 3, not 4: {res.out} {res.err}")
    cap = tmpfile(".glc")
    try:
        p = run_plain([gl(), "record", "-o", cap, "--", loop, "1", "1MiB"])
        eq(p.returncode, 4, f"record -- CMD: {p.stderr}")
    finally:
        if os.path.exists(cap):
            os.unlink(cap)
    run_gpuleak(["run", "--", loop, "1", "65536"], expect_rc=0)


# ---- markers that cannot be placed ----------------------------------------------------------

def never_ran(p, what):
    """gpuleak stopped before the command ran: no report, nothing of the target's."""
    eq(p.stdout, "", f"{what}: no report, and the command printed nothing")


@test
def misspelt_marker_is_a_usage_error_before_the_command_runs():
    """run: a --step, --request or --end marker whose file or function does not exist is exit 2,
    one line naming the option, the file, the symbol and the closest names there are, before
    the command runs (its executable and the libraries it needs are read, not run) — with
    --fail-on-leak on a leaking program this was exit 0. A marker in a library the executable
    needs, named by its soname, is found; one loaded later is waited for with --wait."""
    loop, lib = scenario("loop"), os.path.join(harness.LIB, "libcudart.so.13")
    timeline = scenario("timeline")
    cases = [
        (["--step", "sym:loop:decode_stpe"], loop,
         f"gpuleak: --step sym:loop:decode_stpe: loop has no function decode_stpe ({loop}; "
         "closest: decode_step, "),
        (["--step", "sym:nofile:x"], loop,
         f"gpuleak: --step sym:nofile:x: no object named nofile in what {loop} maps at its "
         "start (loop, libcudart.so.13, libc.so.6, ld-linux-x86-64.so.2; closest: "),
        (["--step", "sym:libcudart.so.13:cudaMallocc"], loop,
         "gpuleak: --step sym:libcudart.so.13:cudaMallocc: libcudart.so.13 has no function "
         f"cudaMallocc ({lib}; closest: cudaMalloc, "),
        (["--request", "sym:timeline:request_begin,request_ned"], timeline,
         "gpuleak: --request sym:timeline:request_begin,request_ned: timeline has no function "
         f"request_ned ({timeline}; closest: request_end, "),
        (["--end", "sym:/nonexistent/libx.so:f"], loop,
         "gpuleak: --end sym:/nonexistent/libx.so:f: /nonexistent/libx.so: No such file or "
         "directory\n"),
        (["--step", "sym:/etc/passwd:f"], loop,
         "gpuleak: --step sym:/etc/passwd:f: /etc/passwd is not an ELF object\n"),
    ]
    for opts, prog, msg in cases:
        args = [gl(), "run", "--fail-on-leak"] + opts + ["--", prog]
        args += ["3", "65536"] if prog == loop else ["3", "65536", "1"]
        p = run_plain(args)
        eq(p.returncode, 2, f"{opts}: exit status ({p.stderr})")
        check(p.stderr.startswith(msg) and p.stderr.count("\n") == 1,
              f"{opts}: one line: {msg!r}, got {p.stderr!r}")
        never_ran(p, str(opts))
    # found: in the executable, and in a library it needs, by name
    for spec in ("sym:loop:decode_step", "sym:libcudart.so.13:cudaStreamSynchronize"):
        p = run_plain([gl(), "run", "--fail-on-leak", "--step", spec, "--", loop, "12", "65536"])
        eq(p.returncode, 3, f"{spec}: the gate sees the leak ({p.stderr})")
    # --wait: a library that is not among those it needs is said, and waited for
    p = run_plain([gl(), "run", "--wait", "--step", "sym:libnotyet.so:f", "--", loop, "1",
                   "65536"])
    eq(p.returncode, 0, f"--wait: {p.stderr}")
    check("gpuleak: --step sym:libnotyet.so:f: no object named libnotyet.so in what "
          f"{loop} maps at its start yet: waiting for one to be loaded (--wait)\n" in p.stderr,
          f"--wait says so: {p.stderr!r}")


@test
def misspelt_marker_in_attach_mode():
    """attach: the same check against the process's mappings, before any probe: exit 2 and
    the process runs on untouched (it goes on to finish its work untraced)."""
    a = harness.Attached("loop", [3, 65536], gl_args=["--step", "sym:loop:decode_stpe"])
    try:
        rc = a.gl.finish()
        eq(rc, 2, f"exit status: {a.gl.text('err')}")
        eq(a.gl.text("err"),
           f"gpuleak: --step sym:loop:decode_stpe: loop has no function decode_stpe "
           f"({scenario('loop')}; closest: decode_step, "
           + a.gl.text("err").split("closest: decode_step, ", 1)[-1], "one line")
        check(a.gl.text("err").count("\n") == 1, f"one line: {a.gl.text('err')!r}")
        a.target.send()
        a.target.wait_line("^done")
        a.target.send()
        eq(a.target.finish(), 0, "the target ran on")
        a = harness.Attached("loop", [3, 65536], gl_args=["--step", "sym:libnope.so:f"])
        eq(a.gl.finish(), 2, f"exit status: {a.gl.text('err')}")
        check(a.gl.text("err").startswith(
            f"gpuleak: --step sym:libnope.so:f: no object named libnope.so in what pid "
            f"{a.target.pid} maps ("), f"message: {a.gl.text('err')!r}")
    finally:
        a.cleanup()


@test
def marker_on_a_fifo_does_not_hang():
    """--step sym:FIFO:x: refused at once (the open would block until a writer came), exit 2;
    the command never runs."""
    d = tempfile.mkdtemp(prefix="gpuleak-test-")
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    try:
        p = run_plain([gl(), "run", "--step", f"sym:{fifo}:x", "--", scenario("loop"), "1",
                       "65536"], timeout=20)
        eq((p.returncode, p.stderr),
           (2, f"gpuleak: --step sym:{fifo}:x: {fifo} is not a regular file\n"), "refused")
        never_ran(p, "fifo")
    finally:
        shutil.rmtree(d)


# ---- run -- sh -c: forks and execs without --follow -----------------------------------------

SH = os.path.basename(os.path.realpath("/bin/sh"))[:15]


@test
def command_that_forks_says_so_without_follow():
    """run -- sh -c 'loop; loop': the shell forks the work, which --follow alone traces: said
    once, naming the shell and its child, instead of a silent report of 0 allocations."""
    loop = scenario("loop")
    res = run_gpuleak(["run", "--", "/bin/sh", "-c", f"{loop} 2 65536; {loop} 2 65536"])
    said = re.findall(r"^gpuleak: pid (\d+) \((.*)\) started pid (\d+), which is not traced: "
                      r"--follow traces the processes a target starts$", res.err, re.M)
    v = res.verdict()
    eq(len(said), 1, f"said once: {res.err}")
    eq((int(said[0][0]), said[0][1]), (v["pid"], SH), "the shell named")
    eq((v["comm"], v["allocs"]), (SH, 0), "the shell itself allocated nothing")
    res = run_gpuleak(["run", "--follow", "--", "/bin/sh", "-c", f"{loop} 2 65536"])
    check("not traced" not in res.err, f"nothing to say with --follow: {res.err}")
    eq(sorted(v["comm"] for v in res.verdicts()), sorted([SH, "loop"]), "both traced")


@test
def command_that_execs_is_named_by_its_new_program():
    """run -- sh -c 'exec loop': the process is the command's, with or without --follow; after
    the exec it is the new program's, named by it in the report and the verdict (it stayed
    the shell's name), and what the shell held went with its old program."""
    loop = scenario("loop")
    for follow in ([], ["--follow"]):
        res = run_gpuleak(["run"] + follow + ["--", "/bin/sh", "-c", f"exec {loop} 3 65536"])
        vs = res.verdicts()
        eq([(v["comm"], v["state"]) for v in vs], [(SH, "exec"), ("loop", "exited")],
           f"{follow}: the shell until its exec, then loop")
        eq(vs[0]["pid"], vs[1]["pid"], "one pid")
        eq(vs[1]["live_count"], 4, f"{follow}: loop's own memory: kv_cache_init and 3 leaks")
        check(re.search(r"^pid %d \(loop\): exited with status 0 " % vs[1]["pid"], res.out,
                        re.M), f"{follow}: the report names loop: {res.out}")
        check(f"tracing pid {vs[1]['pid']} (after exec)" in res.err, f"said: {res.err}")


@test
def exec_images_are_judged_apart():
    """A process that exec()s its own program: under `setarch -R` every image is loaded at the
    same addresses, so the images' call sites are the same addresses. Each image is a process
    of its own to the verdict (what it held went with it), its sites its own: before, every
    image's leaks listed the site with all images' bytes (3 MiB + 2 MiB + 1 MiB in each),
    setarch's too. Live and from the capture alike."""
    reexec = scenario("reexec")
    want = [("setarch", "exec", 0, 0, {}),
            ("reexec", "exec", 1, 3 << 20, {("cudaMalloc", "hold_gen"): (3 << 20, 1)}),
            ("reexec", "exec", 1, 2 << 20, {("cudaMalloc", "hold_gen"): (2 << 20, 1)}),
            ("reexec", "exited", 1, 1 << 20, {("cudaMalloc", "hold_gen"): (1 << 20, 1)})]
    cap = tmpfile(".glc")
    try:
        run_gpuleak(["record", "-o", cap, "--", "setarch", "-R", reexec, "3", "1M"])
        for how, args in (("live", ["run", "--", "setarch", "-R", reexec, "3", "1M"]),
                          ("capture", ["report", cap])):
            vs = run_gpuleak(args).verdicts()
            eq([(v["comm"], v["state"], v["live_count"], v["live_bytes"], leak_sites(v))
                for v in vs], want, f"{how}: one verdict per image, each with its own site")
            eq(len({v["pid"] for v in vs}), 1, f"{how}: one pid")
        # The pictures too: each image's "live bytes" counter is its own (they came from
        # every image of the pid, interleaved: each showed 3 MiB at its peak).
        trace = tmpfile(".json")
        try:
            run_gpuleak(["report", cap, "--perfetto", trace])
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
        finally:
            if os.path.exists(trace):
                os.unlink(trace)
        peaks = []
        for e in events:
            if e.get("ph") == "M" and e.get("name") == "process_name":
                peaks.append(0)
            elif e.get("ph") == "C" and e.get("name") == "live bytes":
                peaks[-1] = max(peaks[-1], e["args"]["total"])
        eq(peaks, [0, 3 << 20, 2 << 20, 1 << 20], "--perfetto: each image's live bytes")
    finally:
        if os.path.exists(cap):
            os.unlink(cap)


# ---- no process left stopped ----------------------------------------------------------------

def session_procs(sid):
    """(pid, state letter, command) of the processes in session sid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
            fields = rest.split()
            if int(fields[3]) == sid:
                out.append((int(d), fields[0], head.split("(", 1)[1]))
        except (OSError, ValueError, IndexError):
            pass
    return out


def under_strace():
    """gpuleak's environment under strace: LeakSanitizer cannot run under ptrace."""
    env = gpuleak_env()
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


# Where gpuleak is killed: the Nth call of a syscall it makes while it starts, forks and holds
# its command (BPF loading, the fork, the release, the first polls and resumptions) — counts,
# not times, so each point is the same on every machine.
# Points in the main thread's startup (strace without -f: threads it starts are not traced),
# as `strace -c gpuleak run -- loop 2 65536` counts them: ~115 bpf (the maps are made on
# threads, the kernel's BTF mapped rather than read, so ~57 reads), the child's fork
# (clone), the threads (clone3), ~7 polls and ~5 pidfd signals.
KILL_POINTS = ([("bpf", n) for n in (1, 40, 100)] + [("clone", 1), ("clone3", 1), ("clone3", 8),
               ("pidfd_open", 1), ("pidfd_open", 2)] + [("write", n) for n in range(1, 5)] +
               [("read", n) for n in (10, 30, 50)] +
               [("poll", n) for n in range(1, 7)] +
               [("pidfd_send_signal", n) for n in range(1, 6)])


def kill_at_points(gl_args, points):
    """gpuleak run killed (SIGKILL, by strace at a syscall's entry) at each point: every
    process it started must then finish by itself; one stopped for good is a failure.
    Returns how many points were reached (gpuleak was killed there)."""
    killed = 0
    for sysc, n in points:
        trace = tmpfile(".strace")
        # no pipes: what gpuleak started inherits them, and one left stopped would hold them
        p = subprocess.Popen(["strace", "-o", trace, "-e", f"inject={sysc}:signal=KILL:when={n}",
                              gl()] + gl_args, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, env=under_strace())
        p.wait(timeout=60)
        with open(trace) as f:
            killed += "+++ killed by SIGKILL +++" in f.read()
        os.unlink(trace)
        left = []

        def settled():
            nonlocal left
            left = [x for x in session_procs(p.pid) if x[1] != "Z"]
            if not left:
                return True
            # stopped, and nobody left to resume it: a stray
            return "stray" if all(s == "T" for _, s, _ in left) else None
        try:
            if harness.wait_for(f"the command to finish after a kill at {sysc} #{n}",
                                settled, timeout=20) == "stray":
                raise Fail(f"killed at {sysc} #{n}: left stopped: {left}")
        finally:
            for pid, _, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    return killed


@test
def killing_gpuleak_at_startup_leaves_no_process_stopped():
    """kill -9 of gpuleak anywhere in its startup (one try in 9 left run's child stopped for
    good): held before exec, the child exits; stopped by BPF at its exec or a dlopen, it is
    resumed by gpuleak's death (a parent-death SIGCONT, and BPF at gpuleak's exit) and runs on;
    so do the children --follow stopped at their fork."""
    if not shutil.which("strace"):
        return "skip"
    loop = scenario("loop")
    n = kill_at_points(["run", "--", loop, "2", "65536"], KILL_POINTS)
    check(n >= len(KILL_POINTS) - 3, f"gpuleak was killed at {n} of {len(KILL_POINTS)} points")
    points = [("poll", k) for k in range(1, 9)] + [("pidfd_send_signal", k) for k in range(1, 9)]
    n = kill_at_points(["run", "--follow", "--", "/bin/sh", "-c", f"{loop} 2 65536; true"],
                       points)
    check(n >= len(points) - 2, f"--follow: gpuleak was killed at {n} of {len(points)} points")


# ---- signals: what Ctrl-C means, and startup ------------------------------------------------

@test
def sigint_to_gpuleak_alone_stops_tracing_and_the_command_runs_on():
    """run mode, SIGINT sent to gpuleak only (kill -INT): it used to wait for a command that
    never got the signal. Now it stops tracing at once, as for SIGTERM: the report (state
    detached), exit 0, and the command runs on to its end, untraced."""
    json_path = tmpfile(".ndjson")
    g = Proc([gl(), "run", "--interval", "0", "--json", json_path, "--", scenario("loop"), "3",
              "65536"], env=env_for_targets(dict(gpuleak_env(), SCENARIO_SYNC="1")))
    try:
        m = g.wait_line(r"^ready (\d+)")
        child = int(m.group(1))
        os.kill(g.pid, signal.SIGINT)
        # not finish(): the command shares gpuleak's stdin, and its end would end the command
        eq(g.p.wait(timeout=harness.TIMEOUT), 0, f"exit status: {g.text('err')}")
        v = [r for r in harness.read_ndjson(json_path) if r.get("type") == "verdict"]
        eq([(x["pid"], x["state"]) for x in v], [(child, "detached")], "detached")
        check(proc_state(child) not in (None, "T", "Z"), "the command runs on")
        g.send()
        g.wait_line("^done")
        g.send()
        g.wait_line(r"^pid %d \(loop\): detached after " % child)
        check("waiting for pid" not in g.text("err"), f"did not wait: {g.text('err')}")
    finally:
        g.kill()
        if os.path.exists(json_path):
            os.unlink(json_path)


@test
def ctrl_c_on_the_terminal_waits_for_the_command():
    """run mode, Ctrl-C typed on gpuleak's terminal: the kernel sends SIGINT to the whole
    foreground group, the command included; gpuleak says it waits for it, traces its
    shutdown, reports its end (killed by SIGINT: exit status 4)."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        env = env_for_targets(gpuleak_env())
        os.execve(gl(), [gl(), "run", "--interval", "0", "--", scenario("loop"), "100000",
                         "65536"], env)
    out = b""
    try:
        def read_until(pat):
            nonlocal out

            def poll():
                nonlocal out
                r, _, _ = __import__("select").select([fd], [], [], 0.2)
                eof = False
                if r:
                    try:
                        data = os.read(fd, 65536)
                        out += data
                        eof = not data
                    except OSError:
                        eof = True
                if re.search(pat, out):
                    return True
                return f"eof: {out.decode(errors='replace')}" if eof else None
            return harness.wait_for(f"{pat!r} on the terminal", poll)
        read_until(rb"tracing pid \d+")
        os.write(fd, b"\x03")
        read_until(rb"waiting for pid \d+ to exit \(Ctrl-C again to stop now\)")
        eq(read_until(rb"was killed by SIGINT \(signal 2\)"), True, "the command's end said")
        _, status = os.waitpid(pid, 0)
        pid = 0
        eq(os.waitstatus_to_exitcode(status), 4, f"exit status: {out.decode(errors='replace')}")
        check(re.search(rb"exited with status 130 ", out), "its end in the report")
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


@test
def signals_while_starting_stop_before_anything_runs():
    """SIGTERM or SIGINT while gpuleak loads its BPF programs, forks the command or holds it:
    it stops there (it went on until tracing began, and a wait there was deaf to them):
    'interrupted by SIGTERM while starting: nothing traced', exit 1, the command never ran.
    Delivered by strace at the Nth call of a syscall: a count, the same point every time."""
    if not shutil.which("strace"):
        return "skip"
    for sysc, n, sig in (("bpf", 20, "TERM"), ("clone", 1, "INT"), ("pidfd_open", 1, "TERM"),
                         ("bpf", 5, "INT")):
        p = run_plain(["strace", "-o", "/dev/null", "-e", f"inject={sysc}:signal={sig}:when={n}",
                       gl(), "run", "--", scenario("loop"), "2", "65536"], env=under_strace())
        eq(p.returncode, 1, f"{sysc} #{n}: exit status ({p.stderr})")
        check(p.stderr.endswith(f"gpuleak: interrupted by SIG{sig} while starting: nothing "
                                "traced\n"), f"{sysc} #{n}: said: {p.stderr!r}")
        eq(p.stdout, "", f"{sysc} #{n}: the command never ran, nothing reported")


# ---- what is wrong with a target, said ------------------------------------------------------

def attach_msg(pid, user=None):
    cmd = [gl(), "attach", "-p", str(pid)]
    if user:
        caps = "+bpf,+perfmon,+sys_admin"
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
               f"--inh-caps={caps}", f"--ambient-caps={caps}"] + cmd
    return run_plain(cmd)


@test
def targets_that_cannot_be_traced_say_why():
    """Each refusal says what is wrong, before anything is loaded (exit 1, one line): a kernel
    thread, a thread rather than its process, a zombie, a pid that does not exist, a
    process whose maps even root may not read."""
    p = attach_msg(2)
    with open("/proc/2/comm") as f:
        kcomm = f.read().strip()
    eq((p.returncode, p.stderr),
       (1, f"gpuleak: pid 2 ({kcomm}) is a kernel thread: nothing to trace\n"), "pid 2")
    t = Proc(["python3", "-c", "import threading, sys\n"
              "e = threading.Event()\n"
              "th = threading.Thread(target=e.wait); th.start()\n"
              "print(th.native_id, flush=True); sys.stdin.readline(); e.set()"])
    try:
        tid = int(t.wait_line(r"^(\d+)").group(1))
        p = attach_msg(tid)
        eq((p.returncode, p.stderr),
           (1, f"gpuleak: pid {tid} is a thread of process {t.pid} (python3): -p {t.pid}\n"),
           "a thread")
    finally:
        t.kill()
    z = Proc(["sh", "-c", "sleep 0 & exec sleep 30"], stdin=False)
    try:
        def zombie():
            for d in os.listdir("/proc"):
                try:
                    with open(f"/proc/{d}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if fields[0] == "Z" and int(fields[1]) == z.pid:
                        return int(d)
                except (OSError, ValueError, IndexError):
                    pass
            return None
        # sh forked sleep 0, which exited; after the exec nobody reaps it
        zp = harness.wait_for("a zombie", zombie)
        p = attach_msg(zp)
        eq((p.returncode, p.stderr),
           (1, f"gpuleak: pid {zp} (sleep) has exited (a zombie its parent has not reaped): "
               "nothing to trace\n"), "a zombie")
    finally:
        z.kill()
    with open("/proc/sys/kernel/pid_max") as f:
        gone = int(f.read()) + 1
    eq(attach_msg(gone).stderr, f"gpuleak: no such process: {gone}\n", "no such process")


@test
def another_users_process_says_which_capabilities():
    """gpuleak as uid 65534 with the BPF capabilities (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN):
    its own user's processes are traced; another user's (here root's, and PID 1) is refused
    naming the two capabilities it lacks, not 'Permission denied' from an attach."""
    if not shutil.which("setpriv"):
        return "skip"
    t = Proc(["sleep", "30"], stdin=False)
    try:
        for pid, comm in ((t.pid, "sleep"), (1, open("/proc/1/comm").read().strip())):
            p = attach_msg(pid, user=65534)
            eq((p.returncode, p.stderr),
               (1, f"gpuleak: pid {pid} ({comm}) belongs to uid 0, not to uid 65534 that "
                   "gpuleak runs as: tracing another user's process needs CAP_SYS_PTRACE and "
                   "CAP_DAC_READ_SEARCH (run gpuleak as root)\n"), f"pid {pid}")
    finally:
        t.kill()


@test
def one_target_per_pid():
    """-p P,P (and -p P -p P): one target, whose exit status is kept (it was attached twice
    and reported "exit_status":-1); the same pid with two different start times is a usage
    error."""
    a = harness.Attached("loop", [2, 65536],
                         gl_args=lambda pid: ["-p", f"{pid},{pid}", "-p", str(pid)])
    try:
        a.wait_attached()
        a.target.send()
        a.target.wait_line("^done")
        a.target.send()
        res = a.finish()
    finally:
        a.cleanup()
    v = res.verdict()
    eq((v["state"], v["exit_status"]), ("exited", 0), "one verdict, with the exit status")
    eq(res.err.count("tracing pid"), 1, f"attached once: {res.err}")
    p = run_plain([gl(), "attach", "-p", "4242@100,4242@200"])
    eq(p.returncode, 2, "conflicting start times")
    check("pid 4242 given twice, with start times 100 and 200" in p.stderr, p.stderr)


@test
def record_with_both_pid_and_command_says_both():
    p = run_plain([gl(), "record", "-o", tmpfile(".glc"), "-p", "1", "--", "true"])
    eq(p.returncode, 2, "usage error")
    check(p.stderr.startswith("gpuleak record: record takes -p PID or a command, not both: "),
          f"says both were given: {p.stderr!r}")
    p = run_plain([gl(), "record", "-o", tmpfile(".glc")])
    check(p.stderr.startswith("gpuleak record: record needs -p PID or a command: "),
          f"neither: {p.stderr!r}")


# ---- rules: empty, unbalanced, unmatched ----------------------------------------------------

@test(root=False)
def empty_or_unbalanced_rules_are_usage_errors():
    """--rule '' (an unset shell variable) and a quote left open are exit 2 with the place,
    before anything runs; 'single' quotes are quotes, as in a shell."""
    for rule, msg in (
            ("", "gpuleak: --rule #1: no rule in '' (e.g. --rule 'persistent "
                 "site=*kv_cache*')\n"),
            ("  # only a comment", "gpuleak: --rule #1: no rule in '  # only a comment' (e.g. "
                                   "--rule 'persistent site=*kv_cache*')\n"),
            ("persistent site='abc", "gpuleak: --rule #1:1:17: unterminated quoted string "
                                     "(' without its closing ')\n"),
            ('persistent site="abc', "gpuleak: --rule #1:1:17: unterminated quoted string "
                                     "(\" without its closing \")\n")):
        for cmd in (["run"], ["report", "/nonexistent.glc"]):
            p = run_plain([gl()] + cmd + ["--rule", rule] + (["--", "true"] if cmd == ["run"]
                                                                else []))
            eq((p.returncode, p.stderr, p.stdout), (2, msg, ""), f"{cmd[0]} --rule {rule!r}")


@test
def single_quotes_and_unmatched_rules():
    """A rule in 'single' quotes matches as written; one of the user's rules that decided
    nothing all run (a typo) is said once, at the end, live and offline; a preset's are not
    (a preset covers what a stack may do)."""
    loop = scenario("loop")
    res = run_gpuleak(["run", "--rule", "persistent site='kv_cache_init'", "--rule",
                       "persistent site=kv_cach_init", "--rule", "ignore api=cudaMalloc size>=1TiB",
                       "--preset", "vllm", "--", loop, "3", "65536"])
    v = res.verdict()
    eq([r["site"].split("+")[0] for r in v["retained"]], ["kv_cache_init"], "quoted rule used")
    said = re.findall(r"^gpuleak: warning: (.*): rule matched nothing: (.*)$", res.err, re.M)
    eq(said, [("--rule #2:1", "persistent site=kv_cach_init"),
              ("--rule #3:1", "ignore api=cudaMalloc size>=1TiB")], "said once each, in order")
    cap = tmpfile(".glc")
    try:
        p = run_plain([gl(), "record", "-o", cap, "--", loop, "3", "65536"])
        eq(p.returncode, 0, f"record: {p.stderr}")
        p = run_plain([gl(), "report", cap, "--rule", "persistent site=kv_cach_init"])
        eq(re.findall(r"^gpuleak: warning: .*rule matched nothing.*$", p.stderr, re.M),
           ["gpuleak: warning: --rule #1:1: rule matched nothing: persistent site=kv_cach_init"],
           "offline too")
    finally:
        if os.path.exists(cap):
            os.unlink(cap)


# ---- the command line: help, --interval 0, --metrics ----------------------------------------

COMMANDS = ("attach", "run", "record", "report", "probes")


def help_text(args, fmt=None):
    env = dict(os.environ)
    env.pop("ARGP_HELP_FMT", None)
    if fmt:
        env["ARGP_HELP_FMT"] = fmt
    p = run_plain([gl()] + args, env=env)
    eq(p.returncode, 0, f"gpuleak {' '.join(args)}: {p.stderr}")
    return p.stdout


def paragraphs(text):
    """--help's option entries and paragraphs, each as its lines."""
    out, cur = [], []
    for line in text.splitlines():
        if not line.strip() or re.match(r"^\s{1,8}(-\w, )?--?\w", line):
            if cur:
                out.append(cur)
            cur = [line] if line.strip() else []
        else:
            cur.append(line)
    return out + ([cur] if cur else [])


def cut_groups(lines, limit=40):
    """The (...) groups and 'quoted' examples, short enough to fit on a line, that a line
    break cuts in two (an apostrophe is not a quote)."""
    joined, cuts = "", []
    for i, line in enumerate(lines):
        if i:
            cuts.append(len(joined))
            joined += " " + line.strip()
        else:
            joined = line.rstrip()
    spans, stack, q = [], [], None
    for j, c in enumerate(joined):
        if c == "(":
            stack.append(j)
        elif c == ")" and stack:
            spans.append((stack.pop(), j))
        elif c == "'" and not (j and joined[j - 1].isalnum() and joined[j + 1:j + 2].isalnum()):
            if q is None:
                q = j
            else:
                spans.append((q, j))
                q = None
    return [joined[a:b + 1] for a, b in spans
            if b - a < limit and any(a < c < b for c in cuts)]


@test(root=False)
def help_lines_do_not_break_mid_phrase():
    """Every --help at gpuleak's own format (100 columns, the text from column 30: argp's 79
    broke nearly every option mid-phrase): no line over 100 columns, and no short (...) or
    'quoted' group cut by a line break. The user's ARGP_HELP_FMT still wins."""
    for cmd in ((),) + tuple((c,) for c in COMMANDS):
        text = help_text(list(cmd) + ["--help"])
        long_lines = [l for l in text.splitlines() if len(l) > 100]
        eq(long_lines, [], f"{cmd}: lines over 100 columns")
        cut = [g for p in paragraphs(text) for g in cut_groups(p)]
        eq(cut, [], f"gpuleak {' '.join(cmd)} --help: groups cut by a line break")
    narrow = help_text(["run", "--help"], fmt="rmargin=60")
    check(max(len(l) for l in narrow.splitlines()) <= 60, "ARGP_HELP_FMT=rmargin=60 honoured")


@test(root=False)
def help_command_and_run_help_lists_only_what_run_takes():
    """gpuleak help and gpuleak help CMD are --help; every option run --help lists is one run
    takes (each parses: only the missing command is wrong); help of no such command is 2."""
    eq(help_text(["help"]), help_text(["--help"]), "gpuleak help")
    for cmd in COMMANDS:
        eq(help_text(["help", cmd]), help_text([cmd, "--help"]), f"gpuleak help {cmd}")
    p = run_plain([gl(), "help", "bogus"])
    eq(p.returncode, 2, "help bogus")
    values = {"DURATION": "1s", "FILE": "/tmp/gpuleak-help-test", "N": "1", "BYTES": "4096",
              "SPEC": "sync", "GEN": "sv", "NAME": "vllm", "TEXT": "persistent site=x",
              "[ADDR]:PORT": ":0", "DIR": "/tmp", "K": "1", "sym:FILE:SYMBOL": "sym:f:s",
              "sym:FILE:BEGIN,END": "sym:f:b,e", "MODE": "dwarf", "KIND": "classic",
              "PCT": "5"}
    opts = re.findall(r"^\s{1,8}(?:-\w, )?(--[a-z][a-z-]*)(?:=(\S+))?",
                      help_text(["run", "--help"]), re.M)
    check(len(opts) > 20, f"options found: {opts}")
    for opt, metavar in opts:
        if opt in ("--help", "--usage", "--version"):
            continue
        value = os.path.join(ROOT, "rules", "vllm.rules") if opt == "--rules" else \
            values.get(metavar)
        arg = [f"{opt}={value}"] if metavar else [opt]
        p = run_plain([gl(), "run"] + arg)
        eq((p.returncode, p.stderr.splitlines()[0]),
           (2, "gpuleak run: run needs a command: gpuleak run [OPTIONS] -- CMD ARGS"),
           f"run {arg[0]} is taken")


@test(root=False)
def malformed_metrics_address_is_a_usage_error():
    """--metrics ADDR that is no address is exit 2 at once (it was 1, after BPF was loaded);
    --interval 0's words say what it does: no tables, and with --step a line for every step."""
    for addr in ("abc", ":99999", ":x", "[::1", "::1:9464", ""):
        p = run_plain([gl(), "run", "--metrics", addr, "--", "true"])
        eq(p.returncode, 2, f"--metrics {addr!r}")
        check(p.stderr.startswith(f"gpuleak run: invalid --metrics '{addr}' (PORT, :PORT, "
                                  "ADDR:PORT or [IPv6]:PORT, a port of 0..65535)\n"),
              f"--metrics {addr!r}: {p.stderr!r}")
    h = " ".join(help_text(["run", "--help"]).split())
    check("Print a compact table every DURATION, default 5s, 0: none; with --step, a line per "
          "step instead, at most one per DURATION, 0: a line for every step" in h, h)


@test
def interval_0_prints_no_tables():
    """--interval 0 without --step: the report only, no interval table."""
    res = run_gpuleak(["run", "--interval", "0", "--", scenario("loop"), "30", "65536"])
    eq(re.findall(r"^\[ *[\d.]+s\] pid", res.out, re.M), [], "no interval table")
    eq([r for r in res.records if r.get("type") == "interval"], [], "no interval record")
