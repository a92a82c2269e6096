# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Python programs that allocate through the stand-in CUDA runtime with ctypes, for the
Python-frame tests (tests/test_python.py). Runs under any CPython 3.10 to 3.13.

    workload.py decode STEPS     a decode loop: Decoder.forward calls custom_attention_forward,
                                 which keeps 1 MiB per step (the leak), and scratch_buffer,
                                 which allocates 64 KiB and frees it; cudaDeviceSynchronize
                                 begins each step. Left: STEPS x 1 MiB at
                                 custom_attention_forward.
    workload.py thread N         a worker thread makes N allocations of 64 KiB at worker_alloc
                                 (kept) while the main thread spins in Python, holding the GIL
                                 but for its switch intervals; the worker releases it in each
                                 ctypes call. Left: N x 64 KiB at worker_alloc.
    workload.py recurse DEPTH    recurse() DEPTH frames deep, then 1 MiB at the bottom (kept).
    workload.py gen N            a generator (gen_buffers) yields N buffers of 256 KiB, kept.
    workload.py async N          async fetch_block, awaited N times by async run_requests under
                                 asyncio.run: N x 512 KiB kept.
    workload.py fork N           parent_alloc keeps 1 MiB, then the process forks; the child
                                 keeps N x 128 KiB at child_work and exits 0; the parent waits.
    workload.py framework N      build_cache keeps N x 1 MiB through torch._alloc.empty (a
                                 stand-in at a PyTorch-like path, site-packages/torch/), and
                                 grow_pool N x 512 KiB through mylib.pool.take.
    workload.py torch N          PyTorch's caching allocator (the stand-in libc10_cuda.so
                                 beside the runtime) through torch._alloc.block: load_weights
                                 keeps a 4 MiB tensor and make_workspace cudaMallocs 2 MiB
                                 outside it before the first step; then N steps, each begun by
                                 cudaDeviceSynchronize, in which kv_append keeps a 1 MiB tensor
                                 (the leak) and attention_scratch takes 3 MiB and frees it.
                                 Left: N x 1 MiB at kv_append, in 2 MiB segments; the weights'
                                 20 MiB segment holds the cached scratch. GPULEAK_C10_CUDA
                                 names another libc10_cuda.so (one built without SDT notes).
    workload.py torch_nccl N     torch N, and before the first step nccl_buffers keeps 4 MiB
                                 of ncclMemAlloc (the stand-in libnccl.so.2 beside the
                                 runtime), memory PyTorch's allocator never sees.

