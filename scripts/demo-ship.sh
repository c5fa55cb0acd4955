#!/usr/bin/env bash
# Ships a backlog of three tasks, offline, on a throwaway repository with a
# bare origin: orbit run auto gives each task a worktree of its own, has an
# agent implement it (its turns replayed from examples/ship/fixtures/<task>.json),
# commits it naming the task, rebases it onto origin's main, fast-forwards
# main and pushes it with an exact lease. T-1 and T-3 both touch greet.txt:
# the two independent tasks ship at once, and the third waits in its gate
# until the one it shares greet.txt with has shipped.
set -euo pipefail
cd "$(dirname "$0")/.."
orbit=${ORBIT:-bin/orbit}
demo=$PWD/.demo-ship

# A repository that does not depend on this machine's git configuration.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="Demo User" GIT_AUTHOR_EMAIL=demo@orbit.invalid
export GIT_COMMITTER_NAME="Demo User" GIT_COMMITTER_EMAIL=demo@orbit.invalid
# The engine this script starts replays each task's agent instead of
# calling a model: <directory>/<task id>.json.
export ORBIT_REPLAY_FIXTURE="$PWD/examples/ship/fixtures"

rm -rf "$demo" && mkdir -p "$demo"
git init --quiet --bare --initial-branch=main "$demo/origin.git"
git init --quiet --initial-branch=main "$demo/repo"
echo "# greeter" > "$demo/repo/README.md"
echo "hello" > "$demo/repo/greet.txt"
git -C "$demo/repo" add README.md greet.txt
git -C "$demo/repo" commit --quiet -m "Start the greeter"
git -C "$demo/repo" remote add origin "$demo/origin.git"
git -C "$demo/repo" push --quiet --set-upstream origin main

o() { "$orbit" --root "$demo/repo" "$@"; }
o init >/dev/null
t1=$(o task add --title "Greet in French" --acceptance "greet.txt says bonjour" --context-file greet.txt --status backlog)
t2=$(o task add --title "Add a farewell" --acceptance "farewell.txt says goodbye" --context-file farewell.txt --status backlog)
t3=$(o task add --title "Greet in Spanish" --acceptance "greet.txt says hola" --context-file greet.txt --status backlog)
echo "== backlog: $t1 $t2 $t3 ($t1 and $t3 share greet.txt)"
o task list
echo "== orbit run auto --mode local"
o run auto --mode local --poll-seconds 1
echo "== the tasks"
o task list
echo "== origin's main"
git -C "$demo/origin.git" log --format='%h %s' main
echo "== greet.txt on origin's main"
git -C "$demo/origin.git" show main:greet.txt
echo "== orbit task show $t3"
o task show "$t3"
echo "== orbit gc (a dry run), then orbit gc --apply"
o gc
o gc --apply
