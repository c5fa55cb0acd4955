#!/bin/sh
# fsyncs.sh: counts the fsyncs per event of a strict log under load (64
# concurrent appenders, EVENTS events, default 2000), with strace, for the
# path appends took before the group commit (each event its own acknowledged
# publish) and for events.Append today. The counts include the few fsyncs
# of opening the store.
set -eu
GO=${GO:-go}
EVENTS=${EVENTS:-2000}
if ! command -v strace >/dev/null 2>&1; then
	echo "fsyncs.sh: installing strace" >&2
	apt-get install -y strace >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$GO test -c -o "$tmp/bench.test" ./internal/bench/
for path in single orbit; do
	strace -f -qq -c -o "$tmp/$path.strace" -e trace=fsync,fdatasync \
		"$tmp/bench.test" -test.run '^$' -test.bench "StrictLoad/path=$path\$" \
		-test.benchtime "${EVENTS}x" -test.count 1 >"$tmp/$path.out"
	n=$(awk '$NF == "fsync" || $NF == "fdatasync" { s += $4 } END { print s + 0 }' "$tmp/$path.strace")
	printf '%-6s %6d events  %6d fsyncs  %.3f fsyncs/event\n' "$path" "$EVENTS" "$n" \
		"$(echo "$n $EVENTS" | awk '{ print $1 / $2 }')"
done
