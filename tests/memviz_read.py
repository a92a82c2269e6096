# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""PyTorch's own snapshot readers on files gpuleak wrote, for tests/test_memory_viz.py: loads
torch/cuda/_memory_viz.py from Debian's python3-torch (scripts/install-deps.sh unpacks it) as
a module and prints what one of its readers returns. The flame-graph readers (segments,
memory, compare) are given format_flamegraph=str: their folded lines, not flamegraph.pl's SVG.

    memviz_read.py VIZ_PY stats|trace|segments|memory FILE
    memviz_read.py VIZ_PY compare BEFORE AFTER
"""
import importlib.util
import pickle
import sys


def main(viz_py, action, *files):
    spec = importlib.util.spec_from_file_location("_memory_viz", viz_py)
    mv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mv)
    data = []
    for f in files:
        with open(f, "rb") as fh:
            data.append(pickle.load(fh))
    if action == "stats":
        print(mv.segsum(data[0]))
    elif action == "trace":
        print(mv.trace(data[0]))
    elif action in ("segments", "memory"):
        print(getattr(mv, action)(data[0], format_flamegraph=str), end="")
    elif action == "compare":
        print(mv.compare(data[0]["segments"], data[1]["segments"], format_flamegraph=str), end="")
    else:
        raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    main(*sys.argv[1:])
