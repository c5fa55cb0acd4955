package console_test

import (
	"bufio"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// TestRunPagesShowRunsStepsAndEvents: the runs list has a finished run, its
// page every step of example_parallel and example_fan_out with the state
// orbit run show gives, its events page its events and trace.
func TestRunPagesShowRunsStepsAndEvents(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	for _, job := range []string{"example_parallel", "example_fan_out"} {
		id := runJob(t, p, job)
		view := showRun(t, p, id)
		require.True(t, events.Terminal(view.State), view.State)

		code, body := c.get(t, "/")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `href="/runs/`+id+`"`)

		code, body = c.get(t, "/?job="+job+"&state="+view.State)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, id, "filtered by job and state")
		code, body = c.get(t, "/?state="+events.StateCancelled)
		require.Equal(t, http.StatusOK, code)
		assert.NotContains(t, body, id, "filtered out by state")

		code, body = c.get(t, "/runs/"+id)
		require.Equal(t, http.StatusOK, code)
		require.NotEmpty(t, view.Steps)
		for _, s := range view.Steps {
			row := `<tr class="step" data-key="` + s.Key + `">`
			require.Contains(t, body, row)
			after := body[strings.Index(body, row):]
			assert.Contains(t, after[:strings.Index(after, "</tr>")], `<span class="state `+s.State+`">`+s.State+`</span>`, s.Key)
		}
		assert.NotContains(t, body, `id="cancel"`, "a finished run has no cancel button")
		assert.Contains(t, body, `<a href="/jobs/`+job+`" id="run-job">`+job+`</a>`, "the run's job, linked to its page")
		code, _ = c.get(t, "/jobs/"+job)
		assert.Equal(t, http.StatusOK, code)

		code, body = c.get(t, "/runs/"+id+"/events?type="+events.RunFinished)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "<td>"+events.RunFinished+"</td>")
		assert.NotContains(t, body, "<td>"+events.StepStarted+"</td>", "filtered by type")
		assert.Contains(t, body, `<ul class="trace"><li><span class="seq">`, "the trace tree")
	}
}

// TestRunsPagePages: past pageSize runs, the list pages.
func TestRunsPagePages(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	writeJob(t, p, "quick", `schemaVersion: 2
kind: Job
metadata:
  name: quick
spec:
  max_active_runs: 60
  steps:
    - id: ok
      spec: {type: shell, program: "true", allowed_programs: ["true"]}
`)
	var ids []string
	for range 51 {
		ids = append(ids, startJob(t, p, "quick"))
	}
	_, first := c.get(t, "/?job=quick")
	assert.Contains(t, first, ids[50], "newest first")
	assert.NotContains(t, first, ids[0])
	assert.Contains(t, first, `href="/?job=quick&amp;page=1"`)
	_, second := c.get(t, "/?job=quick&page=1")
	assert.Contains(t, second, ids[0])
	assert.NotContains(t, second, ids[50])

	code, body := c.get(t, "/?page=-1")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "page &#34;-1&#34; is not a number")
	code, _ = c.get(t, "/?state=bogus")
	assert.Equal(t, http.StatusBadRequest, code)
	code, body = c.get(t, "/?job=a%00b")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `job &#34;a\x00b&#34; is not a job name`)
}

// TestUnknownAndOddIDsAre404: what is not there says what was looked for;
// ids that are not ids are never looked up.
func TestUnknownAndOddIDsAre404(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	for path, says := range map[string]string{
		"/runs/01NOSUCHRUN":            "There is no run 01NOSUCHRUN.",
		"/runs/01NOSUCHRUN/events":     "There is no run 01NOSUCHRUN.",
		"/tasks/T-404":                 "There is no task T-404.",
		"/runs/..%2f..%2fetc%2fpasswd": "There is no run &#34;../../etc/passwd&#34;.",
		"/tasks/.orbit":                "There is no task &#34;.orbit&#34;.",
		"/runs/a%00b":                  "There is no run &#34;a\\x00b&#34;.",
		"/nowhere":                     "There is no page &#34;/nowhere&#34;.",
		"/static/../../go.mod":         "",
	} {
		code, body := c.get(t, path)
		assert.Equal(t, http.StatusNotFound, code, path)
		assert.Contains(t, body, says, path)
		assert.NotContains(t, body, "module github.com", path)
	}
}

