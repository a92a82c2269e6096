# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gpuleak's files (issue 15): it runs as root in directories others can write, so every file
it writes refuses links and anything but a regular file, replaces what the user had only once
the new file is whole, and every write is checked (exit 1, one line naming the output); every
file it reads by name is opened without waiting on a FIFO; "-" is standard output for the
outputs and standard input for `report` and `--rules`; a damaged capture is reported up to
the damage. Each test works in a directory of its own and says the exact exit status and
message."""
import contextlib
import gzip
import os
import pty
import shutil
import signal
import stat
import subprocess
import tempfile

import harness
from harness import (ROOT, check, check_sanitizers, eq, gpuleak_env, read_ndjson, scenario,
                     test)

CAPTURE = os.path.join(ROOT, "tests", "golden", "cuda_timeline.glc")
NOBODY = 65534
LINK_WHY = ("a symbolic link: gpuleak writes no file through a link (name the file it points "
            "to, or remove the link)")
PIPE_HINT = "(a pipe is read as standard input: -)"


def not_regular(kind):
    return (f"{kind}, not a regular file: gpuleak writes and replaces regular files only "
            f"(- is standard output)")


@contextlib.contextmanager
def workdir(sticky=False):
    """A directory of the test's own; sticky: world-writable with the sticky bit, as /tmp."""
    d = tempfile.mkdtemp(prefix="gpuleak-files-")
    try:
        os.chmod(d, 0o1777 if sticky else 0o755)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


class Ran:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err


def gl(args, stdin=None, input=None, env=None, timeout=30, binary=False, preexec=None):
    """gpuleak ARGS in a session of its own: a hang is a failure, and whatever it started
    is killed with it."""
    p = subprocess.Popen([harness.GPULEAK] + args, stdin=stdin if input is None else
                         subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env or gpuleak_env(), start_new_session=True,
                         preexec_fn=preexec)
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise harness.Fail(f"gpuleak {' '.join(args)} did not finish in {timeout} s (a hang)")
    err = err.decode(errors="replace")
    check_sanitizers(err)
    return Ran(p.returncode, out if binary else out.decode(errors="replace"), err)


def expect(r, rc, line, what):
    """Exit status rc and line among the lines of stderr."""
    eq(r.rc, rc, f"{what}: exit status (stderr: {r.err})")
    check(line in r.err.splitlines(), f"{what}: {line!r} in stderr: {r.err!r}")


def content(path):
    with open(path, "rb") as f:
        return f.read()


def put(path, data=b"precious\n", mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def others(d, keep):
    """What is in d besides the names in keep (nothing left beside a file)."""
    return sorted(set(os.listdir(d)) - set(keep))


def as_nobody(*cmd):
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] +
                   list(cmd), check=True)


@contextlib.contextmanager
def tmpfs(size="4k"):
    """A small tmpfs, or None where none can be mounted."""
    mnt = tempfile.mkdtemp(prefix="gpuleak-full-")
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt],
                       capture_output=True, text=True)
    try:
        yield None if m.returncode else mnt
    finally:
        if not m.returncode:
            subprocess.run(["umount", mnt], capture_output=True)
        os.rmdir(mnt)


def fill(mnt):
    """Fills the file system at mnt; returns the file that fills it."""
    path = os.path.join(mnt, "filler")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 512):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return path


# ---- outputs: links, FIFOs, devices, directories ----

