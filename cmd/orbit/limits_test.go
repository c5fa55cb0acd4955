package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// bigFanOut has twenty workers that each print 130 KB: the fan-out's
// collected output is past what one message may hold, and so is the run's
// view with every worker's output in it.
const bigFanOut = `schemaVersion: 2
kind: Job
metadata: {name: big}
spec:
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: 4
        worker:
          id: print
          spec:
            type: shell
            program: sh
            args: ["-c", "head -c 130000 /dev/zero | tr '\\0' \"$1\"", "sh", "{{ item }}"]
            allowed_programs: [sh]
      fan_in: {join: {mode: all}}
    - id: after
      spec:
        type: shell
        program: sh
        args: ["-c", "printf %s \"$1\" | wc -c", "sh", "{{ steps.fan.output.19.stdout }}"]
        allowed_programs: [sh]
`

// TestValuesPastTheMessageLimitAreStoredAsBlobs: outputs and inputs larger
// than a message go to blobs and come back whole where they are used; the
// run, its view and its history can be shown; a replay agrees.
func TestValuesPastTheMessageLimitAreStoredAsBlobs(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/big.yaml", bigFanOut)
	items := make([]string, 20)
	for i := range items {
		items[i] = string(rune('a' + i))
	}
	input, err := json.Marshal(map[string]any{"items": items})
	require.NoError(t, err)

	r := p.Orbit("job", "run", "big", "--input", string(input))
	require.Equal(t, 0, r.Code, r.String())
	v := runView(t, p, strings.TrimSpace(r.Stdout))
	require.Equal(t, events.StateSuccess, v.State)
	var after map[string]any
	for _, s := range v.Steps {
		if s.Key == "after" {
			after, _ = s.Output.(map[string]any)
		}
	}
	require.NotNil(t, after, "the step after the fan-out ran")
	assert.Equal(t, "65536", strings.TrimSpace(fmt.Sprint(after["stdout"])), "it saw the last worker's output whole (64 KiB inline)")

	var fin struct {
		Output []map[string]any `json:"output"`
	}
	for _, ev := range runEvents(t, p, v.ID, "--type", "step.finished") {
		if ev.StepKey == "fan" {
			require.NoError(t, ev.Decode(&fin))
		}
	}
	require.Len(t, fin.Output, 20, "the list of outputs stays in the event")
	moved := 0
	for i, out := range fin.Output {
		assert.EqualValues(t, 0, out["exit_code"], "item %d keeps its exit code in the event", i)
		ref, ok := out["stdout"].(map[string]any)
		if !ok {
			continue
		}
		moved++
		blob := p.Orbit("blob", "get", ref["$blob"].(string))
		require.Equal(t, 0, blob.Code, blob.Stderr)
		var stdout string
		require.NoError(t, json.Unmarshal([]byte(blob.Stdout), &stdout))
		assert.Equal(t, strings.Repeat(items[i], 65536), stdout, "item %d", i)
	}
	assert.NotZero(t, moved, "some workers' stdout are blob references in the log")

	verify := p.Orbit("replay", "--verify")
	assert.Equal(t, 0, verify.Code, verify.String())
}

func TestLargeInputs(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/size.yaml", `schemaVersion: 2
kind: Job
metadata: {name: size}
spec:
  steps:
    - id: keep
      spec: {type: deterministic, action: echo, config: {text: "{{ input.text }}"}}
`)
	// The largest input allowed travels in one runs.submit request.
	for _, size := range []int{300 << 10, 5 << 20, 16<<20 - 64} {
		file := filepath.Join(t.TempDir(), "input.json")
		data, err := json.Marshal(map[string]string{"text": strings.Repeat("x", size)})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, data, 0o644))
		r := p.Orbit("job", "run", "size", "--input", "@"+file)
		require.Equal(t, 0, r.Code, "input of %d bytes: %s", size, r.Stderr)
		v := runView(t, p, strings.TrimSpace(r.Stdout))
		require.Len(t, v.Steps, 1)
		out, ok := v.Steps[0].Output.(map[string]any)
		require.True(t, ok, "%T", v.Steps[0].Output)
		ref, _ := out["text"].(map[string]any)
		digest, _ := ref["$blob"].(string)
		require.NotEmpty(t, digest, "the view keeps a reference in place of the text: %v", out)
		blob := p.Orbit("blob", "get", digest)
		require.Equal(t, 0, blob.Code, blob.Stderr)
		var text string
		require.NoError(t, json.Unmarshal([]byte(blob.Stdout), &text))
		assert.Len(t, text, size)
	}

	file := filepath.Join(t.TempDir(), "huge.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"text": "`+strings.Repeat("x", 17<<20)+`"}`), 0o644))
	r := p.Orbit("job", "run", "size", "--input", "@"+file)
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, ": a run's input is 17.0 MiB, over the limit of 16 MiB")
	r = p.Orbit("run", "signal", "01NOSUCHRUN0000000000000000", "approved", "--data", "@"+file)
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, ": a signal's data is 17.0 MiB, over the limit of 16 MiB")
	r = p.Orbit("blob", "get", "sha256-0000")
	assert.Equal(t, 2, r.Code, r.String())
}
