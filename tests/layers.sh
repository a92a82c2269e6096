#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The folders of user/ are layered, lowest first, in the order of the data path: lib < probe <
# symbols < capture (the file format) < tracker (the allocation graph) < engine (analysis,
# timeline, verdict) < diff < output < offline (report and capture diff) < live < cli. A file
# includes headers of its own folder and of lower ones only, and
# libbpf's headers (<bpf/...>, the skeleton) only in live/ and cli/ (the engine, which
# `gpuleak report` and the fuzzers link, needs no libbpf). A folder under user/ that is not in
# the order is an error too: a new stage gets its place here. Fails with one line per
# violation: FILE:LINE: what it includes. Includes name their folder ("engine/verdict.h").
# Inside tracker/ the modules are layered too (tracker/tracker.h says what each keeps): a
# module includes only the headers of those before it in `tracker`; model.h holds the shared
# types and is no module. The outputs read the analysis through the engine only (its verdict,
# and engine/query.h for what the verdict does not hold): no file of output/ includes tracker/.
set -uo pipefail
cd "$(dirname "$0")/.."
bad=0
order="lib probe symbols capture tracker engine diff output offline live cli"
tracker="rules alloc_table threads sites violations regions pools allocs blocks pending ipc
gpu_objects graphs wgpu_objects mem_calls call_tree tracker"
for f in user/tracker/*.[ch]; do
	b=$(basename "${f%.[ch]}")
	if [ "$b" != model ] && ! grep -qw -- "$b" <<<"$tracker"; then
		echo "layers: $f is in no tracker layer (tests/layers.sh: \$tracker)"
		bad=1
	fi
done
for d in user/*/; do
	d=${d#user/}
	d=${d%/}
	if ! grep -qw -- "$d" <<<"$order"; then
		echo "layers: user/$d/ is in no layer (tests/layers.sh: $order)"
		bad=1
	fi
done
mapfile -t files < <(find user -name '*.[ch]' | LC_ALL=C sort)
awk -v order="$order" -v tracker="$tracker" '
BEGIN {
	n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i
	n = split(tracker, o, /[ \n]+/); for (i = 1; i <= n; i++) trank[o[i]] = i
}
FNR == 1 {
	split(FILENAME, p, "/"); own = p[2]
	mod = p[3]; sub(/\.[ch]$/, "", mod)
}
/^[ \t]*#[ \t]*include/ {
	if (!(own in rank))
		next
	if ($0 ~ /"\.\.?\//) {
		printf "%s:%d: a relative include hides its layer: %s\n", FILENAME, FNR, $0
		bad = 1
	}
	if (match($0, /"[a-z_]+\//)) {
		inc = substr($0, RSTART + 1, RLENGTH - 2)
		if ((inc in rank) && rank[inc] > rank[own]) {
			printf "%s:%d: %s/ includes the higher %s/: %s\n", FILENAME, FNR, own, inc, $0
			bad = 1
		}
	}
	if (own == "output" && $0 ~ /"tracker\//) {
		printf "%s:%d: output/ includes tracker/ (read it through engine/): %s\n", FILENAME,
		       FNR, $0
		bad = 1
	}
	if (own == "tracker" && match($0, /"tracker\/[a-z_]+\.h"/)) {
		inc = substr($0, RSTART + 9, RLENGTH - 12)
		if ((inc in trank) && (mod in trank) && trank[inc] > trank[mod]) {
			printf "%s:%d: tracker module %s includes the later %s: %s\n", FILENAME, FNR,
			       mod, inc, $0
			bad = 1
		}
	}
	if (rank[own] < rank["live"] && ($0 ~ /<bpf\// || $0 ~ /skel\.h"/)) {
		printf "%s:%d: %s/ includes libbpf (only live/ and cli/ may): %s\n", FILENAME, FNR,
		       own, $0
		bad = 1
	}
}
END { exit bad }' "${files[@]}" || bad=1
exit $bad
