# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A copy of a library with Dawn linked in whose Dawn names are truly gone, to prove that
gpuleak's proc-table recovery (user/probe/dawn_procs.c) reads no name: it must find the
same entry points in the copy as the original's symbols say.

    python3 hide_dawn.py IN OUT

`strip --strip-all` drops .symtab; then every dynamic symbol whose name has "wgpu", "dawn"
or "Native" in it loses its name (overwritten with 'X' in .dynstr) and its value, size and
type (zeroed), and every relocation that named such a symbol (GLOB_DAT, R_X86_64_64)
becomes R_X86_64_RELATIVE with the symbol's value as addend: what a build with hidden
visibility would have produced. No symbol table holds a Dawn name or address any more; the
code and data are byte for byte the original's. The copy is for reading (gpuleak probes),
not for loading: .gnu.hash no longer matches the names.
"""
import struct
import subprocess
import sys

SHT_RELA, SHT_DYNSYM = 4, 11
R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_RELATIVE = 1, 6, 8


def dawnish(name):
    return b"wgpu" in name or b"dawn" in name or b"Native" in name


def hide(src, dst):
    """Writes the copy; returns (names hidden, relocations rewritten)."""
    subprocess.run(["strip", "--strip-all", "-o", dst, src], check=True)
    with open(dst, "rb") as f:
        b = bytearray(f.read())
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    # Elf64_Shdr: name, type, flags, addr, offset, size, link, info, addralign, entsize
    sh = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    dynsym = next(s for s in sh if s[1] == SHT_DYNSYM)
    dynstr = sh[dynsym[6]]
    hidden = {}
    for i in range(dynsym[5] // 24):
        at = dynsym[4] + 24 * i
        # Elf64_Sym: name u32, info u8, other u8, shndx u16, value u64, size u64
        st_name, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", b, at)
        start = dynstr[4] + st_name
        end = b.index(b"\0", start)
        if not st_name or not dawnish(bytes(b[start:end])):
            continue
        b[start:end] = b"X" * (end - start)
        if shndx:
            hidden[i] = value
            struct.pack_into("<BBHQQ", b, at + 4, 0, 0, shndx, 0, 0)
    rewritten = 0
    for s in sh:
        if s[1] != SHT_RELA or s[6] != sh.index(dynsym):
            continue
        for k in range(s[5] // 24):
            at = s[4] + 24 * k
            offset, info, addend = struct.unpack_from("<QQq", b, at)
            sym, typ = info >> 32, info & 0xffffffff
            if sym in hidden and typ in (R_X86_64_64, R_X86_64_GLOB_DAT):
                add = addend if typ == R_X86_64_64 else 0
                struct.pack_into("<QQq", b, at, offset, R_X86_64_RELATIVE, hidden[sym] + add)
                rewritten += 1
    with open(dst, "wb") as f:
        f.write(b)
    return len(hidden), rewritten


if __name__ == "__main__":
    print("%d names hidden, %d relocations rewritten" % hide(sys.argv[1], sys.argv[2]))
