# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""How gpuleak conducts itself as root on a shared machine or a CI runner (issue 15): strings of
the target never reach the terminal raw, the exit status says what happened (the target's
failure, a marker that cannot be placed, a usage error), a process it started is never left
stopped, signals end every wait, and each refusal says what is wrong."""
import os
import re
import shutil
import signal
import subprocess
import tempfile

import harness
from harness import (ROOT, Fail, Proc, check, eq, env_for_targets, gpuleak_env, run_gpuleak,
                     run_plain, scenario, test, tmpfile)


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
