#!/usr/bin/env bash
# Runs each fuzz target briefly: the fuzz step of make test.
#
#   scripts/fuzz-smoke.sh PACKAGE FUZZTIME TARGET...
#
# A target fails when the fuzzer wrote a new failing input under the
# package's testdata/fuzz/TARGET (a real finding: it is kept, and every
# later go test replays it) or when it fails any other way twice in a row.
# Go's fuzzing engine can end a run at the -fuzztime boundary with "context
# deadline exceeded" or a hung worker and no input written, most often on a
# loaded machine; such a run is shown whole and tried once more instead of
# failing the build. Every failure prints the whole output, never a tail.
set -uo pipefail

pkg=${1:?usage: fuzz-smoke.sh PACKAGE FUZZTIME TARGET...}
fuzztime=${2:?usage: fuzz-smoke.sh PACKAGE FUZZTIME TARGET...}
shift 2
go=${GO:-go}
dir=$("$go" list -f '{{.Dir}}' "$pkg") || exit 1
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# corpus lists the inputs kept for one target, one path a line.
corpus() { find "$dir/testdata/fuzz/$1" -type f 2>/dev/null | sort; }

for t in "$@"; do
	for try in 1 2; do
		echo "go test -fuzz $t -fuzztime $fuzztime $pkg (try $try)"
		before=$(corpus "$t")
		"$go" test -run XXX -fuzz "^$t\$" -fuzztime "$fuzztime" "$pkg" >"$out" 2>&1
		rc=$?
		if [ "$rc" -eq 0 ]; then
			tail -n 1 "$out"
			break
		fi
		new=$(comm -13 <(echo "$before") <(corpus "$t"))
		echo "--- $t failed (exit $rc); its whole output:"
		cat "$out"
		if [ -n "$new" ]; then
			echo "--- $t: the fuzzer wrote a failing input, a real finding:"
			echo "$new"
			exit 1
		fi
		if [ "$try" -eq 2 ]; then
			echo "--- $t failed twice with no failing input written"
			exit 1
		fi
		echo "--- $t wrote no failing input (a fuzzing engine fault, e.g. at the -fuzztime boundary): trying once more"
	done
done
