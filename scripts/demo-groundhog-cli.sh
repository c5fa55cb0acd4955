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
. scripts/demo-agent-lib.sh
orbit=${ORBIT:-bin/orbit}
model=${SCRIPTED_MODEL:-bin/scriptedmodel}
demo=.demo-groundhog-cli

claude=$(find_agent claude "Claude Code" @anthropic-ai/claude-code CLAUDE)

rm -rf "$demo" && mkdir -p "$demo/repo" "$demo/home"
demo=$(cd "$demo" && pwd)
demo_repo "$demo/repo"

start_model "$demo" -script examples/groundhog-cli/script.json
claude_env "$demo"

"$orbit" --root "$demo" init >/dev/null
mkdir -p "$demo/.orbit/executors" "$demo/.orbit/activities"
sed "s|^  command: claude$|  command: $claude|" examples/groundhog-cli/claude_code.yaml >"$demo/.orbit/executors/claude_code.yaml"
cp examples/groundhog-cli/example_cli_agent.yaml "$demo/.orbit/activities/"
run_counting_task "$demo" "$claude" example_cli_agent
echo "== orbit groundhog show $task"
"$orbit" --root "$demo" groundhog show "$task"
report_counting_task "$demo"
