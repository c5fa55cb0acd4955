#!/usr/bin/env bash
# Runs Orbit's fuzz targets one after another, each for FUZZTIME (default
# 30s), and prints a summary: executions, new interesting inputs, result.
#
#   scripts/fuzz.sh                          every target
#   FUZZTIME=5m scripts/fuzz.sh FuzzParseJob  some of them, by name
#   scripts/fuzz.sh --list                   the targets it finds, and nothing else
#
# The targets are found, not listed: every Fuzz function that
# `go test -list` reports in a package of the module.
#
# Go fuzzes one target per process and the machines this runs on have few
# cores, so targets run in sequence, each with all the cores. Inputs that
# widen coverage go to Go's cache ($(go env GOCACHE)/fuzz), not to the tree;
# a failing input is written to the package's testdata/fuzz/<Target>/, where
# it becomes a regression test: copy in only what is worth keeping.
#
# Environment:
#   GO                default go
#   FUZZTIME          per target: a duration like 30s, or Nx for N executions
#   FUZZMINIMIZETIME  default 2s: how long a new or failing input is
#                     minimised; 0 turns minimising off
#   FUZZFRESH=1       start from the committed corpus alone, with a throwaway
#                     cache instead of Go's
# make test sets FUZZMINIMIZETIME=0 and FUZZFRESH=1: in a few seconds a
# run would otherwise spend its time minimising, or replaying the hundreds of
# inputs Go's cache gathers over long runs.
set -euo pipefail
cd "$(dirname "$0")/.."

go=${GO:-go}
fuzztime=${FUZZTIME:-30s}
minimizetime=${FUZZMINIMIZETIME:-2s}

# Every fuzz target of the module, as "package target" lines, found by
# asking go test for the Fuzz functions of the packages whose test files
# declare one: a new target is fuzzed without being listed here. One go
# test lists them all (it builds the packages' tests side by side and
# prints each package's names before its "ok" line).
discover() {
	local pkgs=()
	while read -r dir pkg; do
		grep -qs '^func Fuzz' "$dir"/*_test.go && pkgs+=("$pkg")
	done < <("$go" list -f '{{.Dir}} {{.ImportPath}}' ./...)
	[ ${#pkgs[@]} -gt 0 ] || return 0
	local out names=()
	out=$("$go" test -list '^Fuzz' "${pkgs[@]}") || {
		printf '%s\n' "$out" >&2
		return 1
	}
	while IFS= read -r line; do
		case $line in
		Fuzz*) names+=("$line") ;;
		ok*)
			pkg=$(awk '{print $2}' <<<"$line")
			for name in ${names[@]+"${names[@]}"}; do
				echo "$pkg $name"
			done
			names=()
			;;
		esac
	done <<<"$out"
}
targets=$(discover) || {
	echo "fuzz.sh: cannot list the fuzz targets (above: what go reported)" >&2
	exit 2
}
mapfile -t all <<<"$targets"
if [ -z "$targets" ]; then
	echo "fuzz.sh: found no fuzz targets" >&2
	exit 2
fi
if [ "${1:-}" = --list ]; then
	printf '%s\n' "${all[@]}"
	exit 0
fi

selected=()
if [ $# -eq 0 ]; then
	selected=("${all[@]}")
else
	for name in "$@"; do
		found=
		for entry in "${all[@]}"; do
			if [ "${entry#* }" = "$name" ]; then
				selected+=("$entry")
				found=1
			fi
		done
		if [ -z "$found" ]; then
			echo "fuzz.sh: unknown target $name" >&2
			exit 2
		fi
	done
fi

# Each package's test binary is built once, with go test's fuzzing
# instrumentation (go test -c -fuzz), and run once per target from the
# package's directory, as go test -fuzz would: a failing input is written
# to that directory's testdata/fuzz/<Target>/. Building it for each
# target again would cost a link of the package's tests per target.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
log=$work/log
gocache=$("$go" env GOCACHE)
summary=()
failed=0
for entry in "${selected[@]}"; do
	pkg=${entry% *}
	target=${entry#* }
	echo "== $target ($pkg, $fuzztime)"
	bin=$work/bin/$(tr / _ <<<"$pkg").test
	if [ ! -e "$bin" ] && [ ! -e "$bin.failed" ]; then
		"$go" test -c -fuzz=. -o "$bin" "$pkg" || touch "$bin.failed"
		"$go" list -f '{{.Dir}}' "$pkg" >"$bin.dir"
	fi
	if [ -e "$bin.failed" ]; then
		summary+=("$(printf '%-22s %10s execs %5s new  %s' "$target" "?" "?" "FAIL (its package's tests do not build)")")
		failed=1
		continue
	fi
	dir=$(cat "$bin.dir")
	# go test's own fuzzing cache for the package, or with FUZZFRESH
	# a throwaway one.
	cachedir=$gocache/fuzz/$pkg
	if [ -n "${FUZZFRESH:-}" ]; then
		cachedir=$work/cache/$pkg
	fi
	status=ok
	if ! (cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" \
		-test.fuzzminimizetime="$minimizetime" -test.fuzzcachedir="$cachedir") 2>&1 | tee "$log"; then
		status=FAIL
		# Go's fuzzing coordinator sometimes reports the end of -fuzztime
		# as "context deadline exceeded", with no failing input and no
		# panic. That is not a finding; anything else is.
		if grep -q 'context deadline exceeded' "$log" &&
			! grep -qE 'Failing input written to|panic:|--- FAIL: .*/' "$log"; then
			status="ok (deadline reported as a failure by the fuzzer; ignored)"
		fi
	fi
	[ "${status%% *}" = ok ] || failed=1
	last=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -n 1 || true)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	found=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
	if [ -z "$execs" ] && [ "${status%% *}" = ok ]; then
		status="ok, but no fuzzing: FUZZTIME ran out replaying the cached corpus (raise it, or set FUZZFRESH=1)"
	fi
	summary+=("$(printf '%-22s %10s execs %5s new  %s' "$target" "${execs:-?}" "${found:-?}" "$status")")
done

echo "== fuzz summary ($fuzztime per target)"
printf '%s\n' "${summary[@]}"
exit "$failed"
