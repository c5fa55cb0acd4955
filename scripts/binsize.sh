#!/usr/bin/env bash
# The binary's size (make binsize; see "The binary" in ARCHITECTURE.md).
#
# 1. Nothing reachable in cmd/orbit may look a method up by reflection
#    with a name the compiler cannot see (reflect.Value.Method, or
#    MethodByName of a variable, as text/template's field lookup does):
#    the linker then keeps every exported method of every reachable type,
#    and the binary grows by half. The linker's -dumpdep prints each
#    reachable symbol with the edge that first reached it, and flags
#    such a function <ReflectMethod>; one found fails the check, with
#    the chain of calls from main that reaches it.
# 2. The binary make build ships ($BIN) is at most $MAX_MB MB.
#
# GO, BIN, LDFLAGS and TAGS come from the Makefile; the build flags are
# make build's, so only the link runs again. The check's link adds a build
# tag no file uses (binsizecheck): the go command keeps a link's output
# under the main package's action id, which -trimpath keeps free of
# -ldflags, and prints it again whenever a later go build finds its binary
# up to date. Without the tag, make build after make binsize would print
# -dumpdep's 280,000 lines.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
BIN=${BIN:-bin/orbit}
LDFLAGS=${LDFLAGS:--s -w}
TAGS=${TAGS:-grpcnotrace}
MAX_MB=${MAX_MB:-70}

deps=$(mktemp)
trap 'rm -f "$deps"' EXIT
"$GO" build -trimpath -tags "$TAGS,binsizecheck" -ldflags "$LDFLAGS -dumpdep" -o /dev/null ./cmd/orbit 2>"$deps" || {
	grep -v -- ' -> ' "$deps" >&2
	exit 1
}

# "from -> to", each name perhaps followed by flags (" <UsedInIface>").
awk -F ' -> ' '
	NF == 2 {
		from = $1; to = $2
		sub(/ <.*$/, "", from)
		if ($2 ~ /<ReflectMethod>/) flagged[++n] = to
		sub(/ <.*$/, "", to)
		if (!(to in parent)) parent[to] = from
	}
	END {
		for (i = 1; i <= n; i++) {
			sub(/ <.*$/, "", flagged[i])
			print "reachable reflect method lookup: " flagged[i]
			for (s = parent[flagged[i]]; s != "" && s != "_"; s = parent[s]) {
				print "    reached from " s
				if (s == "main.main") break
			}
		}
		exit (n > 0)
	}' "$deps" || {
	echo "binsize: the linker keeps every exported method (see \"The binary\" in ARCHITECTURE.md)" >&2
	exit 1
}
echo "binsize: no reachable reflect method lookup; the linker removes unused methods"

size=$(stat -c %s "$BIN")
echo "binsize: $BIN is $size bytes (at most $MAX_MB MB)"
if [ "$size" -gt $((MAX_MB * 1000 * 1000)) ]; then
	echo "binsize: $BIN is over $MAX_MB MB" >&2
	exit 1
fi
