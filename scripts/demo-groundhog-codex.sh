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
. scripts/demo-agent-lib.sh
orbit=${ORBIT:-bin/orbit}
model=${SCRIPTED_MODEL:-bin/scriptedmodel}
demo=.demo-groundhog-codex

codex=$(find_agent codex Codex @openai/codex CODEX)

rm -rf "$demo" && mkdir -p "$demo/repo" "$demo/home"
demo=$(cd "$demo" && pwd)
demo_repo "$demo/repo"

start_model "$demo" -api openai -script examples/groundhog-cli/codex_script.json

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
run_counting_task "$demo" "$codex" example_codex_agent
report_counting_task "$demo"
