#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Capture benchmark (`make bench-capture`; callable from `make bench`):
#   - bytes per traced call of captures of real allocate/free streams (the `basic` and
#     `loop` scenarios, recorded by gpuleak; needs root) and of a generated 10 M-call stream
#     (bench/capture_gen, written through the same capture writer);
#   - wall time of `gpuleak report` on the 10 M-call capture, best of 3.
# Targets (bench/bench.py): <= 12 bytes per event; the report of the 10 M-call capture at
# >= 0.3 x the events per second of the live consumer measured in the same run.
#
# CALLS=N changes the generated stream's size; KEEP=1 keeps the files in $BENCH_DIR;
# BENCH_KV=FILE also writes key=value lines for bench/bench.py (make bench).
set -euo pipefail
cd "$(dirname "$0")/.."
GPULEAK=${GPULEAK:-./gpuleak}
GEN=${GEN:-.output/bench/capture_gen}
BIN=.output/tests/bin
CALLS=${CALLS:-10000000}
dir=${BENCH_DIR:-$(mktemp -d)}
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT

# bytes of RECORDS blocks (headers included), from `gpuleak report --blocks`
record_bytes() {
	"$GPULEAK" report --blocks "$1" | awk '$2 == "RECORDS" { s += $5 + 28 } END { print s + 0 }'
}

row() {	# name calls file
	local size rec
	size=$(stat -c %s "$3")
	rec=$(record_bytes "$3")
	awk -v n="$1" -v c="$2" -v s="$size" -v r="$rec" \
		'BEGIN { printf "%-34s %10d %12d %9.2f %9.2f\n", n, c, s, s / c, r / c }'
}

printf '%-34s %10s %12s %9s %9s\n' STREAM CALLS FILE_BYTES B/CALL REC_B/CALL
if [ "$(id -u)" -eq 0 ]; then
	for spec in "basic 200000 190000 256" "basic 20000 10000 1048576" "loop 100 65536"; do
		read -r -a args <<<"$spec"
		f="$dir/${args[0]}.glc"
		"$GPULEAK" record -o "$f" --force --json "$dir/v.ndjson" --interval 0 -- \
			"$BIN/${args[0]}" "${args[@]:1}" >/dev/null 2>&1
		calls=$(grep '"type":"verdict"' "$dir/v.ndjson" | sed 's/.*"calls":\([0-9]*\).*/\1/')
		row "$spec (recorded)" "$calls" "$f"
	done
else
	echo "(not root: recorded scenarios skipped)"
fi
f="$dir/gen.glc"
"$GEN" -o "$f" -n "$CALLS" >/dev/null
row "generated, $CALLS calls" "$CALLS" "$f"
[ -z "${BENCH_KV:-}" ] ||
	awk -v c="$CALLS" -v s="$(stat -c %s "$f")" \
		'BEGIN { printf "calls=%d\nbytes_per_event=%.3f\n", c, s / c }' > "$BENCH_KV"

times=
for _ in 1 2 3; do
	t0=$(date +%s.%N)
	"$GPULEAK" report "$f" >/dev/null
	times="$times $t0 $(date +%s.%N)"
done
echo "$times" | awk -v c="$CALLS" -v cpus="$(nproc)" -v kv="${BENCH_KV:-}" '{
	for (i = 1; i < NF; i += 2) { t = $(i + 1) - $i; if (!best || t < best) best = t }
	printf "gpuleak report of %d calls: %.2f s (best of 3, %d CPUs)\n", c, best, cpus
	if (kv != "") printf "report_s=%.3f\n", best >> kv }'

# --memory-viz: what exporting PyTorch's snapshot adds to a report, per 100 k entries of its
# allocation trace (1 M generated calls: ~0.9 M entries, each device allocation and free),
# best of 3 against the report without it; and the pickle's bytes per 100 k entries.
f="$dir/gen1m.glc"
"$GEN" -o "$f" -n 1000000 >/dev/null
best() {
	local b="" t0 t1 t
	for _ in 1 2 3; do
		t0=$(date +%s.%N)
		"$@" >/dev/null
		t1=$(date +%s.%N)
		t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
		if [ -z "$b" ] || awk -v t="$t" -v b="$b" 'BEGIN { exit !(t < b) }'; then b=$t; fi
	done
	echo "$b"
}
plain=$(best "$GPULEAK" report "$f")
viz=$(best "$GPULEAK" report "$f" --memory-viz "$dir/gen1m.pickle")
entries=$(python3 -c 'import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
print(sum(len(t) for t in d["device_traces"]))' "$dir/gen1m.pickle")
awk -v p="$plain" -v v="$viz" -v n="$entries" -v s="$(stat -c %s "$dir/gen1m.pickle")" \
    -v kv="${BENCH_KV:-}" 'BEGIN {
	printf "--memory-viz of 1 M calls: %d trace entries, %.2f s more than the report (%.2f s)," \
	       " %d bytes: per 100 k entries %.3f s, %.2f MB\n", n, v - p, p, s,
	       (v - p) * 1e5 / n, s * 1e5 / n / 1e6
	if (kv != "") {
		printf "memviz_s_per_100k=%.4f\n", (v - p) * 1e5 / n >> kv
		printf "memviz_mb_per_100k=%.3f\n", s * 1e5 / n / 1e6 >> kv
	} }'
