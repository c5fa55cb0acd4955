#!/bin/sh
# fsyncs.sh: counts fsync-family calls with strace.
#
# First the fsyncs per event of a strict log under load (64 concurrent
# appenders, EVENTS events, default 2000), for the path appends took before
# the group commit (each event its own acknowledged publish) and for
# events.Append today. The counts include the few fsyncs of opening the
# store.
#
# Then the fsyncs per step of W1 (STEPS sequential trivial steps, default
# 200, on orbit serve with a fresh strict project, run once to warm up and
# once counted), each attributed to the file it syncs: the event log's
# blocks, the command queue's, its consumers' state, the leases bucket,
# the views file.
set -eu
GO=${GO:-go}
EVENTS=${EVENTS:-2000}
STEPS=${STEPS:-200}
if ! command -v strace >/dev/null 2>&1; then
	echo "fsyncs.sh: installing strace" >&2
	apt-get install -y strace >/dev/null
fi
tmp=$(mktemp -d)
trap 'if [ -n "${serve:-}" ]; then kill "$serve" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
$GO test -c -o "$tmp/bench.test" ./internal/bench/
for path in single orbit; do
	strace -f -qq -c -o "$tmp/$path.strace" -e trace=fsync,fdatasync \
		"$tmp/bench.test" -test.run '^$' -test.bench "StrictLoad/path=$path\$" \
		-test.benchtime "${EVENTS}x" -test.count 1 >"$tmp/$path.out"
	n=$(awk '$NF == "fsync" || $NF == "fdatasync" { s += $4 } END { print s + 0 }' "$tmp/$path.strace")
	printf '%-6s %6d events  %6d fsyncs  %.3f fsyncs/event\n' "$path" "$EVENTS" "$n" \
		"$(echo "$n $EVENTS" | awk '{ print $1 / $2 }')"
done

bin=$tmp/orbit
$GO build -o "$bin" ./cmd/orbit
root=$tmp/root
mkdir "$root"
(
	cd "$root"
	"$bin" init >/dev/null
	{
		printf 'schemaVersion: 2\nkind: Job\nmetadata: {name: w1}\nspec:\n  steps:\n'
		i=0
		while [ "$i" -lt "$STEPS" ]; do
			printf '    - id: s%d\n      spec: {type: deterministic, action: echo, config: {step: %d}}\n' "$i" "$i"
			i=$((i + 1))
		done
	} >.orbit/jobs/w1.yaml
)
"$bin" serve --root "$root" >"$tmp/serve.log" 2>&1 &
serve=$!
until "$bin" engine --root "$root" >/dev/null 2>&1; do sleep 0.2; done
"$bin" run w1 --root "$root" >/dev/null 2>&1
strace -f -qq -y -e trace=fsync,fdatasync -o "$tmp/w1.strace" -p "$serve" &
tracer=$!
sleep 1
"$bin" run w1 --root "$root" >/dev/null 2>&1
# The projector folds the run's last events after the run ends.
sleep 1
kill -INT "$tracer"
wait "$tracer" || true
state=$root/.orbit/state
grep -E '^[0-9]+ +f(data)?sync\(' "$tmp/w1.strace" |
	sed -E 's/^[0-9]+ +(f(data)?sync)\([0-9]+<([^>]*)>.*/\3/' |
	sed -E "s#^$state/##; s#nats/jetstream/[^/]+/streams/##; s#/msgs/[0-9]+\.blk\$# (message blocks)#; s#/obs/# consumer #" |
	sort | uniq -c | sort -rn |
	awk -v steps="$STEPS" '{ n = $1; $1 = ""; total += n; printf "W1     %6d fsyncs  %.2f/step  %s\n", n, n / steps, substr($0, 2) }
		END { printf "W1     %6d fsyncs  %.2f/step  in all, %d steps\n", total, total / steps, steps }'
