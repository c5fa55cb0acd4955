package projector_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

var _ projector.Source = (*events.Log)(nil)

// env is one test's log and views directory.
type env struct {
	t    *testing.T
	ctx  context.Context
	log  *events.Log
	dir  string
	path string // the live views file
	at   time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	return &env{
		t:    t,
		ctx:  testkit.Context(t),
		log:  testkit.StartLog(t, events.Config{}),
		dir:  dir,
		path: filepath.Join(dir, "state", "views.db"),
		at:   time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
	}
}

// open opens a projector on cfg, defaulting to the env's file and log. At
// the end of the test it is closed and its file checked by bbolt.
func (e *env) open(cfg projector.Config) *projector.Projector {
	e.t.Helper()
	if cfg.Path == "" {
		cfg.Path = e.path
	}
	if cfg.Source == nil {
		cfg.Source = e.log
	}
	p, err := projector.Open(e.ctx, cfg)
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		require.NoError(e.t, p.Close())
		testkit.CheckBolt(e.t, cfg.Path)
	})
	return p
}

// start runs p.Run in a goroutine; stop ends it and returns what Run
// returned. It is stopped at the end of the test in any case.
func (e *env) start(p *projector.Projector) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var (
		once sync.Once
		err  error
	)
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	e.t.Cleanup(func() { _ = stop() })
	return stop
}

// running opens a projector on cfg (as open does), runs it (as start
// does) and returns it once it has applied the log through seq.
func (e *env) running(cfg projector.Config, seq uint64) *projector.Projector {
	e.t.Helper()
	p := e.open(cfg)
	e.start(p)
	require.NoError(e.t, p.WaitFor(e.ctx, seq))
	return p
}

// runThrough runs p until it has applied the log through seq, then stops
// and closes it.
func (e *env) runThrough(p *projector.Projector, seq uint64) {
	e.t.Helper()
	stop := e.start(p)
	require.NoError(e.t, p.WaitFor(e.ctx, seq))
	require.NoError(e.t, stop())
	require.NoError(e.t, p.Close())
}

// crashBeforeCommitPast runs a projector of batches of 4 whose commit of
// the first batch to end past seq fails, as an engine that dies before
// that commit. Run stops on the failure, and the views it leaves hold
// exactly the batches committed before it, the last of them through at
// most seq.
func (e *env) crashBeforeCommitPast(seq uint64) {
	e.t.Helper()
	p := e.open(projector.Config{BatchSize: 4})
	crash := errors.New("crash before commit")
	var failedAt uint64
	projector.SetBeforeCommit(p, func(at uint64) error {
		if at > seq {
			failedAt = at
			return crash
		}
		return nil
	})
	require.ErrorIs(e.t, p.Run(e.ctx), crash, "the failed commit stops the apply loop")
	committed := p.Applied()
	assert.Greater(e.t, failedAt, committed)
	assert.LessOrEqual(e.t, committed, seq)
	require.NoError(e.t, p.Close())
	assert.Equal(e.t, e.rebuild(committed), testkit.DumpBolt(e.t, e.path),
		"the views hold exactly the events up to the last committed batch")
}

// append appends an event one second after the previous one and returns its
// sequence.
func (e *env) append(ev events.Event, payload any) uint64 {
	e.t.Helper()
	return appendTo(e.t, e.ctx, e.log, &e.at, ev, payload)
}

func appendTo(t *testing.T, ctx context.Context, l *events.Log, at *time.Time, ev events.Event, payload any) uint64 {
	t.Helper()
	*at = at.Add(time.Second)
	if ev.Time.IsZero() {
		ev.Time = *at
	}
	res, err := l.Append(ctx, ev, payload)
	require.NoError(t, err)
	require.False(t, res.Duplicate, "event %s appended twice", ev.ID)
	return res.Seq
}

// rebuild builds a fresh views file from e's log through upTo and returns
// its contents.
func (e *env) rebuild(upTo uint64) map[string]map[string]string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "rebuilt.db")
	require.NoError(e.t, projector.Rebuild(e.ctx, e.log, path, upTo))
	testkit.CheckBolt(e.t, path)
	return testkit.DumpBolt(e.t, path)
}

// runID returns the i-th of a series of ids that sort like ULIDs made one
// after another.
func runID(i int) string { return fmt.Sprintf("01JRUN%020d", i) }

