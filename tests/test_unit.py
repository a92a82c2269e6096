# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""C unit tests (tests/unit/*.c), built under ASan/UBSan by make; each line they print is
one result. Registered as one harness test per binary. They need no root and no BPF, and
build their own fixtures (the test libraries `make check` builds beside them, temporary
files, a mount namespace of their own): `make check` runs them."""
import glob
import os
import subprocess

from harness import OUT, Fail, test, check_sanitizers

UNIT = os.path.join(OUT, "tests", "unit")


def _make(path):
    def run():
        p = subprocess.run([path], capture_output=True, text=True, timeout=120)
        check_sanitizers(p.stderr)
        if p.returncode:
            raise Fail(f"{os.path.basename(path)} failed:\n{p.stdout}{p.stderr}")
    run.__name__ = "unit_" + os.path.basename(path)[len("test_"):]
    return run


for src in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "unit", "test_*.c"))):
    test(_make(os.path.join(UNIT, os.path.basename(src)[:-2])), root=False)
