# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Command line and bad input: one actionable line, the documented exit code."""
import os
import re
import signal
import subprocess
import time

from harness import Proc, check, eq, run_plain, scenario, test, env_for_targets
import harness


def gl():
    return harness.GPULEAK


@test
def usage_errors_exit_2():
    for args, needle in ((["attach"], "attach needs -p PID"),
                         (["attach", "-p", "abc"], "invalid PID"),
                         (["attach", "-p", "12,abc"],
                          "invalid PID 'abc' (element at character 4 of '12,abc')"),
                         (["attach", "-p", "12", "-p", "7,5@x"],
                          "invalid PID@TICKS '5@x' (element at character 3 of '7,5@x'"),
                         (["run"], "run needs a command"),
                         (["bogus"], "unknown command"),
                         (["attach", "-p", "1", "--duration", "xyz"], "invalid duration"),
                         (["probes"], "exactly one of"),
                         ([], "a command is needed")):
        p = run_plain([gl()] + args)
        eq(p.returncode, 2, f"exit code of gpuleak {' '.join(args)}")
        check(needle in p.stderr, f"'{needle}' in stderr of {args}: {p.stderr!r}")


@test
def duration_stops_tracing():
    """--duration stops tracing after that long: detached, the target runs on."""
    t0 = time.monotonic()
    a = harness.Attached("loop", [100000, 65536], gl_args=["--duration", "1s"])
    try:
        a.wait_attached()
        a.target.send()
        eq(a.gl.finish(), 0, f"gpuleak exits by itself: {a.gl.text('err')}")
        wall = time.monotonic() - t0
        check(a.target.p.poll() is None, "the target runs on")
        v = [r for r in harness.read_ndjson(a.json_path) if r.get("type") == "verdict"][0]
        eq(v["state"], "detached", "stopped by --duration, not by the target")
        # at least the second asked for, and no more than the test saw gpuleak run
        check(0.9 <= v["duration_s"] <= wall,
              f"traced for 1 s, within the {wall:.2f} s gpuleak ran: {v['duration_s']}")
    finally:
        a.cleanup()
        if os.path.exists(a.json_path):
            os.unlink(a.json_path)


@test
def interval_tables():
    """--interval prints a table per period on the terminal and an interval record in the
    NDJSON, the same numbers: live by API and device, and the top sites, largest first.
    gpuleak is stopped (SIGINT: it detaches) once two periods with memory are written."""
    a = harness.Attached("loop", [100000, 65536], gl_args=["--interval", "300ms"])
    try:
        a.wait_attached()
        tail = harness.NdjsonTail(a.json_path)
        a.target.send()
        with_memory = []

        def two_with_memory():
            with_memory.extend(r for r in tail.new() if r["live_count"])
            return True if len(with_memory) >= 2 else None
        harness.wait_for("two interval records with memory", two_with_memory)
        a.gl.kill(signal.SIGINT)
        eq(a.gl.finish(), 0, f"gpuleak exit code: {a.gl.text('err')}")
        out = a.gl.text("out")
        records = harness.read_ndjson(a.json_path)
        v = [r for r in records if r.get("type") == "verdict"][0]
        eq(v["state"], "detached", "detached at SIGINT")
        ivs = [r for r in records if r.get("type") == "interval"]
        heads = re.findall(r"^\[\s*([\d.]+)s\] pid %d: live (.+) in (\d+), pending 0 B; "
                           r"(\d+) allocs, (\d+) frees, 0 failed$" % v["pid"], out, re.M)
        eq(len(heads), len(ivs), "one terminal table per interval record")
        check(sum(1 for iv in ivs if iv["live_count"]) >= 2, "two periods with memory")
        for iv, head in zip(ivs, heads):
            eq((int(head[2]), int(head[3]), int(head[4])),
               (iv["live_count"], iv["allocs"], iv["frees"]), "table and record agree")
            if not iv["live_count"]:    # before the target's first allocation
                eq((iv["by_api"], iv["top_sites"]), ([], []), "nothing live, nothing listed")
                continue
            eq(iv["by_api"], [{"api": "cudaMalloc", "device": 0, "bytes": iv["live_bytes"],
                               "count": iv["live_count"]}], "live by API and device")
            n = iv["live_count"] - 1
            eq([(t["site"].split("+")[0], t["bytes"], t["count"]) for t in iv["top_sites"]],
               [("kv_cache_init", 64 << 20, 1), ("leaky_sampler", n * 65536, n)],
               "top sites, largest first")
            check(f"    top   64.0 MiB     1  {iv['top_sites'][0]['site']}" in out,
                  "the top site on the terminal")
    finally:
        a.cleanup()
        if os.path.exists(a.json_path):
            os.unlink(a.json_path)


@test
def help_has_usage_and_examples():
    p = run_plain([gl(), "--help"])
    eq(p.returncode, 0, "exit code")
    for word in ("USAGE", "EXAMPLES", "EXIT STATUS"):
        check(word in p.stdout, f"{word} in --help")
    for cmd in ("attach", "run", "probes"):
        p = run_plain([gl(), cmd, "--help"])
        eq(p.returncode, 0, f"{cmd} --help exit code")
        check("EXAMPLES" in p.stdout, f"EXAMPLES in {cmd} --help")


