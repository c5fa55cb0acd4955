package soak_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// Careless use, at scale: more reads and child runs than the stream has
// room for consumers, and a job that invokes itself without end, after
// which the engine must still run a job at once.
const (
	carelessReads    = 1200
	carelessChildren = 2500
	childrenPerRun   = 500
)

var childrenJob = `
schemaVersion: 2
kind: Job
metadata: {name: children}
spec:
  max_active_runs: 1
  default_input: {n: [1]}
  steps:
    - id: kids
      fan_out:
        items: "{{ input.n }}"
        max_workers: 16
        worker:
          id: kid
          spec: {type: deterministic, action: job.invoke, config: {job: leaf, input: {n: "{{ item }}"}}}
      fan_in: {join: {mode: all}}
`

var leafJob = `
schemaVersion: 2
kind: Job
metadata: {name: leaf}
spec:
  max_active_runs: 64
  steps:
    - id: echo
      spec: {type: deterministic, action: echo, config: {n: "{{ input.n }}"}}
`

func TestSoakCarelessUse(t *testing.T) {
	if os.Getenv("ORBIT_SOAK") != "1" {
		t.Skip("the soak test runs with ORBIT_SOAK=1 (make soak)")
	}
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/children.yaml", childrenJob)
	p.WriteFile(".orbit/jobs/leaf.yaml", leafJob)
	p.WriteFile(".orbit/jobs/endless.yaml", testkit.EndlessJob)
	eng := startEngine(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	l, err := events.Dial(ctx, eng.url, events.Config{Name: "orbit-soak", NKeySeedFile: eng.seed(events.IdentityClient), LogKeyFile: engine.LogKeyPath(p.Root)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	consumers := func() int {
		var info engine.InfoReply
		if err := l.Request(ctx, engine.EndpointInfo, nil, &info); err != nil {
			t.Fatal(err)
		}
		return info.Consumers
	}
	mustRun := func(args ...string) testkit.Result {
		r := p.Orbit(args...)
		if r.Code != 0 {
			t.Fatalf("orbit %s: %s", strings.Join(args, " "), r)
		}
		return r
	}
	mustRun("job", "run", "hello")
	idle := consumers()

	start := time.Now()
	for range carelessReads {
		mustRun("run", "events")
	}
	reads := time.Since(start)

	start = time.Now()
	for base := 0; base < carelessChildren; base += childrenPerRun {
		items := make([]int, childrenPerRun)
		for i := range items {
			items[i] = base + i
		}
		input, err := json.Marshal(map[string]any{"n": items})
		if err != nil {
			t.Fatal(err)
		}
		mustRun("job", "run", "children", "--input", string(input))
	}
	children := time.Since(start)

	start = time.Now()
	r := p.Orbit("job", "run", "endless")
	recursion := time.Since(start)
	if r.Code != 1 || !strings.Contains(r.Stderr, "past engine.max_child_depth (16)") {
		t.Errorf("orbit job run endless: want exit 1 at the depth limit, got %s", r)
	}

	start = time.Now()
	mustRun("job", "run", "hello")
	hello := time.Since(start)
	after := consumers()
	if after != idle {
		t.Errorf("the stream has %d consumers after the load, %d before it", after, idle)
	}
	var runs []struct {
		State string `json:"state"`
	}
	h := mustRun("run", "history", "--json", "-n", "5000", "--job", "leaf")
	if err := json.Unmarshal([]byte(h.Stdout), &runs); err != nil {
		t.Fatal(err)
	}
	leaves := 0
	for _, r := range runs {
		if r.State == events.StateSuccess {
			leaves++
		}
	}
	if leaves != carelessChildren {
		t.Errorf("run history shows %d successful child runs, want %d", leaves, carelessChildren)
	}
	printSummary(t, [][2]string{
		{"reads", fmt.Sprintf("%d `orbit run events` in %s", carelessReads, reads.Round(time.Millisecond))},
		{"child runs", fmt.Sprintf("%d in %d runs in %s", carelessChildren, carelessChildren/childrenPerRun, children.Round(time.Millisecond))},
		{"endless recursion", fmt.Sprintf("failed at depth 17 after %s", recursion.Round(time.Millisecond))},
		{"job run hello after", hello.Round(time.Millisecond).String()},
		{"consumers", fmt.Sprintf("%d idle, %d after", idle, after)},
	})
}
