package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/tracing"
)

// jaegerBinary is the Jaeger that ORBIT_JAEGER names, or the one `make
// jaeger` builds (bin/jaeger); the test is skipped without one.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("ORBIT_JAEGER")
	if path == "" {
		path = filepath.Join(testkit.ModuleRoot(t), "bin", "jaeger")
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no Jaeger at %s: build it with make jaeger (Jaeger v1.76.0 from the Go module proxy), or name one with ORBIT_JAEGER=/path/to/jaeger", path)
	}
	return path
}

// jaegerConfig runs Jaeger v2 with memory storage, OTLP/HTTP in at otlp and
// the query API at query (its gRPC API at queryGRPC), and nothing else
// listening: the all-in-one default listens on a dozen fixed ports.
const jaegerConfig = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics: {level: none}
    traces: {level: none}
    logs: {level: warn}
extensions:
  jaeger_storage:
    backends:
      memory: {memory: {max_traces: 1000}}
  jaeger_query:
    storage: {traces: memory}
    http: {endpoint: "%s"}
    grpc: {endpoint: "%s"}
receivers:
  otlp:
    protocols:
      http: {endpoint: "%s"}
exporters:
  jaeger_storage_exporter: {trace_storage: memory}
`

// jaegerTrace is what Jaeger's query API (/api/traces/<id>) gives of a
// trace.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"spans"`
}

// startJaeger starts Jaeger for the test and returns the URLs of its OTLP
// receiver and of its query API.
func startJaeger(t *testing.T) (otlp, query string) {
	t.Helper()
	bin := jaegerBinary(t)
	otlpAddr, queryAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(jaegerConfig, queryAddr, testkit.FreeAddr(t), otlpAddr)), 0o600))
	cmd := exec.Command(bin, "--config=file:"+cfg)
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("jaeger:\n%s", out.String())
		}
	})
	query = "http://" + queryAddr
	waitFor(t, "Jaeger's query API", func() bool {
		resp, err := http.Get(query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return "http://" + otlpAddr, query
}

// jaegerGet reads the trace id from Jaeger's query API.
func jaegerGet(query, id string) (*jaegerTrace, error) {
	resp, err := http.Get(query + "/api/traces/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if len(body.Data) != 1 {
		return nil, fmt.Errorf("%d traces", len(body.Data))
	}
	return &body.Data[0], nil
}

// TestATraceInJaegerAcrossAKill: tracedJob (a parallel, a fan-out, a child
// run) with a caller's traceparent, the engine killed with -9 while a step
// runs and started again, gives one trace in Jaeger v1.76.0 (its OTLP
// receiver, its query API) with the expected span tree and each step once.
func TestATraceInJaegerAcrossAKill(t *testing.T) {
	t.Parallel()
	otlp, query := startJaeger(t)
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlp)
	runID := runTracedAcrossAKill(t, p, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")

	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	root := tracing.RunSpanID(runID).String()
	var tr *jaegerTrace
	waitFor(t, "the run's span in Jaeger", func() bool {
		var err error
		tr, err = jaegerGet(query, traceID)
		if err != nil {
			return false
		}
		for _, s := range tr.Spans {
			if s.SpanID == root {
				return true
			}
		}
		return false
	})
	assert.Equal(t, traceID, tr.TraceID)

	parent := map[string]string{}
	byName := map[string][]string{}
	tags := map[string]map[string]string{}
	// A kill between an export and its record has the next engine send
	// its spans once more, marked: a second copy of a span is allowed
	// when one of the two is marked.
	copies := map[string]int{}
	marked := map[string]int{}
	for _, s := range tr.Spans {
		copies[s.SpanID]++
		if copies[s.SpanID] > 1 {
			continue
		}
		tags[s.SpanID] = map[string]string{}
		for _, tag := range s.Tags {
			tags[s.SpanID][tag.Key] = fmt.Sprint(tag.Value)
		}
		for _, ref := range s.References {
			if ref.RefType == "CHILD_OF" {
				parent[s.SpanID] = ref.SpanID
			}
		}
		byName[s.OperationName] = append(byName[s.OperationName], s.SpanID)
	}
	for _, s := range tr.Spans {
		for _, tag := range s.Tags {
			if tag.Key == "orbit.reexported" && fmt.Sprint(tag.Value) == "true" {
				marked[s.SpanID]++
			}
		}
	}
	twice := 0
	for id, n := range copies {
		if n > 1 {
			twice++
			assert.True(t, n == 2 && marked[id] == 1, "span %s (%v) sent %d times, %d marked", id, tags[id], n, marked[id])
		}
	}
	assert.Equal(t, "00f067aa0ba902b7", parent[root], "the caller's traceparent is the root's parent")
	once := func(name string) string {
		t.Helper()
		ids := byName[name]
		require.Len(t, ids, 1, "span %q in %v", name, byName)
		return ids[0]
	}
	for _, key := range []string{"both", "both/left", "both/right", "per_item", "per_item/1", "per_item/2", "call", "hold"} {
		id := once(key)
		assert.Equal(t, root, parent[id], key)
		assert.Equal(t, runID, tags[id]["orbit.run_id"], key)
	}
	assert.Equal(t, "true", tags[once("hold")]["orbit.resumed"], "the step the restarted engine resumed is marked")
	child := once("run traced_child")
	assert.Equal(t, once("call"), parent[child], "the child run hangs under the step that invoked it")
	assert.Equal(t, child, parent[once("inner")])
	assert.Len(t, tr.Spans, 11+twice, "%v", byName)
}