// history appends a realistic run of job "ci" with id and returns the
// sequence of its last event. The run retries a step, skips one, runs a
// loop iteration, is resumed by another engine, starts a child run, and is
// cancelled.
func (e *env) history(id, child string) uint64 {
	e.t.Helper()
	run := func(typ string, payload any) uint64 {
		return e.append(events.Event{Type: typ, RunID: id, Job: "ci"}, payload)
	}
	step := func(typ, key string, payload any) uint64 {
		return e.append(events.Event{Type: typ, RunID: id, Job: "ci", StepKey: key}, payload)
	}
	run(events.RunRequested, events.RunRequestedData{JobName: "ci", Requester: "alice",
		Input: map[string]any{"ref": "main", "big": 12345678901234567}})
	run(events.RunQueued, events.RunQueuedData{MaxActiveRuns: 1, Active: []string{runID(0)}})
	run(events.RunStarted, events.RunStartedData{Engine: "engine-a"})
	step(events.StepStarted, "build", events.StepStartedData{Attempt: 1, ActivityType: "shell", Target: "activity:build", Input: map[string]any{"target": "./..."}})
	step(events.ActivityStarted, "build", events.ActivityStartedData{Attempt: 1, ActivityType: "shell", Worker: "w1", Delivery: 1})
	step(events.ActivityStarted, "build", events.ActivityStartedData{Attempt: 1, ActivityType: "shell", Worker: "w2", Delivery: 2})
	step(events.ShellExited, "build", events.ShellExitedData{Attempt: 1, Program: "go", ExitCode: 2})
	step(events.StepFinished, "build", events.StepFinishedData{Attempt: 1, State: events.StateFailed, DurationMS: 1500,
		Error: &events.ErrorInfo{Kind: events.KindActivity, Message: "exit code 2", Retryable: true, StepKey: "build"}})
	step(events.StepRetryScheduled, "build", events.StepRetryScheduledData{Attempt: 2, DelayMS: 1000})
	step(events.StepStarted, "build", events.StepStartedData{Attempt: 2, ActivityType: "shell", Target: "activity:build", Input: map[string]any{"target": "./..."}})
	step(events.ActivityStarted, "build", events.ActivityStartedData{Attempt: 2, ActivityType: "shell", Worker: "w1", Delivery: 1})
	step(events.ShellExited, "build", events.ShellExitedData{Attempt: 2, Program: "go", ExitCode: 0})
	step(events.StepFinished, "build", events.StepFinishedData{Attempt: 2, State: events.StateSuccess, DurationMS: 900, Output: map[string]any{"exit_code": 0}})
	step(events.StepSkipped, "deploy", events.StepSkippedData{Condition: "input.ref == release"})
	run(events.RunResumed, events.RunResumedData{Engine: "engine-b"})
	step(events.StepStarted, "loop/1/review", events.StepStartedData{Attempt: 1, ActivityType: "agent_loop"})
	e.append(events.Event{Type: events.RunRequested, RunID: child, Job: "review"}, events.RunRequestedData{
		JobName: "review", Parent: &events.RunLink{RunID: id, StepKey: "loop/1/review"}})
	step(events.StepFinished, "loop/1/review", events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Output: "lgtm"})
	run(events.RunCancelRequested, events.RunCancelRequestedData{Reason: "enough", Requester: "bob"})
	step(events.ActivityFinished, "loop/1/review", events.ActivityFinishedData{Attempt: 1, State: events.StateSuccess})
	return run(events.RunFinished, events.RunFinishedData{State: events.StateCancelled, DurationMS: 20000,
		Error: &events.ErrorInfo{Kind: events.KindCancelled, Message: "cancelled by bob"}})
}

// newViewsPath names a views file that does not exist yet.
func newViewsPath(t *testing.T) string { return filepath.Join(t.TempDir(), "views.db") }

// recordCommits records the last sequence of every batch p commits from
// now on; the function it returns gives the sequences so far.
func recordCommits(p *projector.Projector) func() []uint64 {
	var (
		mu   sync.Mutex
		seqs []uint64
	)
	projector.SetBeforeCommit(p, func(seq uint64) error {
		mu.Lock()
		defer mu.Unlock()
		seqs = append(seqs, seq)
		return nil
	})
	return func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seqs)
	}
}
