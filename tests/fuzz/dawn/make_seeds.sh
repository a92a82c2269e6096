#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Rebuild tests/fuzz/dawn/seeds/ (committed; no root needed): table.cc built as a shared
# object and stripped (a Dawn proc table filled by its initializer, found without symbols),
# and copies of it each broken in one way the reader must refuse with one line, not hang on
# or read out of bounds: a DT_INIT_ARRAYSZ past the file, program headers at an odd offset,
# a CIE whose length runs past its segment and one too short for its own header; and one
# with no section headers, whose table the name pre-filter finds from the segments; and the
# table beside one of Dawn's error classes (TextureBase, with RTTI) and not the other.
# memsz-past-file.so is not made here: libFuzzer found it (a PT_LOAD whose memory size runs
# to the end of the address space, read at its end) and it is kept as found.
set -euo pipefail
cd "$(dirname "$0")"
out=seeds
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -std=c++17 -O2 -fPIC -shared -Wl,--build-id=none -o "$tmp/table.so" table.cc
strip -o "$out/table.so" "$tmp/table.so"
g++ -std=c++17 -O2 -fPIC -shared -Wl,--build-id=none -DDAWN_RTTI -o "$tmp/rtti.so" table.cc
strip -o "$out/texture-rtti.so" "$tmp/rtti.so"
/usr/bin/python3 - "$out" <<'PY'
import struct, sys
out = sys.argv[1]
b = bytearray(open(out + "/table.so", "rb").read())
phoff, = struct.unpack_from("<Q", b, 0x20)
phnum, = struct.unpack_from("<H", b, 0x38)
ph = [struct.unpack_from("<IIQQQQQQ", b, phoff + 56 * i) for i in range(phnum)]
def save(name, data):
    open(out + "/" + name, "wb").write(data)
# DT_INIT_ARRAYSZ: a size far past the file
dyn = next(p for p in ph if p[0] == 2)
x = bytearray(b)
for k in range(dyn[2], dyn[2] + dyn[5], 16):
    tag, = struct.unpack_from("<q", x, k)
    if tag == 27:
        struct.pack_into("<Q", x, k + 8, 0x1000000000000010)
save("init-arraysz.so", x)
# program headers moved to an odd offset at the end of the file
x = bytearray(b) + bytes(1) + b[phoff:phoff + 56 * phnum]
struct.pack_into("<Q", x, 0x20, len(b) + 1)
save("odd-phdrs.so", x)
# the first CIE (.eh_frame, through .eh_frame_hdr's eh_frame_ptr, datarel sdata4)
hdr = next(p for p in ph if p[0] == 0x6474e550)
def v2o(v):
    p = next(p for p in ph if p[0] == 1 and p[3] <= v < p[3] + p[6])
    return p[2] + v - p[3]
h = v2o(hdr[3])
ehf = hdr[3] + 4 + struct.unpack_from("<i", b, h + 4)[0]
cie = v2o(ehf)
x = bytearray(b)
struct.pack_into("<I", x, cie, 0x7ffffff0)
save("cie-long.so", x)
x = bytearray(b)
struct.pack_into("<I", x, cie, 1)
save("cie-short.so", x)
# no section headers at all (sstrip): the table still found, from the segments
x = bytearray(b)
struct.pack_into("<Q", x, 0x28, 0)
struct.pack_into("<HHH", x, 0x3a, 0, 0, 0)
save("no-shdrs.so", x)
PY
ls -la "$out"
