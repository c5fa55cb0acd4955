package main_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/tracing"
)

// tracedJob has a parallel, a fan-out and a child run; its shell step
// writes the TRACEPARENT it was given, and waits for a file so that a test
// can kill the engine while it runs.
const tracedJob = `
schemaVersion: 2
kind: Job
metadata: {name: traced}
spec:
  steps:
    - id: both
      parallel:
        branches:
          - {id: left, spec: {type: deterministic, action: echo, config: {v: l}}}
          - {id: right, spec: {type: deterministic, action: echo, config: {v: r}}}
    - id: per_item
      fan_out:
        items: "a b"
        worker:
          id: work
          spec: {type: deterministic, action: echo, config: {v: "{{ item }}"}}
      fan_in: {join: {mode: all}}
    - id: call
      spec: {type: deterministic, action: job.invoke, config: {job: traced_child}}
    - id: hold
      spec:
        type: shell
        program: sh
        args: ["-c", "echo $TRACEPARENT > traceparent.txt; while [ ! -f go.txt ]; do sleep 0.1; done"]
        allowed_programs: [sh]
`

const tracedChild = `
schemaVersion: 2
kind: Job
metadata: {name: traced_child}
spec:
  steps:
    - {id: inner, spec: {type: deterministic, action: echo, config: {v: child}}}
`

// spansOf waits until the receiver has the run span of runID and returns
// the spans of its trace.
func spansOf(t *testing.T, rcv *testkit.OTLPReceiver, trace, runSpan string) []testkit.Span {
	t.Helper()
	var out []testkit.Span
	waitFor(t, "the run's span", func() bool {
		out = out[:0]
		found := false
		for _, s := range rcv.Spans() {
			if s.TraceID == trace {
				out = append(out, s)
				found = found || s.SpanID == runSpan
			}
		}
		return found
	})
	return out
}

// runTracedAcrossAKill runs job traced (with traced_child) on p under the
// caller's traceparent: the engine is killed while its shell step waits,
// and a second one finishes the run. It returns the run's id once the run
// has succeeded.
func runTracedAcrossAKill(t *testing.T, p *testkit.Project, caller string) string {
	t.Helper()
	p.WriteFile(".orbit/jobs/traced.yaml", tracedJob)
	p.WriteFile(".orbit/jobs/traced_child.yaml", tracedChild)
	engine := serve(t, p)
	runID := runJob(t, p, "traced", "--detach", "--traceparent", caller)
	waitFor(t, "the shell step to start", func() bool {
		_, err := os.Stat(filepath.Join(p.Root, "traceparent.txt"))
		return err == nil
	})
	killEngine(t, engine)
	serve(t, p)
	p.WriteFile("go.txt", "")
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	require.Equal(t, events.StateSuccess, runView(t, p, runID).State)
	return runID
}

func TestOneTracePerRunWithItsSpanTreeAcrossAKill(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL())
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	runID := runTracedAcrossAKill(t, p, caller)

	trace := "0af7651916cd43dd8448eb211c80319c"
	root := tracing.RunSpanID(runID).String()
	spans := spansOf(t, rcv, trace, root)

	byID := exportedOnce(t, spans)
	for _, s := range spans {
		assert.Equal(t, trace, s.TraceID)
		assert.NotEmpty(t, s.Attrs["orbit.run_id"], s.Name)
		assert.NotEmpty(t, s.Attrs["orbit.job"], s.Name)
	}
	run := byID[root]
	assert.Equal(t, "b7ad6b7169203331", run.ParentID, "the caller's traceparent is the root's parent")
	assert.Equal(t, runID, run.Attrs["orbit.run_id"])

	step := func(key string) testkit.Span {
		t.Helper()
		s, ok := byID[tracing.StepSpanID(runID, key, 1).String()]
		require.True(t, ok, "no span for step %s in %v", key, names(spans))
		assert.Equal(t, key, s.Name)
		assert.Equal(t, key, s.Attrs["orbit.step"])
		return s
	}
	for _, key := range []string{"both", "per_item", "call", "hold"} {
		assert.Equal(t, root, step(key).ParentID, key)
	}
	for _, key := range []string{"both/left", "both/right", "per_item/1", "per_item/2"} {
		s := step(key)
		assert.Equal(t, root, s.ParentID, key)
		assert.Equal(t, "success", s.Attrs["orbit.step.state"])
		assert.NotEmpty(t, s.Attrs["orbit.step.type"])
		// A deterministic step has no activity.started under step
		// protocol 3: its step.finished names the worker.
		assert.NotEmpty(t, s.Attrs["orbit.worker"], key)
	}
	hold := step("hold")
	assert.Equal(t, "true", hold.Attrs["orbit.resumed"], "the step the restarted engine resumed is marked")
	assert.NotEmpty(t, hold.Attrs["orbit.worker"])

	// The child run is a child span of the step that invoked it, in the
	// same trace.
	call := step("call")
	var child testkit.Span
	for _, s := range spans {
		if s.ParentID == call.SpanID && strings.HasPrefix(s.Name, "run ") {
			child = s
		}
	}
	require.NotEmpty(t, child.SpanID, "no child run span under call in %v", names(spans))
	childRun := child.Attrs["orbit.run_id"]
	inner, ok := byID[tracing.StepSpanID(childRun, "inner", 1).String()]
	require.True(t, ok)
	assert.Equal(t, child.SpanID, inner.ParentID)

	// The shell step was given its own span as TRACEPARENT.
	data, err := os.ReadFile(filepath.Join(p.Root, "traceparent.txt"))
	require.NoError(t, err)
	assert.Equal(t, tracing.Traceparent(tracing.TraceID(runID, caller), tracing.StepSpanID(runID, "hold", 1)), strings.TrimSpace(string(data)))
}