@test
def outputs_never_follow_a_link_another_user_planted():
    """A sticky world-writable directory (as /tmp, owned by root, mode 1777) where user nobody
    planted x.json -> the victim, and evil -> a directory of root's: gpuleak as root refuses
    --json, --folded, --perfetto, --svg (report and run) and record's -o at the link, and a
    path through evil, with the kernel's fs.protected_symlinks=0 as on this machine; the
    victim is untouched and nothing is left beside it."""
    with workdir(sticky=True) as tmp, workdir() as etc:
        victim = os.path.join(etc, "passwd")
        put(victim)
        link = os.path.join(tmp, "x.json")
        as_nobody("ln", "-s", victim, link)
        as_nobody("ln", "-s", etc, os.path.join(tmp, "evil"))
        eq(os.lstat(link).st_uid, NOBODY, "the link is nobody's")
        via = os.path.join(tmp, "evil", "passwd")
        via_why = ("evil (on the way) is a symbolic link of user 65534 in a sticky "
                   "world-writable directory: not followed")
        for opt in ("--json", "--folded", "--perfetto", "--svg"):
            for path, why in ((link, LINK_WHY), (via, via_why)):
                r = gl(["report", CAPTURE, opt, path])
                expect(r, 1, f"gpuleak: cannot write {path}: {why}", f"report {opt} {path}")
        r = gl(["run", "--json", link, "--", scenario("leak3")])
        expect(r, 1, f"gpuleak: cannot write {link}: {LINK_WHY}", "run --json at the link")
        for force in ([], ["--force"]):
            r = gl(["record", "-o", link] + force + ["--", scenario("leak3")])
            expect(r, 1, f"gpuleak: cannot create {link}: {LINK_WHY}", f"record {force}")
        eq(content(victim), b"precious\n", "the victim is untouched")
        eq(others(tmp, ["x.json", "evil"]), [], "nothing made beside the link")
        eq(others(etc, ["passwd"]), [], "nothing made where evil points")
        # a link of the user's own, in a directory that is not world-writable: followed
        mine = os.path.join(etc, "mine.json")
        os.symlink(os.path.join(etc, "real"), os.path.join(etc, "dirlink"))
        os.mkdir(os.path.join(etc, "real"))
        r = gl(["report", CAPTURE, "--json", os.path.join(etc, "dirlink", "v.json")])
        eq(r.rc, 0, f"through root's own link to a directory ({r.err})")
        check(os.path.exists(os.path.join(etc, "real", "v.json")), "written where it leads")
        check(not os.path.exists(mine), "nothing else")


@test
def outputs_refuse_fifos_devices_and_directories():
    """A FIFO (opened for writing it would block gpuleak until a reader came), a device node
    (--force -o /dev/full replaced it with a regular file) and a directory (record -o DIR said
    "File exists") are refused before anything runs, each in one line, and stay as they
    were."""
    with workdir() as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        full = os.path.join(d, "full")
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        sub = os.path.join(d, "dir")
        os.mkdir(sub)
        for opt in ("--json", "--svg", "--folded", "--perfetto"):
            r = gl(["report", CAPTURE, opt, fifo])
            expect(r, 1, f"gpuleak: cannot write {fifo}: {not_regular('a FIFO')}", opt)
            r = gl(["report", CAPTURE, opt, full])
            expect(r, 1, f"gpuleak: cannot write {full}: {not_regular('a character device')}",
                   opt)
            r = gl(["report", CAPTURE, opt, sub])
            expect(r, 1, f"gpuleak: cannot write {sub}: a directory (name a file in it)", opt)
        r = gl(["run", "--json", full, "--fail-on-leak", "--", scenario("leak3")])
        expect(r, 1, f"gpuleak: cannot write {full}: {not_regular('a character device')}",
               "run --json DEVICE")
        for force in ([], ["--force"]):
            r = gl(["record", "-o", full] + force + ["--", scenario("leak3")])
            expect(r, 1, f"gpuleak: cannot create {full}: {not_regular('a character device')}",
                   f"record -o DEVICE {force}")
            r = gl(["record", "-o", fifo] + force + ["--", scenario("leak3")])
            expect(r, 1, f"gpuleak: cannot create {fifo}: {not_regular('a FIFO')}",
                   f"record -o FIFO {force}")
            r = gl(["record", "-o", sub] + force + ["--", scenario("leak3")])
            expect(r, 1, f"gpuleak: cannot create {sub}: a directory (name a file in it)",
                   f"record -o DIR {force}")
        check(stat.S_ISCHR(os.lstat(full).st_mode), "the device node is still one")
        check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is still one")
        eq(others(d, ["fifo", "full", "dir"]), [], "nothing made beside them")
        eq(os.listdir(sub), [], "nothing made in the directory")
        r = gl(["record", "-o", "-", "--", "true"])
        expect(r, 2, "gpuleak record: -o -: a capture is a file (its header is rewritten at "
               "the end); write one, then gzip or copy it", "record -o -")


# ---- what the user had survives ----

