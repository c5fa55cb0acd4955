#!/usr/bin/env bash
# Runs the seeded job example_cli_agent over the real Claude Code CLI,
# offline: Claude Code talks to a scripted Anthropic Messages server on
# loopback (internal/cmd/scriptedmodel, script examples/cli-agent/script.json).
# It writes hello.txt through Write, reads it back through Read, and the run
# records both calls under Orbit's names.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/demo-agent-lib.sh
orbit=${ORBIT:-bin/orbit}
model=${SCRIPTED_MODEL:-bin/scriptedmodel}
demo=.demo-cli-agent

claude=$(find_agent claude "Claude Code" @anthropic-ai/claude-code CLAUDE)

rm -rf "$demo" && mkdir -p "$demo/home"
demo=$(cd "$demo" && pwd)

start_model "$demo" -script examples/cli-agent/script.json

# The seeded executor claude runs `claude` from the engine's PATH; the
# engine this script starts talks to the scripted server and nothing else.
export PATH="$(dirname "$claude"):$PATH"
claude_env "$demo"

"$orbit" --root "$demo" init >/dev/null
echo "== orbit job run example_cli_agent, over $("$claude" --version)"
run=$("$orbit" --root "$demo" job run example_cli_agent)
echo "== hello.txt"
cat "$demo/hello.txt"
echo "== orbit run trace $run"
"$orbit" --root "$demo" run trace "$run"
stop_demo "$demo"
