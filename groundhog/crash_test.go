package groundhog_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/failpoint"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// Crash tests kill a process at a failpoint, as a crash kills the engine:
// the test binary runs its own test again as a child, on the same log
// store and repository, with ORBIT_FAILPOINT naming the window; the child
// dies there by SIGKILL, and the test then opens the log and the
// repository again and checks what the next run (or approval) makes of
// what the child left.
const (
	crashStoreEnv = "GROUNDHOG_CRASH_STORE"
	crashRepoEnv  = "GROUNDHOG_CRASH_REPO"
)

// crashRig is a task whose log (a JetStream store directory) and
// repository outlive the processes that open them.
type crashRig struct {
	t     *testing.T
	store string
	repo  string
	// child: this process is the child, which must die at its failpoint.
	child bool
}

// newCrashRig makes the task on a new repository, or in the child finds
// the parent's.
func newCrashRig(t *testing.T, files map[string]string, plan string) *crashRig {
	t.Helper()
	if store := os.Getenv(crashStoreEnv); store != "" {
		return &crashRig{t: t, store: store, repo: os.Getenv(crashRepoEnv), child: true}
	}
	c := &crashRig{t: t, store: filepath.Join(t.TempDir(), "nats"), repo: testkit.NewGitRepo(t, files)}
	h, closeLog := c.open()
	_, err := h.log.AppendFirst(h.ctx, events.Event{Type: events.TaskCreated, TaskID: h.task}, events.TaskCreatedData{
		Title: "test task", Workspace: h.repo, Branch: "main", Plan: plan, PlanVersion: 1, PlanDigest: assets.PlanDigest([]byte(plan)),
	})
	require.NoError(t, err)
	closeLog()
	return c
}

// open opens the task's log and a projector of its own, as an engine
// starting on them would. close closes both (the test's end does too).
func (c *crashRig) open() (h *harness, closeLog func()) {
	t := c.t
	t.Helper()
	ctx := testkit.Context(t)
	log, err := events.Open(ctx, events.Config{StoreDir: c.store, Redactor: &events.Redactor{}})
	require.NoError(t, err)
	proj, err := projector.Open(ctx, projector.Config{Path: filepath.Join(t.TempDir(), "views.db"), Source: log})
	require.NoError(t, err)
	pctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = proj.Run(pctx) }()
	var once sync.Once
	closeLog = func() {
		once.Do(func() {
			stop()
			<-done
			proj.Close()
			log.Close()
		})
	}
	t.Cleanup(closeLog)
	return &harness{t: t, ctx: ctx, log: log, proj: proj, repo: c.repo, task: "T-1"}, closeLog
}

// crash runs this test again as a child that must die by SIGKILL at the
// failpoint.
func (c *crashRig) crash(point string) {
	t := c.t
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashStoreEnv+"="+c.store, crashRepoEnv+"="+c.repo, failpoint.Env+"="+point)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the child ended without dying at %s: %v\n%s", point, err, out)
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && status.Signaled() && status.Signal() == syscall.SIGKILL, "the child did not die by SIGKILL at %s: %v\n%s", point, err, out)
}

// crashAt has the child of this test run child, which must die at the
// failpoint point (the child of another point's subtest skips), and
// returns, in the parent, a harness on what the child left.
func (c *crashRig) crashAt(point string, child func(h *harness) error) *harness {
	t := c.t
	t.Helper()
	if c.child {
		if os.Getenv(failpoint.Env) != point {
			t.Skip("another window's child")
		}
		h, _ := c.open()
		t.Fatalf("the run went past %s: %v", point, child(h))
	}
	c.crash(point)
	h, _ := c.open()
	return h
}

// failingProvider fails every turn as a provider that is down does: an
// infrastructure failure, not the agent's.
type failingProvider struct{ agent.Provider }

func (failingProvider) Complete(context.Context, *agent.Request) (*agent.Response, error) {
	return nil, errors.New("the provider is down")
}

func providerDown(_ int, start func(string) int) (agent.Provider, error) {
	p, err := agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "f", FixtureData: []byte(farewellOnly), Start: start("f")})
	return failingProvider{p}, err
}