// TestOutputIsEscaped: a step that prints a script tag shows it as text.
func TestOutputIsEscaped(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	writeJob(t, p, "shouty", escapeJob)
	id := runJob(t, p, "shouty")
	_, body := c.get(t, "/runs/"+id)
	assert.NotContains(t, body, "<script>alert")
	assert.Contains(t, body, `<pre>&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;
</pre>`, "the output tail, as text")
}

const escapeJob = `schemaVersion: 2
kind: Job
metadata:
  name: shouty
spec:
  steps:
    - id: shout
      spec:
        type: shell
        program: echo
        args: ["<script>alert('owned')</script>"]
        allowed_programs: [echo]
`

// TestCancelRefusesCrossSiteAndCancelsLive: a cross-site POST is refused and
// changes nothing; a same-origin one cancels the run, which the live stream
// shows, as orbit run cancel would. A finished run cannot be cancelled.
func TestCancelRefusesCrossSiteAndCancelsLive(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	id := runningJob(t, p, "example_slow")

	cancel := "/runs/" + id + "/cancel"
	assert.Equal(t, http.StatusForbidden, c.post(t, cancel, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}))
	assert.Equal(t, http.StatusForbidden, c.post(t, cancel, map[string]string{"Origin": "https://evil.example"}))
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, events.StateRunning, showRun(t, p, id).State, "a refused cancel changes nothing")

	// The page the browser got, and its live stream from there.
	code, body := c.get(t, "/runs/"+id)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `id="cancel"`)
	seq := between(body, `data-seq="`, `"`)
	resp, err := http.DefaultClient.Do(c.request(t, http.MethodGet, "/runs/"+id+"/live?after="+seq))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	assert.Equal(t, http.StatusSeeOther, c.post(t, cancel, c.fromPage()))
	ended := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				event = e
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && event == "end" {
				ended <- d
				return
			}
		}
		close(ended)
	}()
	select {
	case state := <-ended:
		assert.Equal(t, events.StateCancelled, state)
	case <-time.After(30 * time.Second):
		t.Fatal("the live stream did not say the run ended")
	}
	assert.Equal(t, events.StateCancelled, showRun(t, p, id).State)
	assert.Equal(t, http.StatusConflict, c.post(t, cancel, nil), "a finished run never changes")
}