@test
def failed_starts_leave_outputs_as_they_were():
    """attach -p 999999 --json prev.json emptied prev.json, and every failed start left 0-byte
    files: now an existing output is replaced only at the end of a session that ran, and a
    new one is taken back."""
    with workdir() as d:
        outs = {o: os.path.join(d, "prev" + o.replace("--", ".")) for o in
                ("--json", "--folded", "--perfetto", "--svg")}
        for p in outs.values():
            put(p, b"what the user had\n")
        args = sum(([o, p] for o, p in outs.items()), [])
        new = sum(([o, os.path.join(d, "new" + o.replace("--", "."))] for o in outs), [])
        for cmd in (["attach", "-p", "999999"], ["run", "--", os.path.join(d, "nosuch")]):
            for a in (args, new):
                r = gl(cmd + a)
                eq(r.rc, 1, f"{cmd}: a failed start ({r.err})")
        r = gl(["report", os.path.join(d, "prev.json")] + args[2:])
        eq(r.rc, 1, f"report of what is no capture ({r.err})")
        for p in outs.values():
            eq(content(p), b"what the user had\n", f"{p} as it was")
        eq(others(d, [os.path.basename(p) for p in outs.values()]), [],
           "no empty file, nothing beside")
        # a session that ran replaces them, each by a whole file, 0600
        r = gl(["run", "--interval", "0"] + args + ["--", scenario("leak3")])
        eq(r.rc, 0, f"run ({r.err})")
        vs = [x for x in read_ndjson(outs["--json"]) if x["type"] == "verdict"]
        eq(vs[0]["live_bytes"], 3 << 20, "the new verdict")
        for p in outs.values():
            check(content(p) != b"what the user had\n", f"{p} replaced")
            eq(stat.S_IMODE(os.stat(p).st_mode), 0o600, f"{p} private")
        eq(others(d, [os.path.basename(p) for p in outs.values()]), [], "nothing beside")


@test
def json_is_streamed_to_a_new_file_and_replaces_an_old_one_at_the_end():
    """The design of --json: a new file is written as the session goes (it can be followed:
    `tail -f`, the suite's own NdjsonTail), an existing one keeps its contents until the
    session's verdicts are whole, then is replaced by rename."""
    with workdir() as d:
        prev = os.path.join(d, "prev.json")
        put(prev, b"old\n")
        fresh = os.path.join(d, "fresh.json")
        a = harness.Attached("loop", [100000, 65536],
                             gl_args=["--interval", "200ms", "--json", prev])
        b = harness.Attached("loop", [100000, 65536],
                             gl_args=["--interval", "200ms", "--json", fresh])
        try:
            a.wait_attached()
            b.wait_attached()
            a.target.send()
            b.target.send()
            tail = harness.NdjsonTail(fresh)
            harness.wait_for("an interval record in the new file", lambda: tail.new() or None)
            eq(content(prev), b"old\n", "the old file whole while the session runs")
            beside = others(d, ["prev.json", "fresh.json"])
            eq(len(beside), 1, f"one file beside it: {beside}")
            check(beside[0].startswith(".prev.json."), f"named after it: {beside}")
            for x in (a, b):
                x.gl.kill(signal.SIGINT)
                eq(x.gl.finish(), 0, f"gpuleak exits at SIGINT: {x.gl.text('err')}")
            for p in (prev, fresh):
                vs = [r for r in read_ndjson(p) if r["type"] == "verdict"]
                eq(len(vs), 1, f"{p}: its verdict")
            eq(others(d, ["prev.json", "fresh.json"]), [], "nothing left beside")
        finally:
            a.cleanup()
            b.cleanup()
            for x in (a, b):
                if os.path.exists(x.json_path):
                    os.unlink(x.json_path)


