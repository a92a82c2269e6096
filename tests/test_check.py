# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What `make check` runs beside the unit tests, without root: the golden reports of the
committed captures (tests/golden, one test per case: `gpuleak report`'s text, NDJSON and
stderr diffed against the expected files, the NDJSON checked against the schema too), and
the format check of the C sources (`make format-check`)."""
import glob
import os
import subprocess

import harness
from harness import Fail, ROOT, check_sanitizers, read_ndjson, test

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
