package groundhog_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
)

const onePlan = `
checkpoints:
  - id: greeting
    spec: Create greet.txt saying hello.
    success_criteria:
      - {kind: file_contains, path: greet.txt, pattern: hello}
  - id: farewell
    spec: Create bye.txt saying goodbye.
    success_criteria:
      - {kind: file_contains, path: bye.txt, pattern: goodbye}
`

// crashedAttempt leaves the repository and the log as a runner killed in
// the middle of day 1 leaves them: the snapshot taken and recorded, the
// agent's edit in the work tree, and (stage by stage) the verb, a passing
// verification and the commit itself.
func crashedAttempt(t *testing.T, h *harness, stage string) *gitops.Snapshot {
	t.Helper()
	repo, err := gitops.Open(h.repo, gitops.WithEnv(testkit.GitEnv()...))
	require.NoError(t, err)
	record := func(typ string, payload any) {
		_, err := h.log.Append(h.ctx, events.Event{Type: typ, TaskID: h.task, RunID: "R1", StepKey: "groundhog"}, payload)
		require.NoError(t, err)
	}
	record(events.GroundhogRunStarted, events.GroundhogRunStartedData{RunID: "R1", StepKey: "groundhog", PlanVersion: 1, Checkpoints: []string{"greeting", "farewell"}, Budgets: []int{2, 2}})
	snap, err := repo.CreateSnapshot(h.ctx, h.task, 1, "main")
	require.NoError(t, err)
	id := events.Attempt{Checkpoint: "greeting", Attempt: 1, Day: 1}
	record(events.GroundhogAttempt, events.GroundhogAttemptData{Attempt: id, RunID: "R1", TaskBranch: "main",
		ScratchBranch: snap.ScratchBranch, SnapshotRef: snap.SnapshotRef, PlanVersion: 1, Untracked: snap.Untracked})
	require.NoError(t, os.WriteFile(filepath.Join(h.repo, "greet.txt"), []byte("hello\n"), 0o644))
	if stage == "editing" {
		return snap
	}
	record(events.GroundhogVerb, events.GroundhogVerbData{Attempt: id, Verb: groundhog.VerbSuccess, Summary: "Add greet.txt"})
	record(events.GroundhogVerification, events.GroundhogVerificationData{Attempt: id, Passed: true,
		Results: []events.CriterionResult{{Kind: "file_contains", Outcome: "pass"}}})
	if stage == "verified" {
		return snap
	}
	_, _, err = repo.CommitSuccess(h.ctx, snap, "Add greet.txt", []gitops.Trailer{
		{Key: "Groundhog-Task", Value: h.task}, {Key: "Groundhog-Checkpoint", Value: "greeting"}, {Key: "Groundhog-Day", Value: "1"}})
	require.NoError(t, err)
	return snap
}

// farewellOnly is a fixture for the rest of the plan after checkpoint 1.
var farewellOnly = fixture(writeTurn("bye.txt", "goodbye\n", "Add bye.txt"))

// wholePlan is a fixture for all of onePlan, each checkpoint done at its
// first attempt.
var wholePlan = fixture(writeTurn("greet.txt", "hello\n", "Add greet.txt"), writeTurn("bye.txt", "goodbye\n", "Add bye.txt"))

func TestResumeRewindsAnInterruptedAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	snap := crashedAttempt(t, h, "editing")
	assert.Equal(t, snap.ScratchBranch, h.git("branch", "--show-current"))

	res, err := h.run("R1", spec("fs.write"), replay(t, fixture(writeTurn("greet.txt", "hello again\n", "Add greet.txt"))))
	_ = res
	require.Error(t, err, "the fixture has no turn for farewell")
	interrupted := h.events(events.GroundhogInterrupted)
	require.Len(t, interrupted, 2, "the crashed attempt, and the one the fixture ran out under (an infrastructure error)")
	var rw events.GroundhogRewoundData
	require.NoError(t, h.events(events.GroundhogRewound)[0].Decode(&rw))
	assert.Contains(t, rw.Reason, "interrupted")
	assert.Equal(t, "hello", h.git("show", snap.ScratchBranch+":greet.txt"), "the interrupted work is kept on its scratch branch")
	// The next attempt (day 2) committed greeting from a clean snapshot.
	assert.Equal(t, "hello again", h.git("show", "main:greet.txt"))
	mem, err := h.memory(h.ctx, h.task, 0)
	require.NoError(t, err)
	require.Len(t, mem.Checkpoints, 1)
}

// TestAnInterruptedAttemptSpendsNoBudget: with a budget of one attempt,
// the attempt a crash interrupted does not block the checkpoint — the next
// attempt still runs (numbered 2, on day 2) and commits.
func TestAnInterruptedAttemptSpendsNoBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	crashedAttempt(t, h, "editing")
	s := oneAttemptSpec()

	_, err := h.run("R1", s, replay(t, fixture(writeTurn("greet.txt", "hello again\n", "Add greet.txt"))))
	require.Error(t, err, "the fixture has no turn for farewell")
	require.Empty(t, h.events(events.GroundhogAbandoned))
	committed := onlyEvent[events.GroundhogCommittedData](t, h, events.GroundhogCommitted)
	assert.Equal(t, events.Attempt{Checkpoint: "greeting", Attempt: 2, Day: 2}, committed.Attempt)
	assert.Equal(t, "hello again", h.git("show", "main:greet.txt"))
}