@test
def record_force_replaces_only_with_a_finished_capture():
    """record --force deleted the old capture before it checked anything: a mistyped pid or a
    missing command lost it. Now the new capture is written beside it and renamed over it at a
    clean finish; killed midway, the old one is whole and the new one is beside it."""
    with workdir() as d:
        prev = os.path.join(d, "prev.glc")
        shutil.copy(CAPTURE, prev)
        old = content(prev)
        r = gl(["record", "--force", "-o", prev, "-p", "999999"])
        eq(r.rc, 1, f"a mistyped pid ({r.err})")
        r = gl(["record", "--force", "-o", prev, "--", os.path.join(d, "nosuch")])
        eq(r.rc, 1, f"a missing command ({r.err})")
        eq(content(prev), old, "the old capture is whole")
        eq(others(d, ["prev.glc"]), [], "nothing beside it")
        r = gl(["record", "-o", prev, "--", scenario("leak3")])
        expect(r, 1, f"gpuleak: cannot create {prev}: File exists (--force replaces it)",
               "without --force")
        # killed while recording: the old capture stays, the new one is beside it
        p = harness.Proc([harness.GPULEAK, "record", "--force", "-o", prev, "--interval", "0",
                          "--", scenario("loop"), "100000", "65536"], env=gpuleak_env(),
                         stdin=False)
        try:
            p.wait_line(r"tracing pid (\d+)", stream="err")
            beside = []

            def written():
                beside[:] = [os.path.join(d, n) for n in others(d, ["prev.glc"])]
                return True if beside and os.path.getsize(beside[0]) > 1024 else None
            harness.wait_for("blocks written beside the old capture", written)
            p.kill(signal.SIGKILL)
            p.p.wait(timeout=10)
        finally:
            p.kill(signal.SIGKILL)
        eq(content(prev), old, "killed: the old capture is whole")
        eq(len(beside), 1, f"the new one beside it: {beside}")
        check(os.path.basename(beside[0]).startswith(".prev.glc."), f"named: {beside}")
        r = gl(["report", beside[0]])
        eq(r.rc, 0, f"what the killed recorder wrote reads ({r.err})")
        check("capture truncated" in r.err, f"as a truncated capture: {r.err}")
        os.unlink(beside[0])
        # a clean finish replaces it
        r = gl(["record", "--force", "-o", prev, "--interval", "0", "--",
                scenario("leak3")])
        eq(r.rc, 0, f"record --force ({r.err})")
        check(content(prev) != old, "replaced")
        eq(stat.S_IMODE(os.stat(prev).st_mode), 0o600, "private")
        eq(others(d, ["prev.glc"]), [], "nothing left beside")
        r = gl(["report", prev, "--json", "-"])
        eq(r.rc, 0, f"the new capture reads ({r.err})")


# ---- write errors ----

@test
def write_errors_are_exit_1_naming_the_output():
    """--json on a full disk exited 0 with an empty file, in run and report, even with
    --fail-on-leak (and the gate's 3); so did standard output on a full device. Every write
    and close is checked: exit 1, one line naming what could not be written; an existing file
    is not replaced by a half-written one."""
    with tmpfs() as mnt:
        if not mnt:
            return "skip"
        prev = os.path.join(mnt, "prev.json")
        put(prev, b"good\n")
        fill(mnt)
        new = os.path.join(mnt, "new.json")
        for gate, rc in (([], 0), (["--fail-on-leak", "--max-live-at-exit", "0"], 3)):
            for path in (new, prev):
                r = gl(["run", "--interval", "0", "--json", path] + gate +
                       ["--", scenario("leak3")])
                expect(r, 1, f"gpuleak: writing {path}: No space left on device",
                       f"run --json on a full disk {gate} (else {rc})")
                r = gl(["report", CAPTURE, "--json", path] + gate)
                expect(r, 1, f"gpuleak: writing {path}: No space left on device",
                       f"report --json on a full disk {gate}")
                # (--perfetto said "Input/output error")
                for pic in ("--svg", "--folded", "--perfetto"):
                    r = gl(["report", CAPTURE, pic, path] + gate)
                    expect(r, 1, f"gpuleak: writing {path}: No space left on device",
                           f"report {pic} on a full disk {gate}")
        eq(content(prev), b"good\n", "the good file is not replaced")
        eq(others(mnt, ["prev.json", "new.json", "filler"]), [], "nothing left beside")
    # Room for part of it: the write fails midway (the Perfetto trace of CAPTURE is ~15 KiB,
    # 12 KiB are free), the old file stays whole, nothing half-written is left beside it.
    with tmpfs("16k") as mnt:
        if not mnt:
            return "skip"
        prev = os.path.join(mnt, "prev.json")
        put(prev, b"good\n")
        r = gl(["report", CAPTURE, "--perfetto", prev])
        expect(r, 1, f"gpuleak: writing {prev}: No space left on device", "midway")
        eq(content(prev), b"good\n", "the good file is not replaced by a truncated one")
        eq(others(mnt, ["prev.json"]), [], "nothing left beside")
        r = gl(["report", CAPTURE, "--json", prev])
        eq(r.rc, 0, f"what fits is written ({r.err})")
        check(content(prev).startswith(b'{"type":'), "replaced by the whole new file")
    with open("/dev/full", "wb") as full:
        for args in (["report", CAPTURE], ["report", CAPTURE, "--json", "-"],
                     ["report", CAPTURE, "--fail-on-leak", "--max-live-at-exit", "0"],
                     ["report", "--blocks", CAPTURE],
                     ["run", "--", scenario("leak3")]):
            p = subprocess.run([harness.GPULEAK] + args, stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=30, env=gpuleak_env())
            check_sanitizers(p.stderr)
            eq(p.returncode, 1, f"{args} > /dev/full: exit status ({p.stderr})")
            check("gpuleak: writing standard output: No space left on device" in
                  p.stderr.splitlines(), f"{args} > /dev/full: {p.stderr!r}")


