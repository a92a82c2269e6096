#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gpuleak's test suite: `make test` runs it as root against real processes.

Each test builds nothing itself (make does), starts real targets, attaches real uprobes
through the gpuleak binary under test and asserts exact bytes, counts and sites. The tests
that need no root come first: the C unit tests, the golden reports and the format check;
`make check` runs them alone (--check).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import test_unit  # noqa: E402,F401  (registers tests)
import test_check  # noqa: E402,F401
import test_cudart  # noqa: E402,F401
import test_webgpu  # noqa: E402,F401
import test_cli  # noqa: E402,F401
import test_driver_nccl  # noqa: E402,F401
import test_rules  # noqa: E402,F401
import test_timeline  # noqa: E402,F401
import test_capture  # noqa: E402,F401
import test_diff  # noqa: E402,F401
import test_stacks  # noqa: E402,F401
import test_jit  # noqa: E402,F401
import test_unwind  # noqa: E402,F401
import test_reliability  # noqa: E402,F401
import test_probes  # noqa: E402,F401
import test_pytorch  # noqa: E402,F401
import test_files  # noqa: E402,F401
import test_ort  # noqa: E402,F401
import test_transformers  # noqa: E402,F401
import test_tfjs  # noqa: E402,F401
import test_conduct  # noqa: E402,F401
import test_python  # noqa: E402,F401
import test_coverage  # noqa: E402,F401
import test_watch  # noqa: E402,F401
import test_kernel  # noqa: E402,F401
import test_memory_viz  # noqa: E402,F401
import test_overhead  # noqa: E402,F401
import test_vmtest  # noqa: E402,F401  (last: the kernel matrix, in qemu)

if __name__ == "__main__":
    sys.exit(harness.main(sys.argv[1:]))