func TestATraceIDDerivesFromTheRunID(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/config.yaml", "tracing:\n  endpoint: "+rcv.URL()+"\n")
	runID := runJob(t, p, "hello")
	spans := spansOf(t, rcv, tracing.TraceID(runID, "").String(), tracing.RunSpanID(runID).String())
	assert.GreaterOrEqual(t, len(spans), 2, "%v", names(spans))

	r := p.Orbit("job", "run", "hello", "--traceparent", "01-nonsense")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--traceparent")
}

// exportedOnce checks that each span was exported once, or, when a kill
// fell between an export and its record, once more by the next engine
// marked orbit.reexported (the first copy may not have reached the
// collector: the marked one is then the only one), and returns a copy of
// each by id.
func exportedOnce(t *testing.T, spans []testkit.Span) map[string]testkit.Span {
	t.Helper()
	copies := map[string][]testkit.Span{}
	for _, s := range spans {
		copies[s.SpanID] = append(copies[s.SpanID], s)
	}
	out := map[string]testkit.Span{}
	for id, cs := range copies {
		out[id] = cs[0]
		if len(cs) == 1 {
			continue
		}
		marked := 0
		for _, c := range cs {
			if c.Attrs["orbit.reexported"] == "true" {
				marked++
			}
		}
		if len(cs) != 2 || marked != 1 || cs[0].Engine == cs[1].Engine {
			t.Errorf("span %s (%s) exported %d times, %d marked as re-exported after a crash", id, cs[0].Name, len(cs), marked)
		}
	}
	return out
}

