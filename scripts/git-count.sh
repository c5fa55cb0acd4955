#!/usr/bin/env bash
# Counts the git processes the engine runs for the attempts of
# `make demo-groundhog` (three attempts: a success, a refuted one that is
# rewound, and its successful retry), per git subcommand.
# A git put first on PATH logs its argv, then runs the real git: no ptrace
# (strace) needed; Linux, for the parent's command line in /proc. (gitops'
# TestAttemptCycleGitProcesses counts the same way, per cycle, and fails
# above 12.)
#
# Only the processes whose parent is `orbit serve` are counted: the demo
# script's own git commands, and those of `orbit groundhog verify`, are not
# part of an attempt.
set -euo pipefail
cd "$(dirname "$0")/.."
orbit=${ORBIT:-bin/orbit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/git.log

mkdir "$tmp/bin"
real=$(command -v git)
cat > "$tmp/bin/git" <<SH
#!/bin/sh
case "\$(tr '\\0' ' ' < /proc/\$PPID/cmdline 2>/dev/null)" in
*orbit*" serve "*) printf '%s\\n' "\$*" >> "$log" ;;
esac
exec "$real" "\$@"
SH
chmod +x "$tmp/bin/git"
PATH="$tmp/bin:$PATH" ORBIT=$orbit scripts/demo-groundhog.sh >"$tmp/demo.out" 2>&1 || { cat "$tmp/demo.out" >&2; exit 1; }

touch "$log"
total=$(wc -l < "$log")
attempts=$(grep -c -- '--create groundhog/' "$log" || true)
echo "git processes run by the engine: $total for $attempts attempt(s)"
# The subcommand is the first argument after git's global options.
awk '{ for (i = 1; i <= NF; i++) { if ($i == "-c") { i++; continue } if ($i ~ /^-/) continue; print $i; break } }' "$log" |
sort | uniq -c | sort -rn
