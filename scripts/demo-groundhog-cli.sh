#!/usr/bin/env bash
# Runs a two-checkpoint Groundhog plan over the real Claude Code CLI, offline:
# Claude Code talks to a scripted Anthropic Messages server on loopback
# (internal/cmd/scriptedmodel, script examples/groundhog-cli/script.json).
# Checkpoint "one" is closed through mcp__orbit__checkpoint_success;
# checkpoint "two" fails its first attempt (the verifier refutes the file the
# agent wrote through Bash), is rewound, and succeeds on the second, whose
# prompt holds the failure report and nothing of the first conversation.
set -euo pipefail
cd "$(dirname "$0")/.."
orbit=${ORBIT:-bin/orbit}
model=${SCRIPTED_MODEL:-bin/scriptedmodel}
demo=.demo-groundhog-cli

claude=${CLAUDE:-}
if [ -z "$claude" ]; then
  if [ -x tools/agents/node_modules/.bin/claude ]; then
    claude=$PWD/tools/agents/node_modules/.bin/claude
  elif command -v claude >/dev/null; then
    claude=$(command -v claude)
  fi
fi
if [ -z "$claude" ]; then
  echo "Claude Code is not installed. Install the pinned version with 'make agents'" >&2
  echo "(npm ci in tools/agents), or 'npm install -g @anthropic-ai/claude-code', or set CLAUDE=<path>." >&2
  exit 1
fi

# A repository that does not depend on this machine's git configuration.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="Demo User" GIT_AUTHOR_EMAIL=demo@orbit.invalid
export GIT_COMMITTER_NAME="Demo User" GIT_COMMITTER_EMAIL=demo@orbit.invalid

rm -rf "$demo" && mkdir -p "$demo/repo" "$demo/home"
demo=$(cd "$demo" && pwd)
git -C "$demo/repo" init --quiet --initial-branch=main
echo "# counting" > "$demo/repo/README.md"
git -C "$demo/repo" add README.md && git -C "$demo/repo" commit --quiet -m "Start counting"

"$model" -script examples/groundhog-cli/script.json >"$demo/model.url" 2>"$demo/model.log" &
model_pid=$!
trap 'kill "$model_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$demo/model.url" ] && break; sleep 0.1; done

# Claude Code, started by the engine this script starts, talks to the
# scripted server and nothing else.
export HOME="$demo/home" CLAUDE_CONFIG_DIR="$demo/home/.claude"
export ANTHROPIC_BASE_URL=$(cat "$demo/model.url") ANTHROPIC_API_KEY=sk-ant-demo
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1
export DISABLE_AUTOUPDATER=1 CLAUDE_CODE_MAX_RETRIES=0

"$orbit" --root "$demo" init >/dev/null
mkdir -p "$demo/.orbit/executors" "$demo/.orbit/activities"
sed "s|^  command: claude$|  command: $claude|" examples/groundhog-cli/claude_code.yaml >"$demo/.orbit/executors/claude_code.yaml"
cp examples/groundhog-cli/example_cli_agent.yaml "$demo/.orbit/activities/"
task=$("$orbit" --root "$demo" task create --title "Count to two" \
  --plan examples/groundhog-cli/plan.yaml --workspace "$demo/repo")
echo "== task $task, over $("$claude" --version)"
"$orbit" --root "$demo" groundhog run "$task" --activity example_cli_agent
echo "== orbit groundhog show $task"
"$orbit" --root "$demo" groundhog show "$task"
echo "== the CLI tool calls in the audit"
"$orbit" --root "$demo" groundhog show "$task" --audit --json |
  python3 -c 'import json,sys
a=json.load(sys.stdin)
for cp in a["checkpoints"]:
    for at in cp["attempts"]:
        for c in at.get("tool_calls", []):
            print("%s attempt %d: %s (%s)" % (cp["id"], at["attempt"], c.get("agent_tool", ""), c["name"]))'
echo "== orbit groundhog verify $task"
"$orbit" --root "$demo" groundhog verify "$task"
echo "== git log"
git -C "$demo/repo" log --format='%h %s' main
# The engine the first command started holds Claude Code's environment:
# stop it with the scripted server.
engine_pid=$(sed -n 's/^ *"pid": \([0-9]*\),$/\1/p' "$demo/.orbit/state/engine.json" 2>/dev/null || true)
[ -n "$engine_pid" ] && kill "$engine_pid" 2>/dev/null || true
kill "$model_pid" && wait "$model_pid" || true
echo "== what the scripted model was asked"
cat "$demo/model.log"
