package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

func TestOneTracePerRunWithItsSpanTreeAcrossAKill(t *testing.T) {
	t.Parallel()
	rcv := testkit.StartOTLPReceiver(t)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL(), "OTEL_BSP_SCHEDULE_DELAY=100")
	p.WriteFile(".orbit/jobs/traced.yaml", tracedJob)
	p.WriteFile(".orbit/jobs/traced_child.yaml", tracedChild)

	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	engine := serve(t, p)
	r := p.Orbit("job", "run", "traced", "--detach", "--traceparent", caller)
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	waitFor(t, "the shell step to start", func() bool {
		_, err := os.Stat(filepath.Join(p.Root, "traceparent.txt"))
		return err == nil
	})
	killEngine(t, engine)
	serve(t, p)
	p.WriteFile("go.txt", "")
	waitFor(t, "the run to finish", func() bool { return events.Terminal(runView(t, p, runID).State) })
	require.Equal(t, events.StateSuccess, runView(t, p, runID).State)

	trace := "0af7651916cd43dd8448eb211c80319c"
	root := tracing.RunSpanID(runID).String()
	spans := spansOf(t, rcv, trace, root)

	byID := map[string]testkit.Span{}
	count := map[string]int{}
	for _, s := range spans {
		byID[s.SpanID] = s
		count[s.SpanID]++
		assert.Equal(t, trace, s.TraceID)
		assert.NotEmpty(t, s.Attrs["orbit.run_id"], s.Name)
		assert.NotEmpty(t, s.Attrs["orbit.job"], s.Name)
	}
	for id, n := range count {
		assert.Equal(t, 1, n, "span %s (%s) exported %d times", id, byID[id].Name, n)
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
	r := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	runID := strings.TrimSpace(r.Stdout)
	spans := spansOf(t, rcv, tracing.TraceID(runID, "").String(), tracing.RunSpanID(runID).String())
	assert.GreaterOrEqual(t, len(spans), 2, "%v", names(spans))

	r = p.Orbit("job", "run", "hello", "--traceparent", "01-nonsense")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--traceparent")
}

func names(spans []testkit.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