// TestACrashAroundAnInfrastructureFailureSpendsNoBudget kills the runner
// in both windows of an attempt whose provider failed under it: after its
// report and before its rewind, and after its rewind and before its
// interruption is recorded. With a budget of one attempt, the next run
// still gets its attempt: the crash cost the checkpoint nothing.
func TestACrashAroundAnInfrastructureFailureSpendsNoBudget(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"groundhog-after-infrastructure-failure", "groundhog-before-interrupted"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			c := newCrashRig(t, nil, onePlan)
			s := oneAttemptSpec()
			h := c.crashAt(point, func(h *harness) error {
				_, err := h.run("R1", s, providerDown)
				return err
			})
			res, err := h.run("R2", s, replay(t, wholePlan))
			require.NoError(t, err)
			assert.Equal(t, events.GroundhogDone, res.State, res.Message)
			assert.Empty(t, h.events(events.GroundhogAbandoned))
			in := onlyEvent[events.GroundhogInterruptedData](t, h, events.GroundhogInterrupted, "day 1 is closed as interrupted")
			assert.Equal(t, 1, in.Day)
			var committed events.GroundhogCommittedData
			require.NoError(t, h.events(events.GroundhogCommitted)[0].Decode(&committed))
			assert.Equal(t, events.Attempt{Checkpoint: "greeting", Attempt: 2, Day: 2}, committed.Attempt)
			assert.True(t, h.verify().OK, "%+v", h.verify().Checks)
		})
	}
}

// TestARefusedRewindRecordsNothing: a run that finds an attempt open after
// a crash, on a task branch someone has committed on since, cannot rewind
// it (the rewind fails closed). It records nothing about the attempt — no
// report that its work was rewound, no rewind, no interruption — and says
// why it stopped.
func TestARefusedRewindRecordsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	crashedAttempt(t, h, "editing")
	other := filepath.Join(t.TempDir(), "other")
	h.git("worktree", "add", "--quiet", other, "main")
	testkit.Git(t, other, "commit", "--quiet", "--allow-empty", "-m", "a person's commit")
	h.git("worktree", "remove", other)

	_, err := h.run("R2", spec("fs.write"), replay(t, farewellOnly))
	require.ErrorIs(t, err, gitops.ErrTaskBranchMoved)
	assert.Empty(t, h.events(events.GroundhogAttemptFailed), "nothing was rewound, so no report says it was")
	assert.Empty(t, h.events(events.GroundhogRewound))
	assert.Empty(t, h.events(events.GroundhogInterrupted))
}

// TestAnApprovalCutShortIsRecorded kills an approval after its
// fast-forward and before its record: the task branch holds the held
// commits and the log does not say so. The next approval, or the next
// run's start, records it, once.
func TestAnApprovalCutShortIsRecorded(t *testing.T) {
	t.Parallel()
	for _, next := range []string{"approve", "run"} {
		t.Run(next, func(t *testing.T) {
			t.Parallel()
			c := newCrashRig(t, map[string]string{"README.md": "# demo\n"}, onePlan)
			if c.child {
				h, _ := c.open()
				_, err := h.approve()
				t.Fatalf("the approval went past its fast-forward: %v", err)
			}
			h, closeLog := c.open()
			initial := h.git("rev-parse", "main")
			res, err := h.run("R1", heldSpec(), replay(t, wholePlan))
			require.NoError(t, err)
			require.Equal(t, events.GroundhogDone, res.State, res.Message)
			held := h.git("rev-parse", heldRef)
			closeLog()

			c.crash("groundhog-approve-after-fast-forward")
			h, _ = c.open()
			require.Equal(t, held, h.git("rev-parse", "main"), "the fast-forward was made")
			require.Empty(t, h.events(events.GroundhogApproved), "and not recorded")

			if next == "approve" {
				ctl, err := h.approve()
				require.NoError(t, err)
				assert.Equal(t, groundhog.ApproveDone, ctl.Outcome, ctl.Message)
				assert.Contains(t, ctl.Message, "cut short")
				ctl, err = h.approve()
				require.NoError(t, err)
				assert.Equal(t, groundhog.ApproveNothingHeld, ctl.Outcome, "recorded once: %s", ctl.Message)
			} else {
				res, err := h.run("R2", heldSpec(), replay(t, fixture()))
				require.NoError(t, err)
				assert.Equal(t, events.GroundhogDone, res.State, res.Message)
			}
			a := onlyEvent[events.GroundhogApprovedData](t, h, events.GroundhogApproved)
			assert.Equal(t, "main", a.TaskBranch)
			assert.Equal(t, heldRef, a.HeldRef)
			assert.Equal(t, initial, a.FromSHA, "where the fast-forward started")
			assert.Equal(t, held, a.ToSHA)
			assert.True(t, h.verify().OK, "%+v", h.verify().Checks)
		})
	}
}

