#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The folders of user/ are layered, lowest first: lib < probe < symbols < engine < output <
# capture < live < cli. A file includes headers of its own folder and of lower ones only, and
# libbpf's headers (<bpf/...>, the skeleton) only in live/ and cli/ (the engine, which
# `gpuleak report` and the fuzzers link, needs no libbpf). A folder under user/ that is not in
# the order is an error too: a new stage gets its place here. Fails with one line per
# violation: FILE:LINE: what it includes. Includes name their folder ("engine/verdict.h").
set -uo pipefail
cd "$(dirname "$0")/.."
order="lib probe symbols engine output capture live cli"
bad=0
for d in user/*/; do
	d=${d#user/}
	d=${d%/}
	if ! grep -qw -- "$d" <<<"$order"; then
		echo "layers: user/$d/ is in no layer (tests/layers.sh: $order)"
		bad=1
	fi
done
mapfile -t files < <(find user -name '*.[ch]' | LC_ALL=C sort)
awk -v order="$order" '
BEGIN { n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i }
FNR == 1 { split(FILENAME, p, "/"); own = p[2] }
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
	if (rank[own] < rank["live"] && ($0 ~ /<bpf\// || $0 ~ /skel\.h"/)) {
		printf "%s:%d: %s/ includes libbpf (only live/ and cli/ may): %s\n", FILENAME, FNR,
		       own, $0
		bad = 1
	}
}
END { exit bad }' "${files[@]}" || bad=1
exit $bad
