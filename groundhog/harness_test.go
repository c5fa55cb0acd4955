package groundhog_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// harness is a task on a real git repository, a real log and a projector
// that serves GroundhogMemory, as an engine has them.
type harness struct {
	t    *testing.T
	ctx  context.Context
	log  *events.Log
	proj *projector.Projector
	repo string
	task string
	cli  *groundhog.CLIBackend // Config.CLI of its runs
}

func newHarness(t *testing.T, files map[string]string, plan string) *harness {
	t.Helper()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{})
	proj := runrig.Views(t, log, filepath.Join(t.TempDir(), "views.db"))
	h := &harness{t: t, ctx: ctx, log: log, proj: proj, repo: testkit.NewGitRepo(t, files), task: "T-1"}
	_, err := log.AppendFirst(ctx, events.Event{Type: events.TaskCreated, TaskID: h.task}, events.TaskCreatedData{
		Title: "test task", Workspace: h.repo, Branch: "main", Plan: plan, PlanVersion: 1, PlanDigest: assets.PlanDigest([]byte(plan)),
	})
	require.NoError(t, err)
	return h
}

// spec is a groundhog activity with the given tools.
func spec(tools ...string) assets.ActivitySpec {
	return assets.ActivitySpec{Type: assets.TypeGroundhog, Provider: "claude", Model: "m", Instruction: "You are a careful engineer.",
		Tools: tools, AttemptBudgetDefault: 2, MaxIterations: 10}
}

// oneAttemptSpec is the spec of an agent that may write files, with one
// attempt at each checkpoint.
func oneAttemptSpec() assets.ActivitySpec {
	s := spec("fs.write")
	s.AttemptBudgetDefault = 1
	return s
}

// run runs the task once with providers made by newProvider.
func (h *harness) run(runID string, s assets.ActivitySpec, newProvider func(start int, fixture func(string) int) (agent.Provider, error)) (*groundhog.Result, error) {
	return groundhog.Run(h.ctx, groundhog.Config{
		Log: h.log, TaskID: h.task, RunID: runID, StepKey: "groundhog", Job: "groundhog-" + h.task, Activity: "test", Spec: s,
		NewProvider: func(ctx context.Context, start func(fixture string) int) (agent.Provider, error) {
			return newProvider(start("f"), start)
		},
		Memory:  h.memory,
		Profile: agent.DefaultProfile,
		GitEnv:  testkit.GitEnv(),
		CLI:     h.cli,
	})
}

func (h *harness) memory(ctx context.Context, task string, minSeq uint64) (*groundhog.Memory, error) {
	if err := h.proj.WaitFor(ctx, minSeq); err != nil {
		return nil, err
	}
	m, err := h.proj.GroundhogMemory(ctx, task)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out groundhog.Memory
	return &out, json.Unmarshal(raw, &out)
}

// replay returns a provider factory for a replay fixture of turns.
func replay(t *testing.T, turns string) func(start int, _ func(string) int) (agent.Provider, error) {
	return func(_ int, start func(string) int) (agent.Provider, error) {
		return agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "f", FixtureData: []byte(turns), Start: start("f")})
	}
}

func (h *harness) events(typ string) []events.Event {
	h.t.Helper()
	evs, err := h.log.Read(h.ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateTask, h.task, typ)}})
	require.NoError(h.t, err)
	return evs
}

func (h *harness) git(args ...string) string { return testkit.Git(h.t, h.repo, args...) }

// verify runs groundhog.Verify on the task's events.
func (h *harness) verify() *groundhog.Report {
	h.t.Helper()
	evs, err := h.log.Read(h.ctx, events.FollowOptions{Filters: []string{events.TaskFilter(h.task)}})
	require.NoError(h.t, err)
	repo, err := gitops.Open(h.repo, gitops.WithEnv(testkit.GitEnv()...))
	require.NoError(h.t, err)
	rep, err := groundhog.Verify(h.ctx, evs, repo)
	require.NoError(h.t, err)
	return rep
}

// writeTurn is a fixture turn that writes a file and claims success.
func writeTurn(path, content, summary string) string {
	return `{"content": [
	  {"kind": "tool_use", "name": "fs.write", "input": {"path": ` + q(path) + `, "content": ` + q(content) + `}},
	  {"kind": "tool_use", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": ` + q(summary) + `, "side_effects": [{"kind": "file_write", "target": ` + q(path) + `, "reversible": true}]}}
	], "stop_reason": "tool_use"}`
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func fixture(turns ...string) string { return "[" + strings.Join(turns, ",") + "]" }

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// onlyEvent is the task's one event of type typ, decoded into a T; the
// test fails unless there is exactly one.
func onlyEvent[T any](t *testing.T, h *harness, typ string, msgAndArgs ...any) T {
	t.Helper()
	evs := h.events(typ)
	require.Len(t, evs, 1, msgAndArgs...)
	var d T
	require.NoError(t, evs[0].Decode(&d))
	return d
}
