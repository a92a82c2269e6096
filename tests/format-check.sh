#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make format-check`: every C file under user/, bpf/, tests/ and bench/ is as clang-format
# writes it with the repository's .clang-format; fails with the list of those that are not.
# `make format` rewrites them. CLANG_FORMAT picks the binary (Debian 12's clang-format, 14,
# formatted the tree; other versions may disagree on details).
set -uo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null; then
	echo "format-check: $cf not found (apt-get install clang-format, or make deps)" >&2
	exit 1
fi
mapfile -t files < <(find user bpf tests bench -name '*.[ch]' | LC_ALL=C sort)
out=$("$cf" --dry-run -Werror "${files[@]}" 2>&1)
rc=$?
bad=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
	<<<"$out" | uniq)
if [ -n "$bad" ]; then
	echo "format-check: not formatted as .clang-format says ($("$cf" --version | head -n 1));" \
		"make format, or $cf -i FILE:"
	sed 's/^/  /' <<<"$bad"
	exit 1
fi
if [ "$rc" -ne 0 ]; then
	echo "format-check: $cf failed:"
	echo "$out"
	exit 1
fi
echo "format-check: ${#files[@]} files formatted"
