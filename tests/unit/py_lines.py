# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What the interpreter running this says each instruction's line is, for test_python.c to
check its line-table decoders against: for every code object of a few standard modules,

    C VERSION FIRSTLINENO TABLE     (version as 0x030b, the line table in hex)
    I INSTR LINE                    (one per code unit: the frame field BPF sends, 0: none)

INSTR is what BPF sends for a frame stopped there: 3.10's f_lasti (code units), 3.11+'s
instruction pointer minus the code object (bytes, from co_code_adaptive, given as argv[1])."""
import importlib
import sys
import types

MODULES = ["argparse", "json.decoder", "email.message", "asyncio.base_events", "dataclasses"]


def codes(c):
    yield c
    for k in c.co_consts:
        if isinstance(k, types.CodeType):
            yield from codes(k)


def main():
    units_at = int(sys.argv[1])
    v = sys.version_info
    out = sys.stdout
    for name in MODULES:
        mod = importlib.import_module(name)
        with open(mod.__file__) as f:
            top = compile(f.read(), mod.__file__, "exec")
        for c in codes(top):
            n = len(c.co_code) // 2
            out.write(f"C 0x{v.major:02x}{v.minor:02x} {c.co_firstlineno} "
                      f"{c.co_linetable.hex() or '-'}\n")
            if v >= (3, 11):
                for u, pos in enumerate(c.co_positions()):
                    out.write(f"I {units_at + 2 * u} {pos[0] or 0}\n")
            else:
                line = [0] * n
                for start, end, ln in c.co_lines():
                    for b in range(start, end, 2):
                        line[b // 2] = ln or 0
                for u in range(n):
                    out.write(f"I {u} {line[u]}\n")


main()
