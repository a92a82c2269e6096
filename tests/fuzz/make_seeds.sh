#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Rebuild the seed corpus in tests/fuzz/capture/seeds/ (committed; run as root after `make` and
# `make standins`): small real captures of the test scenarios, the same re-encoded with
# stored blocks (the fuzzer then mutates record columns directly), a generated capture,
# and the edge cases a reader must handle: a header alone, a file cut inside a block, a
# file cut inside its header.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=tests/fuzz/capture/seeds
bin=.output/tests/bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser -I.output \
	tests/fuzz/recode.c $(ls .output/obj/*/*.o | grep -v /cli/) -lbpf -lelf -lz -lm -ldl -lcapstone \
	-l:libstdc++.so.6 -o "$tmp/recode"
rm -rf "$out"
mkdir -p "$out"
rec() {	# name, scenario args...
	local name=$1
	shift
	local opts=()

	[ "$1" = --follow ] && opts=(--follow) && shift
	./gpuleak record -o "$tmp/$name.glc" --interval 0 "${opts[@]}" -- "$@" >/dev/null 2>&1
	cp "$tmp/$name.glc" "$out/$name.glc"
	"$tmp/recode" "$tmp/$name.glc" "$out/$name-stored.glc" 200
}
rec basic "$bin/basic" 4 2 4096
rec loop "$bin/loop" 3 65536
rec apis "$bin/apis"
rec fail "$bin/fail"
rec threads "$bin/threads" 3
rec stacks "$bin/stacks"
# Python frames: code descriptors and Python stacks (Debian's interpreter, a 3-step decode)
rec python /usr/bin/python3.11 tests/scenarios/python/workload.py decode 3
# graph memory and its pool, pool reserves, IPC between two processes, arrays (docs/cuda.md)
rec graphs "$bin/graphs" decode
rec pools "$bin/pools" reserve
rec ipc --follow "$bin/ipc" weights
rec arrays "$bin/arrays" leak

# gpuleak watch: a snapshot, the window after it and a TRIGGER block with the failing call
# (oomloop's device full at step 40, 10 steps a second, a ring of the last second)
GPULEAK_STANDIN_DEVICE_MEM=$(( (16 << 20) + 40 * (64 << 10) + (32 << 10) )) \
	./gpuleak watch -o "$tmp/watch" --ring-time 1s --step sym:oomloop:decode_step \
	-- "$bin/oomloop" loop 64K 100000 >/dev/null 2>&1 || true
cp "$tmp"/watch/*-oom.glc "$out/watch-oom.glc"
"$tmp/recode" "$out/watch-oom.glc" "$out/watch-oom-stored.glc" 200
.output/bench/capture_gen -o "$tmp/gen.glc" -n 300 --store --block-size 400 >/dev/null
cp "$tmp/gen.glc" "$out/gen-stored.glc"
# a header alone (recorder killed at once), cut inside a block, cut inside the header
head -c 264 "$out/basic.glc" >"$out/header-only.glc"
head -c $(( $(stat -c %s "$out/basic-stored.glc") - 7 )) "$out/basic-stored.glc" \
	>"$out/cut-in-block.glc"
head -c 100 "$out/basic.glc" >"$out/cut-in-header.glc"
ls -la "$out"
du -sh "$out"
