#!/usr/bin/env bash
# make test's check that a make build after make binsize (its
# prerequisite) prints its command alone: the binary is up to date, so
# the go command reports the last link's output again, and without the
# check's own build tag (see scripts/binsize.sh) that is -dumpdep's
# listing of every reachable symbol, 280,000 lines. The binary being up
# to date, the check costs no link.
set -euo pipefail
make=${1:-make}
out=$("$make" --no-print-directory build)
lines=$(printf '%s\n' "$out" | wc -l)
if [ "$lines" -ne 1 ]; then
	echo "quiet-build: make build after make binsize printed $lines lines; its first:" >&2
	printf '%s\n' "$out" | head -5 >&2
	exit 1
fi
echo "quiet-build: make build after make binsize printed its command alone"