func TestResumeCommitsAVerifiedAttemptOnce(t *testing.T) {
	t.Parallel()
	for _, stage := range []string{"verified", "committed"} {
		t.Run(stage, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, onePlan)
			crashedAttempt(t, h, stage)
			res, err := h.run("R1", spec("fs.write"), replay(t, farewellOnly))
			require.NoError(t, err)
			assert.Equal(t, events.GroundhogDone, res.State, res.Message)
			assert.Equal(t, "Add bye.txt\nAdd greet.txt\ninitial", h.git("log", "--format=%s", "main"), "one commit per checkpoint, none twice")
			assert.Len(t, h.events(events.GroundhogCommitted), 2)
			assert.Empty(t, h.events(events.GroundhogInterrupted))
			assert.Len(t, h.events(events.GroundhogGrounding), 2)
			assert.True(t, h.verify().OK)
		})
	}
}

// TestAStaleSnapshotIsTakenBackAndItsDaySkipped: a runner that died after
// taking a snapshot and before recording the attempt left the workspace
// on a scratch branch nobody owns.
func TestAStaleSnapshotIsTakenBackAndItsDaySkipped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	repo, err := gitops.Open(h.repo, gitops.WithEnv(testkit.GitEnv()...))
	require.NoError(t, err)
	_, err = repo.CreateSnapshot(h.ctx, h.task, 1, "main")
	require.NoError(t, err)
	res, err := h.run("R1", spec("fs.write"), replay(t, wholePlan))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, res.State, res.Message)
	var first events.GroundhogAttemptData
	require.NoError(t, h.events(events.GroundhogAttempt)[0].Decode(&first))
	assert.Equal(t, 2, first.Day, "day 1's branch exists, so day 1 is skipped")
}

// TestPlanEditedMidRunDrifts changes the plan while checkpoint 1's attempt
// runs: the attempt finishes, and the run stops before the next one, with
// the workspace clean on the task branch.
func TestPlanEditedMidRunDrifts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	edited := false
	res, err := h.run("R1", spec("fs.write"), func(_ int, start func(string) int) (agent.Provider, error) {
		p, err := agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "f", Start: start("f"),
			FixtureData: []byte(wholePlan)})
		return &editingProvider{Provider: p, edit: func() {
			if !edited {
				edited = true
				newPlan := strings.Replace(onePlan, "saying goodbye", "saying farewell", 1)
				_, err := h.log.Append(h.ctx, events.Event{Type: events.TaskPlanChanged, TaskID: h.task},
					events.TaskPlanChangedData{Plan: newPlan, PlanVersion: 2, PlanDigest: assets.PlanDigest([]byte(newPlan))})
				require.NoError(t, err)
			}
		}}, err
	})
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDrifted, res.State)
	assert.Equal(t, 1, res.Committed)
	d := onlyEvent[events.GroundhogDriftData](t, h, events.GroundhogDrift)
	assert.Equal(t, 1, d.PinnedVersion)
	assert.Equal(t, 2, d.CurrentVersion)
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("status", "--porcelain"))
	assert.Len(t, h.events(events.GroundhogAttempt), 1, "no attempt after the drift")
}

// editingProvider calls edit before its first turn.
type editingProvider struct {
	agent.Provider
	edit func()
}

func (p *editingProvider) Complete(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	p.edit()
	return p.Provider.Complete(ctx, req)
}

// TestMemoryIsAppendOnly checks, byte for byte, that the prompt of each of
// three checkpoints starts with the plan and memory sections of the one
// before: a provider's prompt cache stays valid as checkpoints complete.
func TestMemoryIsAppendOnly(t *testing.T) {
	t.Parallel()
	plan := `
checkpoints:
  - {id: one, spec: Write one.txt., success_criteria: [{kind: file_exists, path: one.txt}]}
  - {id: two, spec: Write two.txt., success_criteria: [{kind: file_exists, path: two.txt}]}
  - {id: three, spec: Write three.txt., success_criteria: [{kind: file_exists, path: three.txt}]}
`
	h := newHarness(t, nil, plan)
	var prompts []string
	res, err := h.run("R1", spec("fs.write"), func(_ int, start func(string) int) (agent.Provider, error) {
		p, err := agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "f", Start: start("f"), FixtureData: []byte(fixture(
			writeTurn("one.txt", "1\n", "Wrote one.txt"), writeTurn("two.txt", "2\n", "Wrote two.txt"), writeTurn("three.txt", "3\n", "Wrote three.txt")))})
		return &recordingProvider{Provider: p, prompts: &prompts}, err
	})
	require.NoError(t, err)
	require.Equal(t, events.GroundhogDone, res.State)
	require.Len(t, prompts, 3)
	memoryPart := func(p string) string { return p[:strings.Index(p, "\n# Current checkpoint")] }
	for k := 0; k < 2; k++ {
		assert.True(t, strings.HasPrefix(memoryPart(prompts[k+1]), memoryPart(prompts[k])),
			"prompt %d's plan and memory are a prefix of prompt %d's:\n%q\n%q", k+1, k+2, memoryPart(prompts[k]), memoryPart(prompts[k+1]))
		assert.Greater(t, len(memoryPart(prompts[k+1])), len(memoryPart(prompts[k])))
	}
	assert.Contains(t, prompts[2], "Wrote one.txt")
	assert.Contains(t, prompts[2], "Wrote two.txt")
	assert.Equal(t, strconv.Itoa(3), strconv.Itoa(res.Committed))
}

// Position keeps the wrapped replay provider's place in the script visible.
func (p *recordingProvider) Position() (string, int) { return p.Provider.(agent.Positioner).Position() }

// Position keeps the wrapped replay provider's place in the script visible.
func (p *editingProvider) Position() (string, int) { return p.Provider.(agent.Positioner).Position() }

// recordingProvider keeps the first user message of every session.
type recordingProvider struct {
	agent.Provider
	prompts *[]string
}

func (p *recordingProvider) Complete(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	if len(req.Messages) == 1 {
		*p.prompts = append(*p.prompts, req.Messages[0].Content[0].Text)
	}
	return p.Provider.Complete(ctx, req)
}
