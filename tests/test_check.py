# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What `make check` runs beside the unit tests, without root: the golden reports of the
committed captures (tests/golden, one test per case: `gpuleak report`'s text, NDJSON and
stderr diffed against the expected files, the NDJSON checked against the schema too), and
the format check of the C sources (`make format-check`), and the documented exit statuses
against user/lib/exit.h."""
import glob
import os
import re
import subprocess
import sys

import harness
from harness import Fail, ROOT, check, check_sanitizers, eq, read_ndjson, test

GOLDEN = os.path.join(ROOT, "tests", "golden")


def _golden(name):
    def run():
        p = subprocess.run([os.path.join(GOLDEN, "golden.sh"), "--gpuleak", harness.GPULEAK,
                            name], capture_output=True, text=True, timeout=120,
                           env=harness.gpuleak_env())
        check_sanitizers(p.stdout + p.stderr)
        if p.returncode:
            raise Fail(f"golden case {name}:\n{p.stdout}{p.stderr}")
        read_ndjson(os.path.join(GOLDEN, name + ".ndjson"))
    run.__name__ = "golden_" + name
    return run


for args in sorted(glob.glob(os.path.join(GOLDEN, "*.args"))):
    test(_golden(os.path.basename(args)[:-len(".args")]), root=False)


@test(root=False)
def format_check():
    """Every C file under user/, bpf/, tests/ and bench/ is as clang-format (.clang-format)
    writes it."""
    p = subprocess.run(["make", "--no-print-directory", "-s", "format-check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise Fail(f"make format-check:\n{p.stdout}{p.stderr}")


# ---- the exit statuses: lib/exit.h against every place that documents them ----

def _exit_h():
    """({status: (name, comment)}, precedence, diff precedence) from user/lib/exit.h: its enum
    and the comment above it ("the first of these wins: 2 (...), 1 (...), ..." and "diff ...
    its gate is 5, after 2 and 1")."""
    with open(os.path.join(ROOT, "user", "lib", "exit.h")) as f:
        src = f.read()
    enum = re.search(r"enum gl_exit \{(.*?)\};", src, re.S).group(1)
    statuses = {}
    for name, num, comment in re.findall(
            r"GL_EXIT_(\w+)\s*=\s*(\d+),\s*/\*(.*?)\*/", enum, re.S):
        statuses[int(num)] = (name, " ".join(comment.replace("*", " ").split()))
    head = " ".join(src[:src.index("#ifndef")].replace("*", " ").split())
    m = re.search(r"the first of these wins: (.*?)\. diff", head)
    order = [int(x) for x in re.findall(r"(?:^|, )(\d) \(", m.group(1))]
    m = re.search(r"its gate is (\d), after (\d) and (\d)", head)
    diff_order = [int(m.group(2)), int(m.group(3)), int(m.group(1))]
    return statuses, order, diff_order


def _order(text, what):
    """The precedence a text states: "the first of 2, 1, 3, 4" and the like."""
    m = re.search(r"first of \**(\d(?:, \d)+)\**", text)
    check(m, f"{what}: states the precedence ('the first of ...'): {text[:300]!r}")
    return [int(x) for x in m.group(1).split(", ")]


def _flat(text):
    return " ".join(text.replace("`", "").split())


@test(root=False)
def exit_statuses_match_exit_h():
    """The statuses and their precedence in README.md, docs/verdict.md, docs/diff.md, the man
    page, HACKING.md and every --help are those of user/lib/exit.h: each number there with
    its meaning (3 the --fail-on-leak gate, 4 the command failed, 5 the diff regression gate),
    none that is not, and the precedence 2, 1, 3, 4 (diff: 2, 1, 5) as exit.h states it."""
    statuses, order, diff_order = _exit_h()
    eq(sorted(statuses), [0, 1, 2, 3, 4, 5], "exit.h's statuses")
    eq((order, diff_order), ([2, 1, 3, 4], [2, 1, 5]), "exit.h's precedence")
    # what each status must be called wherever it is listed
    means = {0: r"done", 1: r"runtime error|could not be read|unreadable", 2: r"usage error",
             3: r"--fail-on-leak found leaks", 4: r"(the )?(command|CMD)\b.*failed",
             5: r"--fail-on-regression found a regression"}
    check("--fail-on-leak" in statuses[3][1] and "--fail-on-regression" in statuses[5][1],
          f"exit.h names the gates: {statuses}")

    def listed(text, what, want):
        """text lists exactly the statuses want, each with its meaning."""
        got = {}
        for n, rest in re.findall(r"(?:^|[:;,(] |\| )(\d) (?:\| )?([^,;|]+)", text):
            got.setdefault(int(n), rest)
        eq(sorted(got), sorted(want), f"{what}: the statuses listed")
        for n in want:
            check(re.match(means[n], got[n], re.I) or re.search(means[n], got[n], re.I),
                  f"{what}: status {n} is {means[n]!r}, says {got[n]!r}")

    with open(os.path.join(ROOT, "README.md")) as f:
        readme = _flat(f.read())
    part = readme[readme.index("Exit status: 0"):]
    part = part[:part.index("exit-status)")]
    listed(part[:part.index("; the first of")], "README", [0, 1, 2, 3, 4, 5])
    eq(_order(part, "README"), order, "README's precedence")
    eq([int(x) for x in re.search(r"\(diff: (\d), (\d), (\d)\)", part).groups()], diff_order,
       "README's diff precedence")

    with open(os.path.join(ROOT, "docs", "verdict.md")) as f:
        verdict = f.read()
    sec = verdict[verdict.index("## Exit status"):]
    sec = sec[:sec.index("\n## ", 4)] if "\n## " in sec[4:] else sec
    rows = re.findall(r"^\| (\d) \| ([^|]+) \|", sec, re.M)
    eq(sorted(int(n) for n, _ in rows), sorted(statuses), "docs/verdict.md's table")
    for n, text in rows:
        text = _flat(text)
        check(re.search(means[int(n)], text, re.I), f"verdict.md: {n} is {means[int(n)]!r}: {text}")
    eq(_order(_flat(sec), "docs/verdict.md"), order, "docs/verdict.md's precedence")
    eq([int(x) for x in re.search(r"for diff, of (\d), (\d), (\d)", _flat(sec)).groups()],
       diff_order, "docs/verdict.md's diff precedence")

    with open(os.path.join(ROOT, "docs", "diff.md")) as f:
        diff = _flat(f.read())
    sec = diff[diff.index("## Exit status"):diff.index("## Limitations")]
    listed(": " + re.sub(r"\(3 is .*?\)", "", sec.split("When several")[0])[15:], "docs/diff.md",
           [0, 1, 2, 5])
    eq([int(x) for x in re.search(r"first wins: (\d), then (\d) .*?, then (\d)", sec).groups()],
       diff_order, "docs/diff.md's precedence")

    with open(os.path.join(ROOT, "docs", "gpuleak.1")) as f:
        man = f.read()
    sec = man[man.index(".SH EXIT STATUS"):man.index(".SH", man.index(".SH EXIT STATUS") + 3)]
    entries = re.findall(r"^\.B (\d)\n(.*?)(?=^\.TP|^\.PP)", sec, re.M | re.S)
    eq(sorted(int(n) for n, _ in entries), sorted(statuses), "man page's EXIT STATUS")
    for n, text in entries:
        text = _flat(re.sub(r"\\f[BIR]|\\", "", text))
        check(re.search(means[int(n)], text, re.I) or
              (int(n) == 4 and re.search(r"command of run.*failed", text)),
              f"man page: {n} is {means[int(n)]!r}: {text}")
    eq(_order(_flat(sec), "man page"), order, "man page's precedence")
    eq([int(x) for x in re.search(r"For \\fBdiff\\fR, the first of (\d), (\d), (\d)",
                                  sec).groups()], diff_order, "man page's diff precedence")

    with open(os.path.join(ROOT, "HACKING.md")) as f:
        hacking = _flat(f.read())
    part = hacking[hacking.index("Exit statuses: 0"):]
    eq([int(x) for x in re.search(r"precedence: (\d), (\d), (\d), (\d)", part).groups()],
       order, "HACKING.md's precedence")

    # every --help: the statuses that command can give, each as exit.h means it
    can = {"": [0, 1, 2, 3, 4, 5], "run": [0, 1, 2, 3, 4], "record": [0, 1, 2, 3, 4], "attach": [0, 1, 2, 3],
           "report": [0, 1, 2, 3], "diff": [0, 1, 2, 5]}
    for cmd, want in can.items():
        p = subprocess.run([harness.GPULEAK] + ([cmd] if cmd else []) + ["--help"],
                           capture_output=True, text=True,
                           timeout=30, env=harness.gpuleak_env())
        eq(p.returncode, 0, f"{cmd} --help")
        text = _flat(p.stdout)
        part = text[text.index("EXIT STATUS:") + len("EXIT STATUS:"):]
        part = re.split(r"\.(?:\s|$)", part)[0]
        listed(": " + part.split("when several")[0].strip().replace("(1 and 2", "[1 and 2"),
               f"{cmd} --help", want)
        if 4 in want:
            eq(_order(part, f"{cmd} --help"), order, f"{cmd} --help's precedence")


@test(root=False)
def layers():
    """No folder of user/ includes a higher one (lib < probe < symbols < engine < output <
    capture < live < cli), libbpf only in live/ and cli/, every folder in a layer, output/
    reading the tracker only through engine/ (tests/layers.sh)."""
    p = subprocess.run([os.path.join(ROOT, "tests", "layers.sh")], capture_output=True,
                       text=True, timeout=60)
    if p.returncode:
        raise Fail(f"tests/layers.sh:\n{p.stdout}{p.stderr}")


@test(root=False)
def bench_targets_documented():
    """bench/README.md's table of targets is bench/bench.py's TARGETS: every key with its
    bound and direction, none more, and each row a label the benchmark prints (ROWS)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench", os.path.join(ROOT, "bench",
                                                                        "bench.py"))
    bench = importlib.util.module_from_spec(spec)
    # (no bench/__pycache__ left behind by a test)
    keep, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.dont_write_bytecode = keep
    with open(os.path.join(ROOT, "bench", "README.md")) as f:
        text = f.read()
    sec = text[text.index("## Targets"):text.index("\n## ", text.index("## Targets") + 3)]
    rows = re.findall(r"^\| ([^|]+?) \| `(\w+)` \| (<=|>=) ([\d.]+) \|", sec, re.M)
    got = {key: (float(v), "le" if op == "<=" else "ge") for _, key, op, v in rows}
    eq(got, {k: (float(t), how) for k, (t, how) in bench.TARGETS.items()},
       "bench/README.md's targets against bench.py's TARGETS")
    labels = {key: label.strip() for key, label, *_ in bench.ROWS}
    for label, key, _, _ in rows:
        check(key in labels, f"{key}: a row bench.py prints")
