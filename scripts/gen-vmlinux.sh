#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Regenerate vmlinux/<arch>/vmlinux.h from a kernel's BTF. Run by hand when a newer kernel
# type is needed; the build never runs it, so builds do not depend on the build host's kernel.
# CO-RE relocations make the committed header work on other kernels.
#   scripts/gen-vmlinux.sh [BTF_FILE] [ARCH]
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
arch=${2:-$(uname -m)}
case "$arch" in
x86_64|x86) arch=x86 ;;
aarch64|arm64) arch=arm64 ;;
*) echo "gen-vmlinux: unsupported arch $arch" >&2; exit 1 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$top/vmlinux/$arch"
bpftool btf dump file "$btf" format c > "$top/vmlinux/$arch/vmlinux.h.tmp"
mv "$top/vmlinux/$arch/vmlinux.h.tmp" "$top/vmlinux/$arch/vmlinux.h"
echo "wrote vmlinux/$arch/vmlinux.h from $btf ($(uname -r))"