func names(spans []testkit.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// twoSteps is a job of two shell steps, one after the other.
const twoSteps = `
schemaVersion: 2
kind: Job
metadata: {name: two_steps}
spec:
  steps:
    - id: first
      spec: {type: shell, program: echo, args: [one], allowed_programs: [echo]}
    - id: second
      spec: {type: shell, program: echo, args: [two], allowed_programs: [echo]}
`

// TestASpanExportedBeforeACrashIsExportedAgainMarked: an engine killed
// between an export and the write of the position after it. The restarted
// engine cannot know whether the collector has those spans, so it exports
// them again, each marked orbit.reexported; every other span is exported
// once, unmarked. The restarted engine reads the run back from the log:
// its spans are still in the caller's trace, with all they record.
func TestASpanExportedBeforeACrashIsExportedAgainMarked(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/two_steps.yaml", twoSteps)
	p.Env = append(p.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL())
	died := serveToFailpoint(t, p, "tracing-after-export")
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	runID := runJob(t, p, "two_steps", "--detach", "--traceparent", caller)
	died()
	require.NotEmpty(t, rcv.Spans(), "the engine died before its first export")

	serve(t, p)
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	spans := spansOf(t, rcv, "0af7651916cd43dd8448eb211c80319c", tracing.RunSpanID(runID).String())
	assert.Len(t, rcv.Spans(), len(spans), "every span is in the caller's trace: %v", names(rcv.Spans()))
	for _, s := range spans {
		assert.Equal(t, "two_steps", s.Attrs["orbit.job"], s.Name)
		if s.Attrs["orbit.step"] != "" {
			assert.Equal(t, "shell", s.Attrs["orbit.step.type"], s.Name)
		}
	}

	copies := map[string][]testkit.Span{}
	for _, s := range spans {
		copies[s.SpanID] = append(copies[s.SpanID], s)
	}
	twice := 0
	for id, cs := range copies {
		switch len(cs) {
		case 1:
			assert.Empty(t, cs[0].Attrs["orbit.reexported"], "span %s (%s) exported once is not marked", id, cs[0].Name)
		case 2:
			twice++
			assert.Empty(t, cs[0].Attrs["orbit.reexported"], "span %s (%s): the first export", id, cs[0].Name)
			assert.Equal(t, "true", cs[1].Attrs["orbit.reexported"], "span %s (%s): the export after the crash", id, cs[1].Name)
			assert.NotEqual(t, cs[0].Engine, cs[1].Engine, "span %s: each engine exported it once", id)
		default:
			t.Errorf("span %s (%s) exported %d times: %+v", id, cs[0].Name, len(cs), cs)
		}
	}
	assert.Positive(t, twice, "the spans exported before the crash are exported again")
	for _, key := range []string{"first", "second"} {
		assert.Contains(t, copies, tracing.StepSpanID(runID, key, 1).String(), key)
	}
}

// TestEveryEngineOfAClusterExportsEachSpanOnce: three engines on a
// three-node cluster share the log, and one of them at a time exports its
// spans. Killed, another takes the export over from where it was.
func TestEveryEngineOfAClusterExportsEachSpanOnce(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps := clusterProjects(t, c, 3, "two_steps", twoSteps)
	for _, p := range ps {
		p.Env = append(p.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL())
	}
	es := testkit.StartEngines(t, ps)

	run := func(p *testkit.Project) string {
		id := runJob(t, p, "two_steps")
		spansOf(t, rcv, tracing.TraceID(id, "").String(), tracing.RunSpanID(id).String())
		return id
	}
	first := run(ps[0])
	holder := -1
	for i, e := range es {
		if strings.Contains(e.Stderr(), "this engine exports the traces") {
			require.Equal(t, -1, holder, "engines %d and %d both export", holder, i)
			holder = i
		}
	}
	require.NotEqual(t, -1, holder, "no engine exports")
	es[holder].Kill()
	second := run(ps[(holder+1)%3])

	// The collector goes away for longer than the claim lasts unrenewed:
	// its holder keeps it while its exporter retries, and no other engine
	// sends the same spans.
	rcv.SetDown(true)
	r := ps[(holder+2)%3].Orbit("job", "run", "two_steps")
	require.Equal(t, 0, r.Code, r.String())
	third := strings.TrimSpace(r.Stdout)
	waitFor(t, "an export to be refused", func() bool { return rcv.Refused() > 0 })
	time.Sleep(2 * tracing.ClaimTTL)
	rcv.SetDown(false)
	spansOf(t, rcv, tracing.TraceID(third, "").String(), tracing.RunSpanID(third).String())
	for i, e := range es {
		if i != holder {
			assert.NotContains(t, e.Stderr(), "took the export of the traces over", "engine %d", i)
		}
	}

	once := exportedOnce(t, rcv.Spans())
	engines := map[string]map[string]bool{first: {}, second: {}, third: {}}
	for _, s := range once {
		if e := engines[s.Attrs["orbit.run_id"]]; e != nil {
			e[s.Engine] = true
		}
	}
	for _, id := range []string{first, second, third} {
		for _, span := range []string{tracing.RunSpanID(id).String(), tracing.StepSpanID(id, "first", 1).String(), tracing.StepSpanID(id, "second", 1).String()} {
			assert.Contains(t, once, span, "span %s of run %s", span, id)
		}
		assert.Len(t, engines[id], 1, "one engine exported run %s", id)
	}
	assert.NotEqual(t, engines[first], engines[second], "the export was taken over")
	assert.Equal(t, engines[second], engines[third], "the export stayed with its holder while the collector was away")
}

// TestGroundhogAttemptsAreSpansUnderTheirStep: the demo plan (greet
// committed at its first attempt; test failing its verifier once, then
// committed) gives a span per attempt under the step that ran it, each
// with its verifier run (a span per criterion, a command's exit code), its
// commit and its agent turns.
func TestGroundhogAttemptsAreSpansUnderTheirStep(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p, repo, task := groundhogProject(t, readExample(t, "fixture.json"), readExample(t, "plan.yaml"))
	p.WriteFile(".orbit/config.yaml", "tracing:\n  endpoint: "+rcv.URL()+"\n")
	r := p.Orbit("engine", "restart") // the task's creation started it
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())

	var run testkit.Span
	defer func() {
		if run.SpanID == "" {
			t.Logf("spans: %v", names(rcv.Spans()))
		}
	}()
	waitFor(t, "the Groundhog run's span", func() bool {
		for _, s := range rcv.Spans() {
			if s.Name == "run groundhog-"+task {
				run = s
				return true
			}
		}
		return false
	})
	spans := spansOf(t, rcv, run.TraceID, run.SpanID)
	byID := map[string]testkit.Span{}
	under := map[string][]testkit.Span{}
	for _, s := range spans {
		_, twice := byID[s.SpanID]
		assert.False(t, twice, "span %s (%s) exported twice", s.SpanID, s.Name)
		byID[s.SpanID] = s
		under[s.ParentID] = append(under[s.ParentID], s)
	}
	named := func(parent, prefix string) []testkit.Span {
		var out []testkit.Span
		for _, s := range under[parent] {
			if strings.HasPrefix(s.Name, prefix) {
				out = append(out, s)
			}
		}
		return out
	}
	steps := named(run.SpanID, "")
	require.Len(t, steps, 1, "%v", names(spans))
	step := steps[0]
	attempts := named(step.SpanID, "groundhog attempt ")
	require.Len(t, attempts, 3, "%v", names(spans))

	shas := testkit.Git(t, repo, "log", "--format=%H", "main")
	outcomes := map[string]string{}
	for _, a := range attempts {
		key := a.Attrs["orbit.groundhog.checkpoint"] + "#" + a.Attrs["orbit.groundhog.attempt"]
		outcomes[key] = a.Attrs["orbit.groundhog.outcome"]
		assert.Equal(t, task, a.Attrs["orbit.task_id"])
		assert.Equal(t, step.Attrs["orbit.step"], a.Attrs["orbit.step"])
		assert.NotEmpty(t, a.Attrs["orbit.groundhog.snapshot_ref"], key)

		turns := named(a.SpanID, "agent turn ")
		assert.NotEmpty(t, turns, key)
		tokens := 0
		for _, turn := range turns {
			n, err := strconv.Atoi(turn.Attrs["gen_ai.usage.input_tokens"])
			require.NoError(t, err, key)
			tokens += n
		}
		assert.Equal(t, strconv.Itoa(tokens), a.Attrs["gen_ai.usage.input_tokens"], "%s: the attempt's tokens are its turns'", key)
		assert.Equal(t, strconv.Itoa(len(turns)), a.Attrs["orbit.agent.turns"], key)
		assert.NotEmpty(t, named(a.SpanID, "tool "), key)
		verify := named(a.SpanID, "groundhog verify")
		require.Len(t, verify, 1, key)
		criteria := named(verify[0].SpanID, "criterion ")
		assert.Equal(t, verify[0].Attrs["orbit.groundhog.criteria"], strconv.Itoa(len(criteria)), key)
		commits := named(a.SpanID, "groundhog commit")
		if a.Attrs["orbit.groundhog.outcome"] == "committed" {
			assert.Equal(t, "true", verify[0].Attrs["orbit.groundhog.passed"], key)
			require.Len(t, commits, 1, key)
			assert.Contains(t, shas, commits[0].Attrs["orbit.groundhog.commit_sha"], key)
			assert.Equal(t, commits[0].Attrs["orbit.groundhog.commit_sha"], a.Attrs["orbit.groundhog.commit_sha"], key)
			continue
		}
		assert.Equal(t, "false", verify[0].Attrs["orbit.groundhog.passed"], key)
		assert.Empty(t, commits, key)
		failedCommand := false
		for _, c := range criteria {
			if c.Attrs["orbit.groundhog.criterion.kind"] == "command" && c.Attrs["orbit.groundhog.criterion.outcome"] == "fail" {
				failedCommand = c.Attrs["process.exit.code"] != "" && c.Attrs["process.exit.code"] != "0"
			}
		}
		assert.True(t, failedCommand, "%s: a failed command criterion with its exit code", key)
	}
	assert.Equal(t, map[string]string{"greet#1": "committed", "test#1": "failed", "test#2": "committed"}, outcomes)
}

