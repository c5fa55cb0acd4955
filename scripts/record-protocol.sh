#!/bin/sh
# record-protocol.sh: records the log of one run of each kind of job, as
# the engine built from this tree writes it, into DIR (one JSON-lines file
# a kind: the run's events and its child runs', in log order). The logs in
# internal/compat/testdata/protocol/ were recorded with it; a test replays
# them (internal/compat, TestStoredLogs*), so a change of the step protocol
# keeps the logs of the earlier one readable. Usage: record-protocol.sh DIR
set -eu
GO=${GO:-go}
out=$(cd "${1:?usage: record-protocol.sh DIR}" && pwd)
tmp=$(mktemp -d)
root=$tmp/root
bin=$tmp/orbit
trap 'if [ -n "${pid:-}" ]; then kill "$pid" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
$GO build -o "$bin" ./cmd/orbit
mkdir "$root"
cd "$root"
"$bin" init >/dev/null
cat >.orbit/jobs/sequence.yaml <<'YAML'
schemaVersion: 2
kind: Job
metadata: {name: sequence}
spec:
  steps:
    - id: s0
      spec: {type: deterministic, action: echo, config: {step: 0}}
    - id: s1
      spec: {type: deterministic, action: echo, config: {step: 1}}
    - id: s2
      spec: {type: shell, program: echo, args: ["{{ steps.s1.output.step }}"], allowed_programs: [echo]}
YAML
cat >.orbit/jobs/fan_echo.yaml <<'YAML'
schemaVersion: 2
kind: Job
metadata: {name: fan_echo}
spec:
  default_input: {letters: [a, b, c, d]}
  steps:
    - id: tag
      fan_out:
        items: "{{ input.letters }}"
        max_workers: 2
        worker:
          id: w
          spec: {type: deterministic, action: echo, config: {tag: "{{ item }}"}}
      fan_in: {join: {mode: all}, collect: tags}
    - id: count
      spec: {type: deterministic, action: echo, config: {tags: "{{ steps.tags.output }}"}}
YAML
cat >.orbit/jobs/gate.yaml <<'YAML'
schemaVersion: 2
kind: Job
metadata: {name: gate}
spec:
  steps:
    - id: build
      spec: {type: shell, program: echo, args: [built], allowed_programs: [echo]}
    - id: approve
      wait: {signal: approved}
    - id: deploy
      spec: {type: shell, program: echo, args: ["approved by {{ steps.approve.output.by }}"], allowed_programs: [echo]}
YAML
cat >.orbit/jobs/paused_now.yaml <<'YAML'
schemaVersion: 2
kind: Job
metadata: {name: paused_now}
spec:
  steps:
    - id: nap
      spec: {type: shell, program: sh, args: ["-c", "sleep 3; echo napped"], allowed_programs: [sh]}
    - id: after
      spec: {type: deterministic, action: echo, config: {after: nap}}
YAML
cat >.orbit/jobs/invoke_wait.yaml <<'YAML'
schemaVersion: 2
kind: Job
metadata: {name: invoke_wait}
spec:
  steps:
    - id: child
      target: activity:invoke_and_wait
      default_input: {job_name: hello, run_input: {name: Ada}}
    - id: after
      spec: {type: deterministic, action: echo, config: {child: "{{ steps.child.output.status }}"}}
YAML
cat >.orbit/jobs/release.yaml <<'YAML'
schemaVersion: 2
kind: Job
metadata: {name: release}
spec:
  steps:
    - id: build
      spec: {type: shell, program: echo, args: [built], allowed_programs: [echo]}
    - id: check
      spec: {type: shell, program: test, args: [-f, ready], allowed_programs: [test]}
    - id: publish
      spec: {type: deterministic, action: echo, config: {published: true}}
YAML
"$bin" serve >"$tmp/serve.log" 2>&1 &
pid=$!
until "$bin" engine >/dev/null 2>&1; do sleep 0.2; done

# await RUN TYPE waits for the run's first event of TYPE.
await() {
	until "$bin" run events "$1" -t "$2" | grep -q "$2"; do sleep 0.2; done
}

# finish RUN waits for the run's end.
finish() {
	"$bin" run tail "$1" >/dev/null 2>&1 || true
}

# record KIND RUN...: the runs' events and their children's, by sequence.
record() {
	kind=$1
	shift
	ids=$("$bin" run history --json | python3 -c '
import json, sys
runs, want = json.load(sys.stdin), set(sys.argv[1:])
for r in sorted(runs, key=lambda r: r["requested_seq"]):
    if r["id"] in want or (r.get("parent") or {}).get("run_id") in want:
        want.add(r["id"])
print("\n".join(want))' "$@")
	for id in $ids; do "$bin" run events "$id" --json; done | python3 -c '
import json, sys
dec, text, evs = json.JSONDecoder(), sys.stdin.read(), []
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    part, i = dec.raw_decode(text, i)
    evs += part
for ev in sorted(evs, key=lambda e: e["seq"]):
    del ev["seq"]
    print(json.dumps(ev, separators=(",", ":"), ensure_ascii=False))' >"$out/$kind.jsonl"
}

for job in sequence fan_echo invoke_wait example example_fan_out example_loop example_parallel example_recovery example_retry example_when example_child_job example_agent; do
	run=$("$bin" run "$job" --detach)
	finish "$run"
	record "$job" "$run"
done

run=$("$bin" run gate --detach)
until "$bin" run show "$run" | grep -q '^Waiting:'; do sleep 0.2; done
"$bin" run signal "$run" approved --data '{"by":"ada"}' >/dev/null
finish "$run"
record gate "$run"

run=$("$bin" run example_slow --detach)
await "$run" step.started
"$bin" run cancel "$run" >/dev/null
finish "$run"
record cancelled "$run"

# A step stopped by pause --now and run again on unpause (attempt 2, no
# retry spent).
run=$("$bin" run paused_now --detach)
await "$run" step.started
"$bin" run pause "$run" --now >/dev/null
await "$run" step.finished
"$bin" run unpause "$run" >/dev/null
finish "$run"
record paused_now "$run"

# A retry from a step (reused_from): the failed run and its retry.
run=$("$bin" run release --detach)
finish "$run"
touch ready
retry=$("$bin" run retry "$run" --from check 2>/dev/null) || true
finish "$retry"
record retry_from "$run" "$retry"
