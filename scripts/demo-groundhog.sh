#!/usr/bin/env bash
# Runs a two-checkpoint Groundhog plan on a throwaway repository, offline:
# the agent's turns are replayed from examples/groundhog/fixture.json.
# Checkpoint "test" fails its first attempt (the verifier refutes it), is
# rewound, and succeeds on the second.
set -euo pipefail
cd "$(dirname "$0")/.."
orbit=${ORBIT:-bin/orbit}
demo=.demo-groundhog

# A repository that does not depend on this machine's git configuration.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="Demo User" GIT_AUTHOR_EMAIL=demo@orbit.invalid
export GIT_COMMITTER_NAME="Demo User" GIT_COMMITTER_EMAIL=demo@orbit.invalid
# The engine this script starts replays the agent instead of calling a model.
export ORBIT_REPLAY_FIXTURE="$PWD/examples/groundhog/fixture.json"

rm -rf "$demo" && mkdir -p "$demo/repo"
git -C "$demo/repo" init --quiet --initial-branch=main
echo "# greeter" > "$demo/repo/README.md"
git -C "$demo/repo" add README.md && git -C "$demo/repo" commit --quiet -m "Start the greeter"

"$orbit" --root "$demo" init >/dev/null
task=$("$orbit" --root "$demo" task create --title "Greeter with a test" \
  --plan examples/groundhog/plan.yaml --workspace "$demo/repo")
echo "== task $task"
"$orbit" --root "$demo" groundhog run "$task"
echo "== orbit groundhog show $task"
"$orbit" --root "$demo" groundhog show "$task"
echo "== orbit groundhog verify $task"
"$orbit" --root "$demo" groundhog verify "$task"
echo "== git log"
git -C "$demo/repo" log --format='%h %s' main
echo "== scratch branches kept for inspection"
git -C "$demo/repo" branch --list 'groundhog/*'
