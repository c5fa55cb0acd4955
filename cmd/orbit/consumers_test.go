package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// childrenJob invokes hello once per item, a few at a time: every item is a
// child run, with its own feeds in the engine.
const childrenJob = `schemaVersion: 2
kind: Job
metadata:
  name: children
spec:
  default_input:
    n: [1]
  max_active_runs: 4
  steps:
    - id: kids
      fan_out:
        items: "{{ input.n }}"
        max_workers: 8
        worker:
          id: kid
          spec:
            type: deterministic
            action: job.invoke
            config:
              job: hello
              input:
                name: "{{ item }}"
      fan_in:
        join:
          mode: all
`

// engineInfo asks the root's engine for engine.info.
func engineInfo(t *testing.T, p *testkit.Project) engine.InfoReply {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
	require.NoError(t, err)
	var info engine.Info
	require.NoError(t, json.Unmarshal(data, &info))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := events.Dial(ctx, info.URL, events.Config{NKeySeedFile: credsFile(p, events.IdentityClient)})
	require.NoError(t, err)
	defer l.Close()
	var reply engine.InfoReply
	require.NoError(t, l.Request(ctx, engine.EndpointInfo, nil, &reply))
	return reply
}

// TestCommandsAndChildRunsLeaveNoConsumers: every command that reads or
// follows the log, and every child run, gives its consumers back, so the
// stream's count stays where an idle engine has it.
func TestCommandsAndChildRunsLeaveNoConsumers(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/children.yaml", childrenJob)
	serve(t, p)
	first := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, first.Code, first.String())
	idle := engineInfo(t, p).Consumers

	for range 20 {
		r := p.Orbit("run", "events")
		require.Equal(t, 0, r.Code, r.String())
	}
	for range 3 {
		r := p.Orbit("job", "run", "hello", "--detach")
		require.Equal(t, 0, r.Code, r.String())
		r = p.Orbit("run", "tail", r.Stdout[:len(r.Stdout)-1])
		require.Equal(t, 0, r.Code, r.String())
	}
	items := make([]int, 60)
	for i := range items {
		items[i] = i
	}
	input, err := json.Marshal(map[string]any{"n": items})
	require.NoError(t, err)
	r := p.Orbit("job", "run", "children", "--input", string(input))
	require.Equal(t, 0, r.Code, r.String())
	var runs []json.RawMessage
	h := p.Orbit("run", "history", "--json", "-n", "100", "--job", "hello")
	require.Equal(t, 0, h.Code, h.String())
	require.NoError(t, json.Unmarshal([]byte(h.Stdout), &runs))
	assert.Len(t, runs, 1+3+len(items), "every child ran")

	assert.Equal(t, idle, engineInfo(t, p).Consumers,
		fmt.Sprintf("consumers after %d commands and %d child runs", 24, len(items)))
	again := p.Orbit("job", "run", "hello")
	assert.Equal(t, 0, again.Code, again.String())
}
