#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""sdt_nobase.py IN OUT: a copy of the ELF64 object IN whose .note.stapsdt notes record no
.stapsdt.base (the base address field 0), the section itself kept: what PyTorch's own note
macro writes (c10/util/static_tracepoint_elfx86.h leaves the field 0), where <sys/sdt.h>
records the section's address. libbpf before 1.6 placed such probes wrongly; gpuleak's 1.7
places them. Says how many notes it changed; fails when there is none to change."""
import struct
import sys


def main(src, dst):
    data = bytearray(open(src, "rb").read())
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(f"{src}: not an ELF64 object")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)

    def sh(i):
        # name, type, flags, addr, offset, size
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    stroff = sh(shstrndx)[4]

    def name(off):
        end = data.index(b"\0", stroff + off)
        return data[stroff + off:end].decode()

    changed = 0
    for i in range(shnum):
        n, _, _, _, off, size = sh(i)
        if name(n) != ".note.stapsdt":
            continue
        pos = off
        while pos + 12 <= off + size:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            desc = pos + 12 + ((namesz + 3) & ~3)
            if data[pos + 12:pos + 12 + namesz] == b"stapsdt\0" and ntype == 3:
                # pc, base, semaphore: the base is the second address
                struct.pack_into("<Q", data, desc + 8, 0)
                changed += 1
            pos = desc + ((descsz + 3) & ~3)
    if not changed:
        sys.exit(f"{src}: no stapsdt notes")
    open(dst, "wb").write(data)
    print(f"{dst}: {changed} notes without .stapsdt.base")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