// TestAnAgentStepsTurnsToolCallsAndCostAreSpans: a step on the real Claude
// Code against a scripted model gives its turns (their tokens) under the
// step, its tool call under the turn that asked for it, and the CLI
// process with the cost it reported. Claude Code is started through a
// script that writes down the TRACEPARENT it was given: the step
// attempt's span, in the run's trace.
func TestAnAgentStepsTurnsToolCallsAndCostAreSpans(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := claudeWriteProject(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL())
	// The sandbox lets the agent write in its workspace alone.
	bin := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\nprintf '%s\\n' \"$TRACEPARENT\" > traceparent.cli\nexec "+testkit.ClaudeCLI(t)+" \"$@\"\n"), 0o755))
	p.WriteFile(".orbit/executors/claude_code.yaml", `schemaVersion: 2
kind: Executor
metadata: {name: claude_code}
spec: {command: `+bin+`, output: claude_code}
`)
	serve(t, p)
	runID := runJob(t, p, "write")
	spans := spansOf(t, rcv, tracing.TraceID(runID, "").String(), tracing.RunSpanID(runID).String())

	step := tracing.StepSpanID(runID, "agent", 1).String()
	turns := map[string]testkit.Span{}
	var tools, clis []testkit.Span
	for _, s := range spans {
		switch {
		case strings.HasPrefix(s.Name, "agent turn "):
			assert.Equal(t, step, s.ParentID, s.Name)
			turns[s.Attrs["orbit.agent.turn"]] = s
		case strings.HasPrefix(s.Name, "tool "):
			tools = append(tools, s)
		case strings.HasPrefix(s.Name, "cli "):
			clis = append(clis, s)
		}
	}
	require.Len(t, turns, 2, "%v", names(spans))
	assert.Equal(t, "700", turns["1"].Attrs["gen_ai.usage.input_tokens"])
	assert.Equal(t, "20", turns["2"].Attrs["gen_ai.usage.output_tokens"])
	assert.Equal(t, "claude-sonnet-4-5", turns["1"].Attrs["gen_ai.request.model"])
	require.Len(t, tools, 1, "%v", names(spans))
	assert.Equal(t, turns["1"].SpanID, tools[0].ParentID, "the tool call hangs under the turn that asked for it")
	assert.Equal(t, "fs.write", tools[0].Attrs["orbit.tool"])
	require.Len(t, clis, 1, "%v", names(spans))
	assert.Equal(t, step, clis[0].ParentID)
	assert.Equal(t, "0", clis[0].Attrs["process.exit.code"])
	cost, err := strconv.ParseFloat(clis[0].Attrs["orbit.agent.cost_usd"], 64)
	require.NoError(t, err)
	assert.Positive(t, cost, "the cost Claude Code reported")

	var given []byte
	require.NoError(t, filepath.WalkDir(p.Root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "traceparent.cli" {
			given, err = os.ReadFile(path)
		}
		return err
	}))
	require.NotEmpty(t, given, "the wrapper wrote no traceparent.cli under %s", p.Root)
	assert.Equal(t, tracing.Traceparent(tracing.TraceID(runID, ""), tracing.StepSpanID(runID, "agent", 1)), strings.TrimSpace(string(given)))
}