// cancellingProvider cancels the run under its first turn, as `orbit run
// cancel` or an engine stopping does.
type cancellingProvider struct {
	agent.Provider
	cancel context.CancelFunc
}

func (p cancellingProvider) Complete(ctx context.Context, _ *agent.Request) (*agent.Response, error) {
	p.cancel()
	return nil, ctx.Err()
}

// TestACancelledAttemptSpendsNoBudget: a run cancelled mid-attempt (or
// stopped with its engine) rewinds the attempt and closes it as
// interrupted, which the next attempt learns and which spends nothing:
// with a budget of one attempt, the next run still gets its attempt.
func TestACancelledAttemptSpendsNoBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, onePlan)
	s := oneAttemptSpec()
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	res, err := groundhog.Run(ctx, groundhog.Config{
		Log: h.log, TaskID: h.task, RunID: "R1", StepKey: "groundhog", Job: "groundhog-" + h.task, Activity: "test", Spec: s,
		NewProvider: func(context.Context, func(string) int) (agent.Provider, error) {
			p, err := agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "f", FixtureData: []byte(farewellOnly)})
			return cancellingProvider{Provider: p, cancel: cancel}, err
		},
		Memory: h.memory, Profile: agent.DefaultProfile, GitEnv: testkit.GitEnv(),
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, events.GroundhogCancelled, res.State)
	require.Len(t, h.events(events.GroundhogInterrupted), 1)
	failed := onlyEvent[events.GroundhogAttemptFailedData](t, h, events.GroundhogAttemptFailed)
	assert.Equal(t, "interrupted", failed.Report.Source)
	assert.Equal(t, "main", h.git("branch", "--show-current"))

	res, err = h.run("R2", s, replay(t, wholePlan))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, res.State, res.Message)
	assert.Empty(t, h.events(events.GroundhogAbandoned))
	assert.True(t, h.verify().OK, "%+v", h.verify().Checks)
}

// TestACrashWhileRecoveringSpendsNoBudget kills a run while it closes an
// attempt it found open: after the rewind and before any record, and
// after groundhog.rewound and before groundhog.interrupted. The run after
// it finishes the job; the attempt spends nothing, and the report the next
// attempt learns from is recorded once.
func TestACrashWhileRecoveringSpendsNoBudget(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"groundhog-after-rewind", "groundhog-before-interrupted"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			c := newCrashRig(t, nil, onePlan)
			s := oneAttemptSpec()
			h := c.crashAt(point, func(h *harness) error {
				crashedAttempt(t, h, "editing")
				_, err := h.run("R2", s, replay(t, farewellOnly))
				return err
			})
			res, err := h.run("R3", s, replay(t, fixture(writeTurn("greet.txt", "hello again\n", "Add greet.txt"), writeTurn("bye.txt", "goodbye\n", "Add bye.txt"))))
			require.NoError(t, err)
			assert.Equal(t, events.GroundhogDone, res.State, res.Message)
			assert.Empty(t, h.events(events.GroundhogAbandoned))
			require.Len(t, h.events(events.GroundhogInterrupted), 1)
			require.Len(t, h.events(events.GroundhogAttemptFailed), 1, "one report for day 1")
			assert.Equal(t, "hello", h.git("show", "groundhog/T-1/day-1:greet.txt"), "day 1's work is kept on its scratch branch")
			assert.Equal(t, "hello again", h.git("show", "main:greet.txt"))
			assert.True(t, h.verify().OK, "%+v", h.verify().Checks)
		})
	}
}
