#!/usr/bin/env bash
# Runs the seeded job example_cli_agent over the real Claude Code CLI,
# offline: Claude Code talks to a scripted Anthropic Messages server on
# loopback (internal/cmd/scriptedmodel, script examples/cli-agent/script.json).
# It writes hello.txt through Write, reads it back through Read, and the run
# records both calls under Orbit's names.
set -euo pipefail
cd "$(dirname "$0")/.."
orbit=${ORBIT:-bin/orbit}
model=${SCRIPTED_MODEL:-bin/scriptedmodel}
demo=.demo-cli-agent

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

rm -rf "$demo" && mkdir -p "$demo/home"
demo=$(cd "$demo" && pwd)

"$model" -script examples/cli-agent/script.json >"$demo/model.url" 2>"$demo/model.log" &
model_pid=$!
trap 'kill "$model_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$demo/model.url" ] && break; sleep 0.1; done

# The seeded executor claude runs `claude` from the engine's PATH; the
# engine this script starts talks to the scripted server and nothing else.
export PATH="$(dirname "$claude"):$PATH"
export HOME="$demo/home" CLAUDE_CONFIG_DIR="$demo/home/.claude"
export ANTHROPIC_BASE_URL=$(cat "$demo/model.url") ANTHROPIC_API_KEY=sk-ant-demo
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1
export DISABLE_AUTOUPDATER=1 CLAUDE_CODE_MAX_RETRIES=0

"$orbit" --root "$demo" init >/dev/null
echo "== orbit job run example_cli_agent, over $("$claude" --version)"
run=$("$orbit" --root "$demo" job run example_cli_agent)
echo "== hello.txt"
cat "$demo/hello.txt"
echo "== orbit run trace $run"
"$orbit" --root "$demo" run trace "$run"
# The engine the first command started holds Claude Code's environment:
# stop it with the scripted server.
engine_pid=$(sed -n 's/^ *"pid": \([0-9]*\),$/\1/p' "$demo/.orbit/state/engine.json" 2>/dev/null || true)
[ -n "$engine_pid" ] && kill "$engine_pid" 2>/dev/null || true
kill "$model_pid" && wait "$model_pid" || true