// TestTheOTELVariablesChooseTheEndpointHeadersAndSampler: the engine's
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (a whole URL) and
// OTEL_EXPORTER_OTLP_HEADERS reach every export, and OTEL_TRACES_SAMPLER
// keeps or drops a trace whole: under parentbased_always_off a run without
// a caller and a run whose caller did not sample it (flags 00) give no span
// at all, not even their steps', and a run under a sampled caller gives
// its run and both steps. The spans are exported in the log's order, so
// once the third run's span is in, the first two's would have been too.
func TestTheOTELVariablesChooseTheEndpointHeadersAndSampler(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/two_steps.yaml", twoSteps)
	p.Env = append(p.Env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+rcv.URL()+"/v1/traces",
		"OTEL_EXPORTER_OTLP_HEADERS=x-orbit-tenant=audit%20team", "OTEL_TRACES_SAMPLER=parentbased_always_off")
	serve(t, p)
	run := func(flags ...string) string {
		t.Helper()
		r := p.Orbit(append([]string{"job", "run", "two_steps"}, flags...)...)
		require.Equal(t, 0, r.Code, r.String())
		return strings.TrimSpace(r.Stdout)
	}
	run()
	run("--traceparent", "00-11111111111111111111111111111111-2222222222222222-00")
	sampled := run("--traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")

	const trace = "0af7651916cd43dd8448eb211c80319c"
	spans := spansOf(t, rcv, trace, tracing.RunSpanID(sampled).String())
	assert.ElementsMatch(t, []string{"run two_steps", "first", "second"}, names(spans))
	for _, s := range rcv.Spans() {
		assert.Equal(t, trace, s.TraceID, "span %s (run %s) of a trace the sampler dropped", s.Name, s.Attrs["orbit.run_id"])
	}
	headers := rcv.Headers()
	require.NotEmpty(t, headers)
	for _, h := range headers {
		assert.Equal(t, "audit team", h.Get("X-Orbit-Tenant"))
	}
}