# ---- "-": standard output and standard input ----

@test(root=False)
def dash_is_standard_output_for_one_output():
    """--json -, --folded -, --perfetto -, --svg -: that file alone on standard output (a pipe
    to jq), the text report on standard error; two of them at once is a usage error."""
    r = gl(["report", CAPTURE, "--json", "-"])
    eq(r.rc, 0, f"report --json - ({r.err})")
    lines = r.out.splitlines()
    check(lines and all(line.startswith("{") for line in lines), f"NDJSON only: {r.out[:300]}")
    path = os.path.join(tempfile.mkdtemp(prefix="gpuleak-files-"), "v.ndjson")
    try:
        with open(path, "w") as f:
            f.write(r.out)
        eq(len([x for x in read_ndjson(path) if x["type"] == "verdict"]), 1, "one verdict")
    finally:
        shutil.rmtree(os.path.dirname(path))
    check("still live:" in r.err, f"the text report on stderr: {r.err[:300]}")
    r = gl(["report", CAPTURE, "--folded", "-"])
    eq(r.rc, 0, f"--folded - ({r.err})")
    check(r.out and all(line.rsplit(" ", 1)[1].isdigit() for line in r.out.splitlines()),
          f"folded stacks only: {r.out[:300]}")
    r = gl(["report", CAPTURE, "--svg", "-"])
    check(r.rc == 0 and "<svg" in r.out[:200] and r.out.rstrip().endswith("</svg>"),
          f"--svg -: {r.out[:100]}")
    r = gl(["report", CAPTURE, "--json", "-", "--svg", "-"])
    expect(r, 2, "gpuleak report: one output only can be - (standard output)", "two on stdout")


@test
def run_json_dash_keeps_the_commands_output_out_of_it():
    """run --json -: the NDJSON alone on standard output; the command's own output (leak3
    prints "done") goes to standard error."""
    r = gl(["run", "--interval", "0", "--json", "-", "--", scenario("leak3")])
    eq(r.rc, 0, f"run --json - ({r.err})")
    check(all(line.startswith('{"type":') for line in r.out.splitlines()),
          f"NDJSON only: {r.out[:300]}")
    check("done" in r.err.splitlines(), f"the command's output on stderr: {r.err}")


