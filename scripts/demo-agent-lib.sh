# Shared by the demos that drive a real CLI agent against a scripted model
# server (demo-groundhog-cli.sh, demo-groundhog-codex.sh, demo-cli-agent.sh).
# Sourced from the repository's root, after `set -euo pipefail`.

# find_agent BINARY NAME PACKAGE VAR prints the agent's path: $VAR if set,
# else the pinned one of make agents, else BINARY on PATH; when none is
# found it says how to install it and exits 1.
find_agent() {
  local binary=$1 name=$2 package=$3 var=$4
  local path=${!var:-}
  if [ -z "$path" ]; then
    if [ -x "tools/agents/node_modules/.bin/$binary" ]; then
      path=$PWD/tools/agents/node_modules/.bin/$binary
    elif command -v "$binary" >/dev/null; then
      path=$(command -v "$binary")
    fi
  fi
  if [ -z "$path" ]; then
    echo "$name is not installed. Install the pinned version with 'make agents'" >&2
    echo "(npm ci in tools/agents), or 'npm install -g $package', or set $var=<path>." >&2
    exit 1
  fi
  echo "$path"
}

# demo_repo DIR makes a repository on main with one commit, independent of
# this machine's git configuration.
demo_repo() {
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
  export GIT_AUTHOR_NAME="Demo User" GIT_AUTHOR_EMAIL=demo@orbit.invalid
  export GIT_COMMITTER_NAME="Demo User" GIT_COMMITTER_EMAIL=demo@orbit.invalid
  git -C "$1" init --quiet --initial-branch=main
  echo "# counting" >"$1/README.md"
  git -C "$1" add README.md && git -C "$1" commit --quiet -m "Start counting"
}

# start_model DEMO ARGS... starts the scripted model server with ARGS,
# its URL in DEMO/model.url and what it was asked in DEMO/model.log, and
# waits for it to listen. It is stopped when the script exits.
start_model() {
  local demo=$1
  shift
  "$model" "$@" >"$demo/model.url" 2>"$demo/model.log" &
  model_pid=$!
  trap 'kill "$model_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 50); do [ -s "$demo/model.url" ] && break; sleep 0.1; done
}

# claude_env DEMO points Claude Code, started by the engine the demo
# starts, at the scripted server and nothing else.
claude_env() {
  export HOME="$1/home" CLAUDE_CONFIG_DIR="$1/home/.claude"
  ANTHROPIC_BASE_URL=$(cat "$1/model.url")
  export ANTHROPIC_BASE_URL ANTHROPIC_API_KEY=sk-ant-demo
  export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1
  export DISABLE_AUTOUPDATER=1 CLAUDE_CODE_MAX_RETRIES=0
}

# stop_demo DEMO stops the engine the demo's first command started (it
# holds the agent's environment) and the scripted server.
stop_demo() {
  local engine_pid
  engine_pid=$(sed -n 's/^ *"pid": \([0-9]*\),$/\1/p' "$1/.orbit/state/engine.json" 2>/dev/null || true)
  [ -n "$engine_pid" ] && kill "$engine_pid" 2>/dev/null || true
  kill "$model_pid" && wait "$model_pid" || true
}

# audit_calls DEMO TASK lists the agent's tool calls in the task's audit,
# with the agent's name and Orbit's.
audit_calls() {
  "$orbit" --root "$1" groundhog show "$2" --audit --json |
    python3 -c 'import json,sys
a=json.load(sys.stdin)
for cp in a["checkpoints"]:
    for at in cp["attempts"]:
        for c in at.get("tool_calls", []):
            print("%s attempt %d: %s (%s)" % (cp["id"], at["attempt"], c.get("agent_tool", ""), c["name"]))'
}

# run_counting_task DEMO AGENT ACTIVITY creates the two-checkpoint task of
# examples/groundhog-cli over DEMO/repo, its id in $task, and runs it with
# ACTIVITY, over the CLI agent AGENT.
run_counting_task() {
  task=$("$orbit" --root "$1" task create --title "Count to two" \
    --plan examples/groundhog-cli/plan.yaml --workspace "$1/repo")
  echo "== task $task, over $("$2" --version)"
  "$orbit" --root "$1" groundhog run "$task" --activity "$3"
}

# report_counting_task DEMO prints the agent's tool calls in the audit of
# task $task, its verification and the repository's log, stops the demo,
# and prints what the scripted model was asked.
report_counting_task() {
  echo "== the CLI tool calls in the audit"
  audit_calls "$1" "$task"
  echo "== orbit groundhog verify $task"
  "$orbit" --root "$1" groundhog verify "$task"
  echo "== git log"
  git -C "$1/repo" log --format='%h %s' main
  stop_demo "$1"
  echo "== what the scripted model was asked"
  cat "$1/model.log"
}
