#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Golden tests of the offline stage: `gpuleak report` of the captures committed here, diffed
# against the expected text, NDJSON and stderr (with the exit status) committed beside them.
# No root, no BPF, no target: what a report prints depends on the capture and the options
# alone (sites are named from the capture, times are relative to it).
#
#   tests/golden/golden.sh [--gpuleak BIN] [--update] [CASE...]
#
# A case is NAME.args: the capture (a file in this folder), then the options of
# `gpuleak report`, one argument per line; or `diff`, then two inputs (captures or NDJSON
# files in this folder), then the options of `gpuleak diff`. Its expected outputs are NAME.txt (stdout),
# NAME.ndjson (--json) and NAME.stderr (stderr, then "exit status N"); @TMP@ in an argument is a
# scratch folder, for outputs written but not compared. --update rewrites
# them (`make golden`); without it, each differing file is shown with `diff -u` (NDJSON
# one member per line, so that a diff names the field) and the script exits 1.
# Default BIN: .output/gpuleak-asan, the build the tests run.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=tests/golden
gl=.output/gpuleak-asan
update=0
cases=()
while [ $# -gt 0 ]; do
	case "$1" in
	--gpuleak) gl=$2; shift 2 ;;
	--update) update=1; shift ;;
	-*) echo "usage: $0 [--gpuleak BIN] [--update] [CASE...]" >&2; exit 2 ;;
	*) cases+=("$1"); shift ;;
	esac
done
if [ ${#cases[@]} -eq 0 ]; then
	for f in "$dir"/*.args; do
		cases+=("$(basename "$f" .args)")
	done
fi
[ -x "$gl" ] || { echo "golden: $gl not built (make $gl)" >&2; exit 2; }

# The same text on any machine: C locale, UTC, sanitizer reports turned into exit codes.
export LC_ALL=C TZ=UTC
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=98}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One JSON member per line: `"a":1,"b":2` becomes `"a":1,` and `"b":2`. Reversible (an
# NDJSON line never ends in `,"`), so equal exploded files are equal files.
explode() {
	sed 's/,"/,\n"/g' "$1"
}

failed=0
for name in "${cases[@]}"; do
	args=$dir/$name.args
	if [ ! -f "$args" ]; then
		echo "golden: no case $name ($args)" >&2
		failed=1
		continue
	fi
	mapfile -t argv <"$args"
	out=$tmp/$name
	# @TMP@ is a scratch folder: an output the case writes but does not compare (gpuleak
	# writes regular files only, never /dev/null).
	argv=("${argv[@]//@TMP@/$tmp}")
	if [ "${argv[0]}" = diff ]; then
		cmd=diff
		capture="$dir/${argv[1]} $dir/${argv[2]}"
		"$gl" diff "$dir/${argv[1]}" "$dir/${argv[2]}" --json "$out.ndjson" "${argv[@]:3}" \
			>"$out.txt" 2>"$out.stderr"
		echo "exit status $?" >>"$out.stderr"
		argv=("${argv[@]:2}")
	else
		cmd=report
		capture=$dir/${argv[0]}
		"$gl" report "$capture" --json "$out.ndjson" "${argv[@]:1}" >"$out.txt" 2>"$out.stderr"
		echo "exit status $?" >>"$out.stderr"
	fi
	[ -f "$out.ndjson" ] || : >"$out.ndjson"
	if [ "$update" = 1 ]; then
		for ext in txt ndjson stderr; do
			cp "$out.$ext" "$dir/$name.$ext"
		done
		echo "golden: wrote $dir/$name.{txt,ndjson,stderr}"
		continue
	fi
	bad=0
	for ext in txt stderr; do
		diff -u --label "$dir/$name.$ext" --label "output of $capture" \
			"$dir/$name.$ext" "$out.$ext" || bad=1
	done
	if ! cmp -s "$dir/$name.ndjson" "$out.ndjson"; then
		diff -u --label "$dir/$name.ndjson (a member per line)" \
			--label "output of $capture (a member per line)" \
			<(explode "$dir/$name.ndjson") <(explode "$out.ndjson")
		bad=1
	fi
	if [ "$bad" = 1 ]; then
		echo "golden: FAIL $name: gpuleak $cmd $capture${argv[1]:+ ${argv[*]:1}}" \
			"(if the change is meant: make golden, and commit the diff)"
		failed=1
	else
		echo "golden: PASS $name"
	fi
done
exit "$failed"
