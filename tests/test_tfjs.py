# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""TensorFlow.js on WebGPU with the defaults: npm @tensorflow/tfjs-core and
tfjs-backend-webgpu 4.22.0 on dawn.node (npm webgpu@0.6.2) on Mesa's lavapipe, run as a user
runs it (`gpuleak run --step sync --fail-on-leak -- node --perf-basic-prof
--interpreted-frames-native-stack app`), no unwinding option. dawn.node keeps no frame
pointers: the default (--unwind auto) unwinds it by its CFI into V8's frames, and the growth
is sited at the program's own JavaScript frame, its stack through TensorFlow.js's matMul_.
The script exits as soon as it is done: its frames are named after it is gone. Expected
numbers are in tests/tfjs/matmul.mjs."""
import contextlib
import json
import os
import re
import shutil
import tempfile

from harness import check, eq, gpuleak_env, run_gpuleak, test
from test_jit import in_dir

DEPS = os.path.join(os.environ.get("GPULEAK_DEPS", "/var/cache/gpuleak"), "npm")
TFJS = os.path.join(DEPS, "@tensorflow", "tfjs-backend-webgpu@4.22.0", "node_modules",
                    "@tensorflow")
WEBGPU_INDEX = os.path.join(DEPS, "webgpu@0.6.2", "node_modules", "webgpu", "index.js")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tfjs", "matmul.mjs")
V8_FLAGS = ["--perf-basic-prof", "--interpreted-frames-native-stack"]
STEPS = 10
RESULT = 64 * 64 * 4  # one matMul result: a 16 KiB GPU buffer


def site():
    """step's frame as V8 names it: line and column of its parameter list."""
    with open(SCRIPT) as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"async function step\(", line)
            if m:
                return f"step (matmul.mjs:{n}:{m.end()})"
    raise AssertionError(f"no step in {SCRIPT}")


def matmul(mode, expect_rc):
    """matmul.mjs MODE under gpuleak run with the defaults: (Result, verdict, its own count)."""
    for path in (os.path.join(TFJS, "tfjs-core", "package.json"),
                 os.path.join(TFJS, "tfjs-backend-webgpu", "package.json"), WEBGPU_INDEX):
        check(os.path.exists(path), f"{path} missing: run scripts/install-deps.sh as root")
    check(shutil.which("node"), "node missing: run scripts/install-deps.sh as root")
    home = tempfile.mkdtemp(prefix="gpuleak-tfjs-")
    res = None
    try:
        # Mesa writes its shader cache under $HOME/.cache: a fresh one.
        env = gpuleak_env()
        env.update(HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"), TFJS=TFJS,
                   WEBGPU_INDEX=WEBGPU_INDEX)
        with in_dir(home):
            res = run_gpuleak(["run", "--step", "sync", "--fail-on-leak", "--", "node"] +
                              V8_FLAGS + [SCRIPT, mode, str(STEPS)], env=env,
                              expect_rc=expect_rc)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if res:
            for v in res.verdicts():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"/tmp/perf-{v['pid']}.map")
    truth = [json.loads(l) for l in res.out.splitlines() if l.startswith('{"mode"')]
    eq(len(truth), 1, f"matmul.mjs's count in:\n{res.out}\n{res.err}")
    # Real arithmetic on lavapipe: every element of ones(64x64) @ ones(64x64) is 64.
    eq((truth[0]["backend"], truth[0]["first"]), ("webgpu", 64), "TF.js computed on WebGPU")
    return res, res.verdict(), truth[0]


@test
def tfjs_growth_sited_at_the_program_with_the_defaults():
    """A loop keeping its 10 matMul results: exit 3; one growth entry, 16 KiB per step, the 9
    results made after the first submit (the first is init's), sited at the program's step
    (not dawn.node's GPUDevice::createBuffer), its stacks through matMul_ in tf-core; in the report, the glue above the
    script folded and the path through matMul_."""
    res, v, truth = matmul("keep", 3)
    eq((truth["kept"], truth["tensors"]), (STEPS, STEPS + 2), "matmul.mjs keeps its results")
    where = site()
    got = [(g["api"], g["site"], g["slope_bytes_per_step"], g["live_bytes"], g["live_count"])
           for g in v["growth"]]
    eq(got, [("wgpuDeviceCreateBuffer", where, RESULT, (STEPS - 1) * RESULT, STEPS - 1)],
       "one growth entry, at the program's frame")
    # One stack: a perf map read only up to older lines at reused addresses split it over up
    # to four, frames named after node's internal modules (docs/stacks.md).
    stacks = v["growth"][0]["stacks"]
    eq((sum(st["bytes"] for st in stacks), sum(st["count"] for st in stacks)),
       ((STEPS - 1) * RESULT, STEPS - 1), "its stacks hold the growth")
    check(len(stacks) == 1, f"not split over stacks below the JavaScript: {stacks}")
    for st in stacks:
        fns = [f["function"] for f in st["frames"]]
        check("matMul_" in fns and "step" in fns and fns.index("matMul_") < fns.index("step"),
              f"step calls matMul_: {fns}")
        check(st["frames"][fns.index("matMul_")]["module"].startswith("tf-core.node.js:"),
              f"matMul_ is tf-core's: {st['frames']}")
        check(fns[0].startswith("wgpu::binding::GPUDevice::createBuffer(") and
              st["frames"][0]["module"] == "dawn.node", f"from dawn.node's createBuffer: {fns}")
    eq([(e["site"], e["module"]) for e in v["leaks"] if e["api"] == "wgpuDeviceCreateBuffer"],
       [(where, where[len("step ("):-1])], "the leak's site and module")
    eq([(x["kind"], x["site"], x["bytes_per_step"]) for x in v["gate"]["violations"]],
       [("growth", where, RESULT)], "the gate")
    check(f"GATE: {where} grows 16.0 KiB per step" in res.out, res.out)
    m = re.search(r"^ .*16\.0 KiB/st .* %s \(wgpuDeviceCreateBuffer\)\n +from (.*)$" %
                  re.escape(where), res.out, re.M)
    check(m, f"the growth line at the program's frame:\n{res.out}")
    path = m.group(1)
    check(re.search(r"\[native: \d+ frames\] → .*%s → .*matMul_ \(tf-core\.node\.js:" %
                    re.escape(where), path), f"folded glue, then step, then matMul_: {path}")


@test
def tfjs_disposed_results_pass():
    """The same loop disposing each result: its buffer goes back to TensorFlow.js's pool and
    serves the next step; exit 0, no growth, no gate violation."""
    res, v, truth = matmul("dispose", 0)
    eq((truth["kept"], truth["tensors"]), (0, 2), "matmul.mjs disposes its results")
    eq((v["growth"], v["gate"]["violations"]), ([], []), "no growth, nothing for the gate")
    check("GATE:" not in res.out, res.out)
