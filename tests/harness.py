# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Test harness: runs gpuleak for real (root, real uprobes) against scenario programs.

Tests are plain functions registered with @test; each asserts exact numbers from the
verdict gpuleak writes. Helpers here start targets, wait for handshake lines and parse
NDJSON. Nothing here imitates any part of gpuleak. Tests registered with
@test(root=False) need no root, no BPF and no target (unit tests, golden reports, the
format check): `make check` runs those alone (--check), `make test` runs everything.

Tests wait for counts, never for time: a test that needs N steps done waits until gpuleak
has seen them (wait_for: an interval record, a capture's whole blocks, a metric), with a
timeout that only bounds a hang; no assertion is about how much happens in a wall-clock
duration, and rates are checked against rates measured in the same run.
"""
import codecs
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, ".output")
BIN = os.path.join(OUT, "tests", "bin")
LIB = os.path.join(OUT, "tests", "lib")
GPULEAK = os.path.join(ROOT, "gpuleak")
TIMEOUT = 60

_tests = []


def test(fn=None, *, root=True):
    """Registers fn. root=False: it needs no root, BPF or target (`make check` runs it)."""
    def register(f):
        f.needs_root = root
        _tests.append(f)
        return f
    return register(fn) if fn else register


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise Fail(f"{what}: expected {expected!r}, got {actual!r}")


def scenario(name):
    path = os.path.join(BIN, name)
    check(os.path.exists(path), f"scenario {name} not built ({path})")
    return path


def tmpfile(suffix):
    fd, path = tempfile.mkstemp(prefix="gpuleak-test-", suffix=suffix)
    os.close(fd)
    os.unlink(path)
    return path


def env_for_targets(extra=None):
    env = dict(os.environ)
    # ASan in gpuleak must not leak into targets through the environment.
    env.pop("LD_PRELOAD", None)
    if extra:
        env.update(extra)
    return env


def gpuleak_env():
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=99")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=98")
    return env


class Result:
    def __init__(self, rc, out, err, records):
        self.rc, self.out, self.err, self.records = rc, out, err, records

    def verdicts(self):
        return [r for r in self.records if r.get("type") == "verdict"]

    def verdict(self, pid=None):
        vs = self.verdicts()
        if pid is not None:
            vs = [v for v in vs if v["pid"] == pid]
        check(len(vs) == 1, f"expected one verdict, got {len(vs)}; stderr:\n{self.err}")
        return vs[0]


SCHEMA = os.path.join(ROOT, "docs", "gpuleak.schema.json")
DIFF_SCHEMA = os.path.join(ROOT, "docs", "gpuleak-diff.schema.json")
_validators = {}


def validator(rec=None):
    """Every NDJSON record any test reads is checked against its schema in docs/: those of
    gpuleak diff (types diff, diff_process) against gpuleak-diff.schema.json, the others
    against gpuleak.schema.json."""
    path = DIFF_SCHEMA if rec is not None and str(rec.get("type", "")).startswith("diff") \
        else SCHEMA
    if path not in _validators:
        import jsonschema  # Debian's python3-jsonschema (scripts/install-deps.sh)
        with open(path) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        _validators[path] = jsonschema.Draft202012Validator(schema)
    return _validators[path]


def read_ndjson(path):
    recs = []
    if not os.path.exists(path):
        return recs
    with open(path) as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if line:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise Fail(f"{path}:{i}: invalid JSON: {e}: {line[:200]}")
                v = validator(rec if isinstance(rec, dict) else None)
                errors = sorted(v.iter_errors(rec), key=lambda e: e.path)
                if errors:
                    e = errors[0]
                    raise Fail(f"{path}:{i}: record does not match "
                               f"docs/{os.path.basename(v.schema['$id'])}: "
                               f"{e.message} at {list(e.absolute_path)}: {line[:300]}")
                recs.append(rec)
    return recs


class NdjsonTail:
    """An NDJSON file gpuleak is still writing, read on from where the last read stopped:
    whole lines only, and only those that start with prefix (a soak writes hundreds of
    thousands of step records beside its interval records). Not validated here: the test
    reads the finished file with read_ndjson."""

    def __init__(self, path, prefix='{"type":"interval"'):
        self.path, self.prefix, self.off, self.partial = path, prefix.encode(), 0, b""

    def new(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.off)
                data = f.read()
        except FileNotFoundError:
            return []
        self.off += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        return [json.loads(l) for l in lines if l.startswith(self.prefix)]


def wait_for(what, poll, timeout=TIMEOUT):
    """Calls poll() until it returns something other than None, and returns that: for a
    test to wait until gpuleak has seen a count of work (steps, calls, blocks). The timeout
    only bounds a hang; how long the work takes is no part of any result."""
    deadline = time.monotonic() + timeout
    while True:
        got = poll()
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise Fail(f"timeout ({timeout} s) waiting for {what}")
        time.sleep(0.05)


def wait_interval(tail, pred, what, timeout=TIMEOUT):
    """The first interval record (gpuleak --interval, --json) after those already read
    from tail for which pred holds."""
    def poll():
        return next((r for r in tail.new() if pred(r)), None)
    return wait_for(what, poll, timeout)


def check_sanitizers(err):
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        check(marker not in err, f"sanitizer report from gpuleak:\n{err}")


def run_gpuleak(args, timeout=TIMEOUT, expect_rc=0, env=None):
    """gpuleak ARGS with --json; returns Result. Checks the exit code."""
    json_path = tmpfile(".ndjson")
    cmd = [GPULEAK] + args[:1] + ["--json", json_path] + args[1:]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=env or gpuleak_env())
    res = Result(p.returncode, p.stdout, p.stderr, read_ndjson(json_path))
    if os.path.exists(json_path):
        os.unlink(json_path)
    check_sanitizers(p.stderr)
    if expect_rc is not None:
        eq(p.returncode, expect_rc, f"exit code of {' '.join(cmd)} (stderr: {p.stderr})")
    return res


def run_plain(cmd, timeout=TIMEOUT, env=None, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=env or gpuleak_env(), **kw)


class Proc:
    """A process whose stdout/stderr lines we can wait for."""

    def __init__(self, cmd, env=None, stdin=True):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  bufsize=1, env=env, start_new_session=True)
        self.lines = {"out": [], "err": []}
        self.partial = {"out": "", "err": ""}
        self.decoders = {k: codecs.getincrementaldecoder("utf-8")(errors="replace")
                         for k in ("out", "err")}
        self.pid = self.p.pid

    def _pump(self, timeout):
        # Raw reads, split here: a buffered readline() can pull two lines off the pipe and
        # leave the second in its buffer, where select() never reports it.
        streams = {self.p.stdout: "out", self.p.stderr: "err"}
        r, _, _ = select.select([s for s in streams if not s.closed], [], [], timeout)
        got = False
        for s in r:
            name = streams[s]
            data = os.read(s.fileno(), 65536)
            if not data:
                continue
            got = True
            text = self.partial[name] + self.decoders[name].decode(data)
            *done, self.partial[name] = text.split("\n")
            self.lines[name] += [line + "\n" for line in done]
        return got

    def wait_line(self, pattern, stream="out", timeout=20, nth=1):
        """The nth line of stream (counted from its start) that matches pattern."""
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        seen = found = 0
        while True:
            for line in self.lines[stream][seen:]:
                m = rx.search(line)
                if m:
                    found += 1
                    if found == nth:
                        return m
            seen = len(self.lines[stream])
            left = deadline - time.time()
            if left <= 0:
                raise Fail(f"timeout waiting for /{pattern}/ on {stream}; "
                           f"out={''.join(self.lines['out'])!r} err={''.join(self.lines['err'])!r}")
            if not self._pump(min(left, 0.2)) and self.p.poll() is not None:
                # drain what is left
                while self._pump(0):
                    pass
                if not any(rx.search(l) for l in self.lines[stream][seen:]):
                    raise Fail(f"process exited ({self.p.returncode}) before /{pattern}/; "
                               f"out={''.join(self.lines['out'])!r} err={''.join(self.lines['err'])!r}")

    def send(self, text="go\n"):
        self.p.stdin.write(text)
        self.p.stdin.flush()

    def finish(self, timeout=TIMEOUT, keep_stdin=False):
        """keep_stdin: wait for the exit with stdin still open. communicate() closes it first,
        and a target of `gpuleak run` that shares that pipe and exits at its end would race
        gpuleak's detach."""
        deadline = time.time() + timeout
        while keep_stdin and self.p.poll() is None and time.time() < deadline:
            self._pump(0.2)
        try:
            out, err = self.p.communicate(timeout=max(deadline - time.time(), 1))
        except subprocess.TimeoutExpired:
            self.kill()
            raise Fail("process did not exit in time")
        self.lines["out"].append(self.partial["out"] + (out or ""))
        self.lines["err"].append(self.partial["err"] + (err or ""))
        self.partial = {"out": "", "err": ""}
        return self.p.returncode

    def text(self, stream):
        return "".join(self.lines[stream])

    def kill(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass


class Attached:
    """A scenario started with the sync handshake, and gpuleak attached to it."""

    def __init__(self, name, args=(), gl_args=(), env=None):
        """gl_args: gpuleak's options, or a function of the target's pid that returns them."""
        self.json_path = tmpfile(".ndjson")
        self.target = Proc([scenario(name)] + [str(a) for a in args],
                           env=env_for_targets(dict(SCENARIO_SYNC="1", **(env or {}))))
        m = self.target.wait_line(r"ready (\d+)")
        eq(int(m.group(1)), self.target.pid, "scenario pid")
        if callable(gl_args):
            gl_args = gl_args(self.target.pid)
        self.gl = Proc([GPULEAK, "attach", "-p", str(self.target.pid), "--json", self.json_path,
                        "--interval", "0"] + list(gl_args), env=gpuleak_env(), stdin=False)

    def wait_attached(self):
        self.gl.wait_line(r"tracing pid %d" % self.target.pid, stream="err")

    def finish(self, expect_rc=0):
        """Let the target exit, then collect gpuleak's verdict."""
        self.target.finish()
        rc = self.gl.finish()
        err = self.gl.text("err")
        check_sanitizers(err)
        eq(rc, expect_rc, f"gpuleak exit code (stderr: {err})")
        res = Result(rc, self.gl.text("out"), err, read_ndjson(self.json_path))
        if os.path.exists(self.json_path):
            os.unlink(self.json_path)
        return res

    def cleanup(self):
        self.target.kill()
        self.gl.kill(signal.SIGTERM)


def probe_rows(stdout):
    """The table rows of `gpuleak probes` (split), without the notes that follow it."""
    return [f for f in (l.split() for l in stdout.splitlines()[1:])
            if len(f) >= 6 and f[2].startswith("0x")]


def leak_sites(verdict, api=None):
    """{(api, function): (bytes, count)} from a verdict's leaks, function = symbol only."""
    out = {}
    for l in verdict["leaks"]:
        fn = l["site"].split("+")[0]
        if api and l["api"] != api:
            continue
        key = (l["api"], fn)
        b, c = out.get(key, (0, 0))
        out[key] = (b + l["bytes"], c + l["count"])
    return out


def run_fuzzer(name, runs):
    """libFuzzer target NAME (tests/fuzz/fuzz_NAME.c) for RUNS inputs (a count: the same
    work on any machine, from a fixed seed) over its committed seeds and corpus; fails with
    the fuzzer's report when it finds a crash, leak or timeout."""
    import shutil
    fuzz = os.path.join(OUT, "fuzz", "fuzz_" + name)
    d = os.path.join(ROOT, "tests", "fuzz", name)
    check(os.path.exists(fuzz), f"fuzzer not built ({fuzz}): make fuzz-build")
    work = tempfile.mkdtemp(prefix=f"gpuleak-fuzz-{name}-")
    found = False
    try:
        p = subprocess.run([fuzz, f"-runs={runs}", "-seed=1", "-timeout=10",
                            "-rss_limit_mb=2048", "-dict=" + os.path.join(d, "dict"),
                            "-artifact_prefix=" + work + "/", work] +
                           [os.path.join(d, x) for x in ("corpus", "seeds")
                            if os.path.isdir(os.path.join(d, x))],
                           capture_output=True, text=True, timeout=10 * TIMEOUT)
        if p.returncode:
            found = True
            raise Fail(f"fuzzer found a problem (artifacts in {work}):\n{p.stderr[-3000:]}")
        m = re.search(r"Done (\d+) runs", p.stderr)
        check(m and int(m.group(1)) == runs, f"fuzzer ran {runs} inputs: {p.stderr[-500:]}")
    finally:
        if not found:
            shutil.rmtree(work, ignore_errors=True)


def main(argv):
    import argparse
    global GPULEAK
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuleak", default=GPULEAK)
    ap.add_argument("-k", action="append", default=[],
                    help="run tests whose name contains this (repeat: any of them)")
    ap.add_argument("--check", action="store_true",
                    help="only the tests that need no root (what `make check` runs)")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args(argv)
    GPULEAK = os.path.abspath(a.gpuleak)
    passed = failed = skipped = 0
    t_all = time.time()
    for fn in _tests:
        if a.k and not any(k in fn.__name__ for k in a.k):
            continue
        if a.check and fn.needs_root:
            continue
        t0 = time.time()
        try:
            r = fn()
            if r == "skip":
                skipped += 1
                print(f"SKIP {fn.__name__}")
                continue
            passed += 1
            print(f"PASS {fn.__name__} ({time.time() - t0:.1f}s)")
        except Exception as e:  # noqa: BLE001 - a test harness reports every failure
            failed += 1
            print(f"FAIL {fn.__name__} ({time.time() - t0:.1f}s): {e}")
            if a.v or not isinstance(e, Fail):
                traceback.print_exc()
        sys.stdout.flush()
    print(f"# {time.time() - t_all:.1f}s")
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed else 0