// TestTracingIsOffWithoutAnEndpointAndRefusesGRPC: an engine with no OTLP
// endpoint in its environment or configuration does not export (it says
// so when it does, as the same root with OTEL_EXPORTER_OTLP_ENDPOINT
// shows), and OTEL_EXPORTER_OTLP_PROTOCOL=grpc stops the engine at its
// start with a message naming the variable and what to set instead.
func TestTracingIsOffWithoutAnEndpointAndRefusesGRPC(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := testkit.NewProject(t)
	base := p.Env
	// engineSays runs orbit serve with env until it is running, or until
	// it stops, then stops it and returns what it wrote and whether it ran.
	engineSays := func(env ...string) (string, bool) {
		t.Helper()
		p.Env = append(base, env...)
		cmd := p.Command("serve", "--listen", "127.0.0.1:0")
		out := &testkit.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		deadline := time.After(60 * time.Second)
		for !strings.Contains(out.String(), "engine running") {
			select {
			case <-done:
				return out.String(), false
			case <-deadline:
				_ = cmd.Process.Kill()
				t.Fatalf("orbit serve neither ran nor stopped:\n%s", out.String())
			case <-time.After(25 * time.Millisecond):
			}
		}
		r := p.Orbit("job", "run", "hello")
		require.Equal(t, 0, r.Code, r.String())
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		<-done
		return out.String(), true
	}
	said, ran := engineSays()
	require.True(t, ran, said)
	assert.NotContains(t, said, "exporting traces")
	said, ran = engineSays("OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL())
	require.True(t, ran, said)
	assert.Contains(t, said, "exporting traces")
	waitFor(t, "the traced run's spans", func() bool { return len(rcv.Spans()) > 0 })

	said, ran = engineSays("OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	assert.False(t, ran, "the engine stops: %s", said)
	assert.Contains(t, said, `OTEL_EXPORTER_OTLP_PROTOCOL="grpc"`)
	assert.Contains(t, said, "http/protobuf")
}

// TestEachAttemptOfARetriedStepIsASpan: example_retry's flaky step fails
// twice and succeeds at its third attempt; each attempt is a span named
// for the step, under the run, with its attempt number, whether it is a
// retry, its state, and the worker and engine that ran it.
func TestEachAttemptOfARetriedStepIsASpan(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL())
	serve(t, p)
	runID := runJob(t, p, "example_retry")
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	root := tracing.RunSpanID(runID).String()
	byID := exportedOnce(t, spansOf(t, rcv, tracing.TraceID(runID, "").String(), root))

	for attempt, state := range map[int]string{1: "failed", 2: "failed", 3: "success"} {
		s, ok := byID[tracing.StepSpanID(runID, "flaky", attempt).String()]
		require.True(t, ok, "attempt %d", attempt)
		assert.Equal(t, "flaky", s.Name)
		assert.Equal(t, root, s.ParentID)
		assert.Equal(t, strconv.Itoa(attempt), s.Attrs["orbit.attempt"])
		assert.Equal(t, strconv.FormatBool(attempt > 1), s.Attrs["orbit.retry"], "attempt %d", attempt)
		assert.Equal(t, state, s.Attrs["orbit.step.state"], "attempt %d", attempt)
		assert.Equal(t, "shell", s.Attrs["orbit.step.type"])
		assert.NotEmpty(t, s.Attrs["orbit.worker"])
		assert.Equal(t, info.Engine, s.Attrs["orbit.engine"], "attempt %d", attempt)
		assert.Equal(t, runID, s.Attrs["orbit.run_id"])
		assert.Equal(t, "example_retry", s.Attrs["orbit.job"])
		assert.Equal(t, "flaky", s.Attrs["orbit.step"])
	}
}
