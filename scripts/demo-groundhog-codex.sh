#!/usr/bin/env bash
# Runs the two-checkpoint Groundhog plan of demo-groundhog-cli over the real
# Codex CLI, offline: Codex talks to a scripted OpenAI Responses server on
# loopback (internal/cmd/scriptedmodel -api openai, script
# examples/groundhog-cli/codex_script.json). The files are written through
# Codex's shell; each attempt is closed through checkpoint_success of the
# mcp__orbit namespace, which Codex routes to `orbit mcp`. Checkpoint "two"
# fails its first attempt (the verifier refutes the file), is rewound, and
# succeeds on the second.
set -euo pipefail
cd "$(dirname "$0")/.."
orbit=${ORBIT:-bin/orbit}
model=${SCRIPTED_MODEL:-bin/scriptedmodel}
demo=.demo-groundhog-codex

codex=${CODEX:-}
if [ -z "$codex" ]; then
  if [ -x tools/agents/node_modules/.bin/codex ]; then
    codex=$PWD/tools/agents/node_modules/.bin/codex
  elif command -v codex >/dev/null; then
    codex=$(command -v codex)
  fi
fi
if [ -z "$codex" ]; then
  echo "Codex is not installed. Install the pinned version with 'make agents'" >&2
  echo "(npm ci in tools/agents), or 'npm install -g @openai/codex', or set CODEX=<path>." >&2
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

"$model" -api openai -script examples/groundhog-cli/codex_script.json >"$demo/model.url" 2>"$demo/model.log" &
model_pid=$!
trap 'kill "$model_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$demo/model.url" ] && break; sleep 0.1; done

# Codex, started by the engine this script starts, reads its configuration
# from a fresh CODEX_HOME and talks to the scripted server as its model
# provider, with the key from ORBIT_DEMO_OPENAI_KEY.
export HOME="$demo/home" CODEX_HOME="$demo/home" ORBIT_DEMO_OPENAI_KEY=sk-demo
url=$(cat "$demo/model.url")

"$orbit" --root "$demo" init >/dev/null
mkdir -p "$demo/.orbit/executors" "$demo/.orbit/activities"
sed "s|^  command: codex$|  command: $codex\n  args: [\"-c\", \"model_provider=\\\\\"demo\\\\\"\", \"-c\", \"model_providers.demo.name=\\\\\"demo\\\\\"\", \"-c\", \"model_providers.demo.base_url=\\\\\"$url/v1\\\\\"\", \"-c\", \"model_providers.demo.wire_api=\\\\\"responses\\\\\"\", \"-c\", \"model_providers.demo.env_key=\\\\\"ORBIT_DEMO_OPENAI_KEY\\\\\"\", \"-c\", \"model_providers.demo.request_max_retries=0\", \"-c\", \"model_providers.demo.stream_max_retries=0\"]|" \
  examples/groundhog-cli/codex.yaml >"$demo/.orbit/executors/codex.yaml"
cp examples/groundhog-cli/example_codex_agent.yaml "$demo/.orbit/activities/"
task=$("$orbit" --root "$demo" task create --title "Count to two" \
  --plan examples/groundhog-cli/plan.yaml --workspace "$demo/repo")
echo "== task $task, over $("$codex" --version)"
"$orbit" --root "$demo" groundhog run "$task" --activity example_codex_agent
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
# The engine the first command started holds Codex's environment: stop it
# with the scripted server.
engine_pid=$(sed -n 's/^ *"pid": \([0-9]*\),$/\1/p' "$demo/.orbit/state/engine.json" 2>/dev/null || true)
[ -n "$engine_pid" ] && kill "$engine_pid" 2>/dev/null || true
kill "$model_pid" && wait "$model_pid" || true
echo "== what the scripted model was asked"
cat "$demo/model.log"