With SCENARIO_SYNC=1 it prints "ready PID" once its modules are loaded and its outer frames
(main, and decode's own in decode) are running, and waits for a line on stdin; at the end it
prints "done" and waits again, as the C scenarios do (tests/scenarios/scenario.h). Lines the
tests look for are marked "# line: NAME".
"""
import asyncio
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import torch._alloc  # noqa: E402  (tests/scenarios/python/site-packages: not PyTorch)
import mylib.pool  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CUDART = os.environ.get("GPULEAK_CUDART") or os.path.join(
    HERE, "..", "..", "..", ".output", "tests", "lib", "libcudart.so.13")
SYNC = os.environ.get("SCENARIO_SYNC") == "1"

rt = ctypes.CDLL(CUDART)
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaMalloc.restype = ctypes.c_int
rt.cudaFree.argtypes = [ctypes.c_void_p]
rt.cudaFree.restype = ctypes.c_int
rt.cudaDeviceSynchronize.restype = ctypes.c_int

MiB = 1 << 20
keep = []


def handshake(what):
    if SYNC:
        print(what, flush=True)
        sys.stdin.readline()


def ok(rc, p):
    if rc:
        raise RuntimeError(f"cudaMalloc: {rc}")
    return p.value


def custom_attention_forward(step):
    p = ctypes.c_void_p()
    keep.append(ok(rt.cudaMalloc(ctypes.byref(p), MiB), p))  # line: leak


def scratch_buffer():
    p = ctypes.c_void_p()
    ok(rt.cudaMalloc(ctypes.byref(p), 64 << 10), p)  # line: scratch
    rt.cudaFree(p)


class Decoder:
    def forward(self, step):
        custom_attention_forward(step)  # line: forward
        scratch_buffer()


def decode(steps):
    d = Decoder()
    handshake(f"ready {os.getpid()}")
    for step in range(steps):
        rt.cudaDeviceSynchronize()
        d.forward(step)  # line: decode


def worker_alloc():
    p = ctypes.c_void_p()
    keep.append(ok(rt.cudaMalloc(ctypes.byref(p), 64 << 10), p))  # line: worker_alloc


def worker_loop(n, done):
    for _ in range(n):
        worker_alloc()  # line: worker_loop
    done.set()


def spin_with_the_gil(n):
    done = threading.Event()
    t = threading.Thread(target=worker_loop, args=(n, done))
    t.start()
    x = 0
    while not done.is_set():
        x += 1
    t.join()


def recurse(depth):
    if depth == 0:
        p = ctypes.c_void_p()
        keep.append(ok(rt.cudaMalloc(ctypes.byref(p), MiB), p))  # line: recurse_bottom
        return
    recurse(depth - 1)  # line: recurse


def gen_buffers(n):
    for _ in range(n):
        p = ctypes.c_void_p()
        yield ok(rt.cudaMalloc(ctypes.byref(p), 256 << 10), p)  # line: gen_buffers


def consume(n):
    for b in gen_buffers(n):  # line: consume
        keep.append(b)


async def fetch_block(i):
    p = ctypes.c_void_p()
    ok(rt.cudaMalloc(ctypes.byref(p), 512 << 10), p)  # line: fetch_block
    await asyncio.sleep(0)
    return p.value


async def run_requests(n):
    for i in range(n):
        keep.append(await fetch_block(i))  # line: run_requests


def parent_alloc():
    p = ctypes.c_void_p()
    keep.append(ok(rt.cudaMalloc(ctypes.byref(p), MiB), p))  # line: parent_alloc


def child_work(n):
    for _ in range(n):
        p = ctypes.c_void_p()
        keep.append(ok(rt.cudaMalloc(ctypes.byref(p), 128 << 10), p))  # line: child_work


def fork_and_wait(n):
    parent_alloc()
    pid = os.fork()
    if pid == 0:
        child_work(n)  # line: fork_child
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        raise RuntimeError(f"child: {status}")


def build_cache(n):
    for _ in range(n):
        keep.append(torch._alloc.empty(rt, MiB))  # line: build_cache


def grow_pool(n):
    for _ in range(n):
        keep.append(mylib.pool.take(rt, 512 << 10))  # line: grow_pool


def c10_cuda():
    """The stand-in caching allocator, loaded only by the mode that uses it."""
    c10 = ctypes.CDLL(os.environ.get("GPULEAK_C10_CUDA") or
                      os.path.join(os.path.dirname(CUDART), "libc10_cuda.so"))
    c10.c10_cuda_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_int64]
    c10.c10_cuda_alloc.restype = ctypes.c_void_p
    c10.c10_cuda_free.argtypes = [ctypes.c_void_p]
    c10.c10_cuda_free.restype = None
    return c10


def load_weights(c10):
    keep.append(torch._alloc.block(c10, 4 * MiB))  # line: load_weights


def make_workspace():
    p = ctypes.c_void_p()
    keep.append(ok(rt.cudaMalloc(ctypes.byref(p), 2 * MiB), p))  # line: workspace


def kv_append(c10):
    keep.append(torch._alloc.block(c10, MiB))  # line: kv_append


def attention_scratch(c10):
    c10.c10_cuda_free(torch._alloc.block(c10, 3 * MiB))  # line: attention_scratch


def nccl_buffers():
    nccl = ctypes.CDLL(os.path.join(os.path.dirname(CUDART), "libnccl.so.2"))
    nccl.ncclMemAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    nccl.ncclMemAlloc.restype = ctypes.c_int
    p = ctypes.c_void_p()
    rc = nccl.ncclMemAlloc(ctypes.byref(p), 4 * MiB)  # line: nccl_buffers
    if rc:
        raise RuntimeError(f"ncclMemAlloc: {rc}")
    keep.append(p.value)


def torch_steps(n, nccl=False):
    c10 = c10_cuda()
    load_weights(c10)
    make_workspace()
    if nccl:
        nccl_buffers()
    for _ in range(n):
        rt.cudaDeviceSynchronize()
        kv_append(c10)  # line: torch_step
        attention_scratch(c10)


def main(mode, n):
    if mode == "decode":
        decode(n)  # line: main_decode
        handshake("done")
        return
    handshake(f"ready {os.getpid()}")
    if mode == "thread":
        spin_with_the_gil(n)
    elif mode == "recurse":
        recurse(n)  # line: main_recurse
    elif mode == "gen":
        consume(n)  # line: main_gen
    elif mode == "async":
        asyncio.run(run_requests(n))  # line: main_async
    elif mode == "fork":
        fork_and_wait(n)  # line: main_fork
    elif mode == "framework":
        build_cache(n)
        grow_pool(n)
    elif mode == "torch":
        torch_steps(n)  # line: main_torch
    elif mode == "torch_nccl":
        torch_steps(n, nccl=True)
    else:
        raise SystemExit(f"unknown mode {mode}")
    handshake("done")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))  # line: module