// TestMetricsMatchOrbitMetrics parses /metrics with the Prometheus text
// parser and compares it with what orbit metrics --json prints, the step
// duration histograms by activity type bucket by bucket and the cost of a
// CLI agent (a stand-in for Claude Code printing its stream-json records)
// per model.
func TestMetricsMatchOrbitMetrics(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	costlyAgent(t, p)
	c := serveConsole(t, p)
	runJob(t, p, "example_parallel")
	runJob(t, p, "example_fan_out")
	runJob(t, p, "example_retry")
	for range 2 {
		runJob(t, p, "costly")
	}

	r := p.Orbit("metrics", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var m projector.Metrics
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &m))

	resp, err := http.DefaultClient.Do(c.request(t, http.MethodGet, "/metrics"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)

	value := func(name string, labels map[string]string) (float64, bool) {
		f := families[name]
		if f == nil {
			return 0, false
		}
	next:
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return metric.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return metric.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(metric.GetHistogram().GetSampleCount()), true
			}
		}
		return 0, false
	}
	require.NotEmpty(t, m.Jobs)
	for job, x := range m.Jobs {
		for state, n := range x.States {
			got, ok := value("orbit_runs", map[string]string{"job": job, "state": state})
			assert.True(t, ok, job)
			assert.Equal(t, float64(n), got, job+" "+state)
		}
		got, _ := value("orbit_run_duration_seconds_total", map[string]string{"job": job})
		assert.InDelta(t, float64(x.TotalDurationMS)/1000, got, 1e-9, job)
	}
	require.NotEmpty(t, m.Steps)
	for job, steps := range m.Steps {
		for step, x := range steps {
			got, ok := value("orbit_step_duration_seconds", map[string]string{"job": job, "step": step})
			assert.True(t, ok, job+" "+step)
			assert.Equal(t, float64(x.Count), got, job+" "+step)
			for state, n := range x.States {
				got, _ := value("orbit_steps_total", map[string]string{"job": job, "step": step, "state": state})
				assert.Equal(t, float64(n), got, job+" "+step+" "+state)
			}
		}
	}
	types := families["orbit_step_duration_seconds_by_type"]
	require.NotNil(t, types, "step durations by activity type")
	assert.Len(t, types.GetMetric(), len(m.ActivityTypes))
	for _, typ := range []string{"shell", "parallel", "fan_out", "agent_loop"} {
		assert.Contains(t, m.ActivityTypes, typ)
	}
	for _, metric := range types.GetMetric() {
		require.Len(t, metric.GetLabel(), 1)
		typ := metric.GetLabel()[0].GetValue()
		x, ok := m.ActivityTypes[typ]
		require.True(t, ok, typ)
		h := metric.GetHistogram()
		assert.Equal(t, uint64(x.Count), h.GetSampleCount(), typ)
		assert.InDelta(t, float64(x.TotalDurationMS)/1000, h.GetSampleSum(), 1e-9, typ)
		// The text format writes the +Inf bucket out: the count.
		require.Len(t, h.GetBucket(), len(projector.StepDurationBucketsMS)+1, typ)
		inf := h.GetBucket()[len(projector.StepDurationBucketsMS)]
		assert.True(t, math.IsInf(inf.GetUpperBound(), 1), typ)
		assert.Equal(t, uint64(x.Count), inf.GetCumulativeCount(), typ)
		for i, b := range h.GetBucket()[:len(projector.StepDurationBucketsMS)] {
			assert.InDelta(t, float64(x.Buckets[i].LeMS)/1000, b.GetUpperBound(), 1e-12, typ)
			assert.Equal(t, uint64(x.Buckets[i].Count), b.GetCumulativeCount(), "%s le %v", typ, b.GetUpperBound())
		}
	}
	assert.Equal(t, int64(2_469_000), m.Models["claude-costly-1"].CostNanoUSD, "two invocations of $0.0012345")
	for model, x := range m.Models {
		got, ok := value("orbit_cost_usd_total", map[string]string{"model": model})
		assert.True(t, ok, model)
		assert.Equal(t, x.CostUSD(), got, model)
	}

	text := p.Orbit("metrics")
	require.Equal(t, 0, text.Code, text.String())
	assert.Regexp(t, `(?m)^claude-costly-1 .* 0\.0025$`, text.Stdout, "the cost per model")
	assert.Regexp(t, `(?m)^ACTIVITY TYPE +COUNT +MEAN +P50 +P90 +P99 +STATES$`, text.Stdout)
	assert.Regexp(t, `(?m)^agent_loop +2 .* success=2$`, text.Stdout)

	require.NotNil(t, families["orbit_queue_pending"], "queue depths")
	for _, metric := range families["orbit_queue_pending"].GetMetric() {
		assert.Zero(t, metric.GetGauge().GetValue(), "nothing waits once the runs have ended")
	}
	batches, ok := value("orbit_append_batches_total", nil)
	require.True(t, ok, "group commits")
	batched, _ := value("orbit_append_batched_events_total", nil)
	assert.GreaterOrEqual(t, batched, batches*10, "a batch holds ten events or more")
	last, ok := value("orbit_events_appended", nil)
	require.True(t, ok)
	applied, _ := value("orbit_events_applied", nil)
	assert.Positive(t, last)
	assert.LessOrEqual(t, last, applied, "the views had caught up with the scrape's start")
}