@test(root=False)
def report_reads_standard_input():
    """report - reads a pipe (zcat x.glc.gz | gpuleak report -), as a shell's <(...) does, and
    a file given as standard input; the file is read twice, so a pipe is copied to an unnamed
    file in $TMPDIR first (its size on disk, 256 KiB of memory at a time). --rules - too; not
    both at once, and never a terminal."""
    want = gl(["report", CAPTURE, "--json", "-"])
    eq(want.rc, 0, f"report FILE ({want.err})")
    with workdir() as d:
        gz = os.path.join(d, "x.glc.gz")
        with open(gz, "wb") as f:
            f.write(gzip.compress(content(CAPTURE)))
        zcat = subprocess.Popen(["zcat", gz], stdout=subprocess.PIPE)
        r = gl(["report", "-", "--json", "-"], stdin=zcat.stdout)
        zcat.stdout.close()
        zcat.wait()
    eq(r.rc, 0, f"zcat | report - ({r.err})")

    def verdict(out):
        v = [x for x in map(__import__("json").loads, out.splitlines())
             if x["type"] == "verdict"][0]
        v["capture"].pop("file")
        return v
    eq(verdict(r.out), verdict(want.out), "the same verdict from a pipe")
    check(r.err.startswith("capture standard input: recorded"), f"named: {r.err[:100]}")
    with open(CAPTURE, "rb") as f:
        r = gl(["report", "-", "--json", "-"], stdin=f)
    eq(verdict(r.out), verdict(want.out), "the same verdict from a file as standard input")
    # <(cat FILE): a /dev/fd/N pipe
    r = subprocess.run(["bash", "-c", f'exec "$0" report <(cat "$1") --json -',
                        harness.GPULEAK, CAPTURE], capture_output=True, text=True, timeout=30,
                       env=gpuleak_env())
    check_sanitizers(r.stderr)
    eq(r.returncode, 0, f"report <(cat FILE) ({r.stderr})")
    eq(verdict(r.stdout), verdict(want.out), "the same verdict from <(...)")
    # rules from standard input
    r = gl(["report", CAPTURE, "--json", "-", "--rules", "-"],
           input=b"persistent site=kv_cache_init*\n")
    eq(r.rc, 0, f"--rules - ({r.err})")
    check('"rule":"persistent site=kv_cache_init*"' in r.out, f"the rule used: {r.out[:200]}")
    # read after the options, its rules still where --rules - stands (the first match decides)
    r = gl(["report", CAPTURE, "--rule", "ignore api=nosuch1", "--rules", "-", "--rule",
            "ignore api=nosuch3"], input=b"ignore api=nosuch2\n")
    eq([l.split("matched nothing: ")[1] for l in r.err.splitlines() if "nosuch" in l],
       ["ignore api=nosuch1", "ignore api=nosuch2", "ignore api=nosuch3"], "rules in order")
    r = gl(["report", CAPTURE, "--rules", "-"], input=b"# from a pipe\npersistent bogus\n")
    expect(r, 2, "gpuleak: standard input:2:12: expected key=value or 'once', got 'bogus'",
           "a bad rule from standard input")
    # both from standard input, in either order: refused before anything is read (the capture
    # was read as rules: "standard input:1:1: unknown rule kind '\x89GLCAP'" came first)
    for args in (["-", "--rules", "-"], ["--rules", "-", "-"]):
        r = gl(["report"] + args, input=content(CAPTURE))
        eq((r.rc, [l for l in r.err.splitlines() if not l.startswith("Try ")]),
           (2, ["gpuleak report: standard input is read once: one --rules - or report -"]),
           f"report {' '.join(args)}: one line (stderr: {r.err!r})")
    r = gl(["report", CAPTURE, "--rules", "-", "--rules", "-"], input=b"")
    expect(r, 2, "gpuleak report: standard input is read once: one --rules - or report -",
           "--rules - twice")
    # a device as standard input: /dev/zero would fill $TMPDIR and never end
    with open("/dev/zero", "rb") as zero:
        r = gl(["report", "-"], stdin=zero)
    expect(r, 1, "gpuleak: standard input: a character device, not a regular file or a pipe",
           "report - < /dev/zero")
    # a terminal: nothing to wait for
    master, slave = pty.openpty()
    try:
        r = gl(["report", "-"], stdin=slave)
    finally:
        os.close(master)
        os.close(slave)
    expect(r, 1, "gpuleak: standard input: a terminal: give a capture file, or pipe one in "
           "(zcat x.glc.gz | gpuleak report -)", "report - from a terminal")


@test
def report_stdin_with_no_room_to_copy_it_says_where():
    with tmpfs() as mnt:
        if not mnt:
            return "skip"
        fill(mnt)
        env = gpuleak_env()
        env["TMPDIR"] = mnt
        cat = subprocess.Popen(["cat", CAPTURE], stdout=subprocess.PIPE)
        r = gl(["report", "-"], stdin=cat.stdout, env=env)
        cat.stdout.close()
        cat.wait()
        expect(r, 1, f"gpuleak: standard input: copying it to {mnt} (it is read twice): No "
               "space left on device", "no room in $TMPDIR")
        eq(others(mnt, ["filler"]), [], "nothing left there")


