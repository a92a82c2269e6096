# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""pyloop: the Python benchmark target. From DEPTH Python frames deep, calls cudaMalloc +
cudaFree of the benchmark's libcudart.so.13 through ctypes, PAIRS times, and times the pairs
itself, as pairloop does in C (bench/pairloop.c): what a Python process pays per pair.

    pyloop.py LIB PAIRS WARMUP DEPTH

Prints "ready PID" and waits for a line on stdin before the warm-up (a tracer attaches
first), then one JSON line: ns_per_pair, the median over chunks of 1000 pairs (a chunk in
which the thread lost its CPU is an outlier), and mean_ns_per_pair; then waits for another
line before it exits, so the tracer's BPF statistics can be read while it is attached.
"""
import ctypes
import json
import os
import statistics
import sys
import time

CHUNK = 1000


def run(lib, pairs, warmup):
    malloc, free = lib.cudaMalloc, lib.cudaFree
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    for _ in range(warmup):
        malloc(ref, 4096)
        free(p)
    chunks = []
    t_all = time.perf_counter_ns()
    for _ in range(pairs // CHUNK):
        t0 = time.perf_counter_ns()
        for _ in range(CHUNK):
            malloc(ref, 4096)
            free(p)
        chunks.append((time.perf_counter_ns() - t0) / CHUNK)
    mean = (time.perf_counter_ns() - t_all) / (pairs // CHUNK * CHUNK)
    return statistics.median(chunks), mean


def deep(n, lib, pairs, warmup):
    if n > 1:
        return deep(n - 1, lib, pairs, warmup)
    print(f"ready {os.getpid()}", flush=True)
    sys.stdin.readline()
    return run(lib, pairs, warmup)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.cudaMalloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.cudaFree.argtypes = [ctypes.c_void_p]
    pairs, warmup, depth = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    # main, deep() DEPTH - 2 times, run: DEPTH frames at each call (with <module>)
    ns, mean = deep(depth - 3, lib, pairs, warmup)
    print(json.dumps({"ns_per_pair": ns, "mean_ns_per_pair": mean}), flush=True)
    sys.stdin.readline()


main()