@test
def unknown_pid():
    # A pid that does not exist: above pid_max.
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read()) + 1
    p = run_plain([gl(), "attach", "-p", str(pid)])
    eq(p.returncode, 1, "exit code")
    check(f"no such process: {pid}" in p.stderr, f"message: {p.stderr!r}")


@test
def no_cuda_library_in_target():
    t = Proc(["sleep", "30"], stdin=False)
    try:
        p = run_plain([gl(), "attach", "-p", str(t.pid)])
    finally:
        t.kill()
    eq(p.returncode, 1, "exit code")
    check("maps no GPU library" in p.stderr, f"message: {p.stderr!r}")
    check("looked in" in p.stderr and "libc.so.6" in p.stderr, f"says where: {p.stderr!r}")
    check("--wait" in p.stderr, "suggests --wait")


@test
def missing_privileges():
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        gl(), "run", "--", "true"], capture_output=True, text=True,
                       timeout=30)
    eq(p.returncode, 1, f"exit code ({p.stderr})")
    check("needs root, or CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN" in p.stderr,
          f"message: {p.stderr!r}")
    eq(len(p.stderr.strip().splitlines()), 1, "one line")


@test
def run_missing_command():
    p = run_plain([gl(), "run", "--", "/nonexistent/cmd"])
    eq(p.returncode, 1, "exit code")
    check("cannot run /nonexistent/cmd" in p.stderr, f"message: {p.stderr!r}")


@test
def probes_of_a_running_process():
    t = Proc([scenario("basic"), "1", "0", "64"],
             env=env_for_targets({"SCENARIO_SYNC": "1"}))
    try:
        t.wait_line("ready")
        p = run_plain([gl(), "probes", "-p", str(t.pid)])
    finally:
        t.kill()
    eq(p.returncode, 0, f"exit code ({p.stderr})")
    objs = {l.split()[-1] for l in p.stdout.splitlines()[1:]}
    check(any(o.endswith("/libcudart.so.13") for o in objs), f"libcudart listed: {objs}")


@test
def man_page_documents_every_option():
    """docs/gpuleak.1 names every long option of every command's --help, and groff renders it
    without a warning."""
    man = open(os.path.join(harness.ROOT, "docs", "gpuleak.1")).read().replace("\\-", "-")
    documented = set(re.findall(r"--[a-z][a-z-]*", man))
    for cmd in ("attach", "run", "record", "report", "probes", "diff", "watch"):
        p = run_plain([gl(), cmd, "--help"])
        eq(p.returncode, 0, f"{cmd} --help")
        opts = set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z-]*)", p.stdout, re.M))
        check(len(opts) > 5, f"{cmd}: options found in --help: {opts}")
        missing = opts - documented - {"--help", "--usage", "--version"}
        eq(sorted(missing), [], f"{cmd}: options missing from the man page")
    p = run_plain(["groff", "-man", "-ww", "-z", os.path.join(harness.ROOT, "docs", "gpuleak.1")])
    eq((p.returncode, p.stderr), (0, ""), "groff renders the man page without warnings")


@test(root=False)
def make_install_and_uninstall():
    """make install DESTDIR=... PREFIX=/usr: a working gpuleak, the NVTX library where it looks
    for it (../lib/gpuleak beside its bin), the man page; make uninstall takes them back."""
    import shutil
    import tempfile
    dest = tempfile.mkdtemp(prefix="gpuleak-install-")
    try:
        p = run_plain(["make", "--no-print-directory", "-C", harness.ROOT, "install",
                       f"DESTDIR={dest}", "PREFIX=/usr"], timeout=300)
        eq(p.returncode, 0, f"make install: {p.stderr}")
        files = {os.path.relpath(os.path.join(d, f), dest): os.stat(os.path.join(d, f)).st_mode
                 & 0o777 for d, _, fs in os.walk(dest) for f in fs}
        eq(files, {"usr/bin/gpuleak": 0o755, "usr/lib/gpuleak/libgpuleak_nvtx.so": 0o644,
                   "usr/share/man/man1/gpuleak.1": 0o644}, "installed files and modes")
        v = run_plain([os.path.join(dest, "usr/bin/gpuleak"), "--version"])
        eq((v.returncode, v.stdout.split()[0]), (0, "gpuleak"), "the installed binary runs")
        m = run_plain(["groff", "-man", "-ww", "-z",
                       os.path.join(dest, "usr/share/man/man1/gpuleak.1")])
        eq((m.returncode, m.stderr), (0, ""), "the installed man page renders")
        p = run_plain(["make", "--no-print-directory", "-C", harness.ROOT, "uninstall",
                       f"DESTDIR={dest}", "PREFIX=/usr"], timeout=60)
        eq(p.returncode, 0, f"make uninstall: {p.stderr}")
        left = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs]
        eq(left, [], "files left after uninstall")
    finally:
        shutil.rmtree(dest, ignore_errors=True)