# ---- reading: FIFOs never hang gpuleak ----

@test(root=False)
def fifos_and_directories_by_name_never_hang_reading():
    """report FIFO, --rules FIFO and probes --lib FIFO blocked in open (a FIFO without a
    writer): now the type is checked first (O_PATH, which neither blocks nor runs a driver),
    and a directory is said to be one (probes --lib DIR said "Exec format error")."""
    with workdir() as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        sub = os.path.join(d, "dir")
        os.mkdir(sub)
        r = gl(["report", fifo], timeout=10)
        expect(r, 1, f"gpuleak: {fifo}: a FIFO, not a regular file {PIPE_HINT}", "report FIFO")
        r = gl(["report", sub], timeout=10)
        expect(r, 1, f"gpuleak: {sub}: a directory, not a regular file", "report DIR")
        r = gl(["report", CAPTURE, "--rules", fifo], timeout=10)
        expect(r, 2, f"gpuleak: --rules {fifo}: a FIFO, not a regular file {PIPE_HINT}",
               "--rules FIFO")
        r = gl(["report", CAPTURE, "--rules", sub], timeout=10)
        expect(r, 2, f"gpuleak: --rules {sub}: a directory, not a regular file", "--rules DIR")
        r = gl(["probes", "--lib", fifo], timeout=10)
        expect(r, 1, f"gpuleak: {fifo}: a FIFO, not a regular file {PIPE_HINT}",
               "probes --lib FIFO")
        r = gl(["probes", "--lib", sub], timeout=10)
        expect(r, 1, f"gpuleak: {sub}: a directory, not a regular file", "probes --lib DIR")
        # --preset NAME reads GPULEAK_RULES_DIR/NAME.rules: a folder others may write to.
        os.mkfifo(os.path.join(d, "planted.rules"))
        r = gl(["report", CAPTURE, "--preset", "planted"], timeout=10,
               env=dict(gpuleak_env(), GPULEAK_RULES_DIR=d))
        expect(r, 2, f"gpuleak: {d}/planted.rules: a FIFO, not a regular file {PIPE_HINT}",
               "--preset FIFO")
        text = os.path.join(d, "notes.txt")
        put(text, b"hello\n")
        r = gl(["probes", "--lib", text], timeout=10)
        expect(r, 1, f"gpuleak: {text}: not an ELF object (Exec format error)",
               "probes --lib of a text file")


@test
def step_marker_in_a_fifo_never_hangs():
    """run --step sym:FIFO:x forked the child, blocked in open and ignored SIGTERM and SIGINT:
    the FIFO is never opened now; a marker that cannot be placed is a usage error before the
    command runs (exit status 2)."""
    with workdir() as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        r = gl(["run", "--interval", "0", "--step", f"sym:{fifo}:x", "--",
                scenario("leak3")], timeout=30)
        expect(r, 2, f"gpuleak: --step sym:{fifo}:x: {fifo} is not a regular file",
               "run --step sym:FIFO:x")


@test(root=False)
def a_bad_rules_file_is_escaped_with_its_position():
    """A rules file with terminal escapes in a bad line: the message says FILE:LINE:COL and
    shows the bytes as \\xNN, never sends them to the terminal."""
    with workdir() as d:
        bad = os.path.join(d, "bad.rules")
        put(bad, b"# ok\npersistent site=a*\npersistent \x1b]0;PWNED\x07 \xff\n")
        r = gl(["report", CAPTURE, "--rules", bad])
        expect(r, 2, f"gpuleak: {bad}:3:12: expected key=value or 'once', got "
               "'\\x1b]0;PWNED\\x07'", "a bad rules file")
        check(not any(c < " " and c != "\n" or c == "\x7f" for c in r.err),
              f"no control character reaches stderr: {r.err!r}")
        r = gl(["report", CAPTURE, "--rule", "ignore api=\x1b[2J bogus"])
        expect(r, 2, "gpuleak: --rule #1:1:17: expected key=value or 'once', got 'bogus'",
               "--rule")
        r = gl(["report", CAPTURE, "--rule", "\x1b[2J"])
        check("\x1b" not in r.err and "\\x1b[2J" in r.err, f"escaped: {r.err!r}")