// TestTaskPageShowsTheChronicle: the demo plan's task page has both
// checkpoints, the rewound attempt with its failing criterion and its
// diff, the grounding chain and the memory beside the audit.
func TestTaskPageShowsTheChronicle(t *testing.T) {
	t.Parallel()
	c, task := groundhogProject(t)
	code, body := c.get(t, "/tasks/"+task)
	require.Equal(t, http.StatusOK, code, body)
	for _, want := range []string{
		`id="checkpoint-greet"`, `id="checkpoint-test"`,
		`data-checkpoint="test" data-attempt="1"`, `<span class="state rewound">rewound</span>`,
		`<span class="state fail">fail</span>`, "groundhog/" + task + "/day-2",
		"Grounding chain", "Memory (what prompts see)", "Verifier run 1: failed",
	} {
		assert.Contains(t, body, want)
	}
	rewound := body[strings.Index(body, `data-checkpoint="test" data-attempt="1"`):]
	rewound = rewound[:strings.Index(rewound, `data-attempt="2"`)]
	assert.Contains(t, rewound, "<summary>Diff</summary>")
	assert.Contains(t, rewound, "new file mode 100644", "the diff the rewound attempt made")
	assert.Contains(t, rewound, "greet.sh world", "the diff the rewound attempt made")
}

func between(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(after, to)
	if _, err := strconv.ParseUint(v, 10, 64); err != nil {
		return ""
	}
	return v
}

// TestBeyondLoopbackNeedsTheToken: without a token the console does not
// listen beyond loopback (exit 2); with one it asks every request for it.
func TestBeyondLoopbackNeedsTheToken(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("serve", "--listen", "127.0.0.1:0", "--http", "0.0.0.0:0")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--http 0.0.0.0:0 is beyond loopback")

	p.Env = append(p.Env, "ORBIT_HTTP_TOKEN=s3cret")
	c := serveConsoleOn(t, p, "0.0.0.0:0", "s3cret")
	for auth, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusUnauthorized, "s3cret": http.StatusOK} {
		req, err := http.NewRequest(http.MethodGet, c.URL+"/metrics", nil)
		require.NoError(t, err)
		if auth != "" {
			req.SetBasicAuth("anyone", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, auth)
	}
}

// TestLineageAndChildTrace: a parent's page links its child runs, a
// child's its parent, and the parent's trace holds the children's events
// under the steps that started them.
func TestLineageAndChildTrace(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	id := runJob(t, p, "example_child_job")
	view := showRun(t, p, id)
	require.Len(t, view.Children, 2)

	_, body := c.get(t, "/runs/"+id)
	for _, kid := range view.Children {
		assert.Contains(t, body, `<a href="/runs/`+kid+`">`+kid+`</a>`)
		_, child := c.get(t, "/runs/"+kid)
		assert.Contains(t, child, `<dt>Parent</dt><dd><a href="/runs/`+id+`">`+id+`</a>`)
	}
	_, events := c.get(t, "/runs/"+id+"/events")
	trace := events[strings.Index(events, "<h2>Trace</h2>"):]
	assert.Equal(t, 3, strings.Count(trace, "> run.requested"), "the run's and its two children's")
	assert.Regexp(t, `step.started <span class="target">[^<]+</span>\s*<ul><li><span class="seq">\d+</span> run.requested`, trace,
		"a child run hangs under the step that started it")
}

// costlyAgent adds to the project a job "costly" whose agent_loop runs on
// the cli backend through an executor whose program prints what Claude
// Code prints: one assistant message of model claude-costly-1, then the
// result with its total_cost_usd.
func costlyAgent(t *testing.T, p *testkit.Project) {
	t.Helper()
	script := p.WriteFile("fake-claude", `#!/bin/sh
echo '{"type":"assistant","message":{"id":"msg_1","model":"claude-costly-1","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":10,"output_tokens":3}}}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.0012345,"usage":{"input_tokens":10,"output_tokens":3}}'
`)
	require.NoError(t, os.Chmod(script, 0o755))
	p.WriteFile(".orbit/executors/fake_claude.yaml", `schemaVersion: 2
kind: Executor
metadata: {name: fake_claude}
spec:
  command: `+script+`
  output: claude_code
`)
	p.WriteFile(".orbit/jobs/costly.yaml", `schemaVersion: 2
kind: Job
metadata: {name: costly}
spec:
  steps:
    - id: ask
      spec:
        type: agent_loop
        provider: claude
        model: claude-costly-1
        backend: cli
        executor: fake_claude
        instruction: Say done.
        wall_clock_timeout_seconds: 60
`)
}
