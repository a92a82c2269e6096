# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What `make check` runs beside the unit tests, without root: the format check of the C
sources (`make format-check`)."""
import subprocess

from harness import Fail, ROOT, test


@test(root=False)
def format_check():
    """Every C file under user/, bpf/, tests/ and bench/ is as clang-format (.clang-format)
    writes it."""
    p = subprocess.run(["make", "--no-print-directory", "-s", "format-check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise Fail(f"make format-check:\n{p.stdout}{p.stderr}")
