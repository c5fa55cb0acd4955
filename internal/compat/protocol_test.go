package compat_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
	"github.com/orbitrun/orbit/projector"
)

var update = flag.Bool("update", false, "rewrite the views files of the stored logs in testdata/protocol")

// storedLogs are the logs scripts/record-protocol.sh recorded, one run of
// each kind of job (and its child runs) a file, under the step protocol
// of the directory's name.
func storedLogs(t *testing.T) []string {
	t.Helper()
	logs, err := filepath.Glob("testdata/protocol/*/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	return logs
}

func logName(path string) string {
	return filepath.Base(filepath.Dir(path)) + "/" + strings.TrimSuffix(filepath.Base(path), ".jsonl")
}

// A log written by an earlier step protocol folds to the same views as
// when it was written: each file's views are kept beside it (.views, made
// with -update when the log was recorded), and the live projector and a
// rebuild both fold the log to them, byte for byte.
func TestStoredLogsFoldToTheirViews(t *testing.T) {
	t.Parallel()
	for _, path := range storedLogs(t) {
		t.Run(logName(path), func(t *testing.T) {
			t.Parallel()
			ctx := testkit.Context(t)
			log := testkit.StartLog(t, events.Config{})
			for _, ev := range testkit.ReadEventsFile(t, path) {
				testkit.AppendRecorded(ctx, t, log, ev)
			}
			last, err := log.LastSeq(ctx)
			require.NoError(t, err)

			live := filepath.Join(t.TempDir(), "views.db")
			p, err := projector.Open(ctx, projector.Config{Path: live, Source: log, BatchSize: 7})
			require.NoError(t, err)
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- p.Run(runCtx) }()
			require.NoError(t, p.WaitFor(ctx, last))
			stop()
			require.NoError(t, <-ran)
			require.NoError(t, p.Close())
			testkit.CheckBolt(t, live)

			rebuilt := filepath.Join(t.TempDir(), "rebuilt.db")
			require.NoError(t, projector.Rebuild(ctx, log, rebuilt, last))
			got := testkit.DumpBolt(t, live)
			assert.Equal(t, testkit.DumpBolt(t, rebuilt), got, "live and rebuilt views differ")
			// The log bucket names the log the views were folded from (its
			// creation time differs from test to test), not what it folds to.
			delete(got, "log")
			testkit.Golden(t, strings.TrimSuffix(path, ".jsonl")+".views", testkit.RenderBolt(got), *update)
		})
	}
}

// The interpreter, run again over a stored run's history without its
// run.finished (as an engine that resumes the run after a crash runs it),
// finds every decision the run made where it was recorded: it sends no
// step command, starts no run, records nothing but run.resumed and a
// run.finished with the stored one's id, parent and data. A decision whose
// id or place changed with the protocol would be made again, and fail
// this.
func TestStoredLogsReplayToTheirDecisions(t *testing.T) {
	t.Parallel()
	for _, path := range storedLogs(t) {
		evs := testkit.ReadEventsFile(t, path)
		for _, ev := range evs {
			if ev.Type != events.RunRequested {
				continue
			}
			t.Run(logName(path)+"/"+ev.Job+"/"+ev.RunID, func(t *testing.T) {
				t.Parallel()
				replayRun(t, evs, ev.RunID)
			})
		}
	}
}

// replayRun runs the interpreter again over runID's stored history, less
// its run.finished, through the history an orchestrator gives it
// (executor.OpenHistory) on a log that holds the stored log.
func replayRun(t *testing.T, stored []events.Event, runID string) {
	ctx, cancel := context.WithCancelCause(testkit.Context(t))
	defer cancel(nil)
	var (
		req      events.RunRequestedData
		finished events.Event
		own      []events.Event // the run's events but its run.finished
	)
	log := testkit.StartLog(t, events.Config{})
	for _, ev := range stored {
		if ev.RunID == runID {
			switch ev.Type {
			case events.RunRequested:
				require.NoError(t, ev.Decode(&req))
			case events.RunFinished:
				finished = ev
				continue
			}
			own = append(own, ev)
		}
		testkit.AppendRecorded(ctx, t, log, ev)
	}
	require.NotEmpty(t, finished.ID, "the stored run has no run.finished")
	var job assets.Job
	require.NoError(t, json.Unmarshal(req.Job, &job))

	// run.finished's duration is a reading of the clock from the event
	// it names as its parent: the replay's clock reads what it read.
	var took struct {
		DurationMS int64 `json:"duration_ms"`
	}
	require.NoError(t, finished.Decode(&took))
	i := slices.IndexFunc(own, func(ev events.Event) bool { return ev.ID == finished.ParentID })
	require.NotEqual(t, -1, i, "run.finished's parent %s is not in the run's history", finished.ParentID)
	now := own[i].Time.Add(time.Duration(took.DurationMS) * time.Millisecond)
	host := &storedHost{log: stored, live: log, now: now, stop: cancel}
	x := interpreter.New(interpreter.Config{
		RunID: runID, Job: &job, Depth: req.Depth, Root: req.Root, Backend: req.Backend,
		Traceparent: req.Traceparent, Protocol: req.Protocol, Host: host, Engine: "replay",
		Workspace: workspaceOf(stored, runID),
		Env:       func(string) (string, bool) { return "", false },
		Limits:    func() interpreter.Limits { return interpreter.Limits{MaxChildDepth: 10, MaxDescendants: 100} },
	})
	hist, closeHistory, err := executor.OpenHistory(ctx, log, runID, x.Observe)
	require.NoError(t, err)
	defer closeHistory()
	require.NoError(t, x.Run(ctx, hist), "the interpreter did not finish the run on its stored history")
	assert.Empty(t, host.unexpected, "the replay did what the stored run had done already")

	host.mu.Lock()
	defer host.mu.Unlock()
	types := make([]string, len(host.appended))
	for i, ev := range host.appended {
		types[i] = ev.Type
	}
	require.Equal(t, []string{events.RunResumed, events.RunFinished}, types, "decisions made again: %v", host.appended)
	got := host.appended[1]
	assert.Equal(t, finished.ID, got.ID)
	assert.Equal(t, finished.ParentID, got.ParentID)
	assert.JSONEq(t, string(finished.Data), string(got.Data))
}

// workspaceOf is the workspace the run's steps ran in, as its first step
// command recorded it in step.started's input; the project directory of
// the recording otherwise.
func workspaceOf(log []events.Event, runID string) string {
	for _, ev := range log {
		if ev.RunID != runID || ev.Type != events.StepStarted {
			continue
		}
		var d struct {
			Input struct {
				Workspace string `json:"workspace"`
			} `json:"input"`
		}
		if ev.Decode(&d) == nil && d.Input.Workspace != "" {
			return d.Input.Workspace
		}
	}
	return ""
}

// storedHost carries out a replay's decisions: it keeps what is appended,
// answers about other runs from the stored log, and counts as unexpected
// whatever starts work (a step command, a child run), which stops the
// replay.
type storedHost struct {
	log  []events.Event
	live *events.Log // the log the run's history follows
	now  time.Time
	stop context.CancelCauseFunc

	mu         sync.Mutex
	appended   []events.Event
	unexpected []string
}

func (s *storedHost) Append(ctx context.Context, ev events.Event, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	if ev.Time.IsZero() {
		ev.Time = s.now
	}
	if ev.ID == "" {
		ev.ID = ev.Type + "|replay"
	}
	if _, err := s.live.Append(ctx, ev, payload); err != nil {
		return err
	}
	ev.Data = data
	s.mu.Lock()
	s.appended = append(s.appended, ev)
	s.mu.Unlock()
	return nil
}

type stored struct{}

func (stored) Wait(context.Context) (events.Appended, error) { return events.Appended{}, nil }

func (s *storedHost) AppendAsync(ctx context.Context, ev events.Event, payload any) (interpreter.Stored, error) {
	return stored{}, s.Append(ctx, ev, payload)
}

func (s *storedHost) note(format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.unexpected = append(s.unexpected, what)
	s.mu.Unlock()
	s.stop(errors.New("the replay made a decision again: " + what))
}

func (s *storedHost) Send(_ context.Context, cmd *interpreter.StepCommand) error {
	s.note("step command %s attempt %d", cmd.StepKey, cmd.Attempt)
	return nil
}

func (s *storedHost) Queued(context.Context, string) (bool, error) { return false, nil }

func (s *storedHost) NewID() string {
	s.note("a new run id")
	return events.NewID()
}

func (s *storedHost) Requested(_ context.Context, runID string) (bool, error) {
	return s.find(runID, events.RunRequested) != nil, nil
}

func (s *storedHost) find(runID string, types ...string) []events.Event {
	var found []events.Event
	for _, ev := range s.log {
		if ev.RunID == runID && (len(types) == 0 || slices.Contains(types, ev.Type)) {
			found = append(found, ev)
		}
	}
	return found
}

func (s *storedHost) Read(_ context.Context, runID string, types ...string) ([]events.Event, error) {
	return s.find(runID, types...), nil
}

func (s *storedHost) Hold(context.Context, string, string, string, int) error { return nil }

func (s *storedHost) Submit(_ context.Context, req *interpreter.RunRequest) error {
	s.note("child run %s of job %s", req.RunID, req.Job.Name)
	return nil
}

// endFeed delivers a stored child run's run.finished.
type endFeed struct{ ch chan events.Event }

func (f endFeed) Events() <-chan events.Event { return f.ch }
func (f endFeed) Err() error                  { return errors.New("the stored log has no more") }
func (f endFeed) Stop()                       {}

func (s *storedHost) FollowEnd(_ context.Context, runID string) (interpreter.RunFeed, error) {
	ends := s.find(runID, events.RunFinished)
	ch := make(chan events.Event, len(ends))
	for _, ev := range ends {
		ch <- ev
	}
	return endFeed{ch: ch}, nil
}

func (s *storedHost) CancelChild(_ context.Context, runID string, _ events.RunCancelRequestedData) error {
	s.note("cancel of child run %s", runID)
	return nil
}

func (s *storedHost) Now() time.Time { return s.now }

func (s *storedHost) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- s.now
	return ch
}

func (s *storedHost) Finished(context.Context) {}
func (s *storedHost) Failpoint(string)         {}

// A run requested under one step protocol goes on under it when an engine
// of a later one resumes it: the stored fan-out runs, cut after their
// first fan-out item began, finish on today's engine with a fanout.item
// for every item under protocol 1 and none from 2 on, with the workers'
// activity.finished the stored run has (one an execution under protocols
// 1 and 2, none from 3 on), and with an activity.started for each of the
// five shell items' executions up to protocol 4 (and the echo step's
// under 1 and 2) and, under 5 on this
// embedded store, only for the item whose step.started the stored run
// holds: its command, sent again from the log, may be a repeat, and its
// start says redelivered (from protocol 2 on, where that step.started is
// the item's first event).
func TestStoredRunsResumeUnderTheirProtocol(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		protocol string
		items    int  // fanout.item events once the run ends
		starts   int  // activity.started events once the run ends
		resent   bool // the first item's command is sent again from its step.started
	}{{"v1", 5, 6, false}, {"v2", 0, 6, true}, {"v3", 0, 5, true}, {"v4", 0, 5, true}, {"v5", 0, 1, true}} {
		t.Run(tc.protocol, func(t *testing.T) {
			t.Parallel()
			stored := testkit.ReadEventsFile(t, filepath.Join("testdata/protocol", tc.protocol, "example_fan_out.jsonl"))
			// Through the first item's first event: the fan-out's
			// step.started, then fanout.item 1 (protocol 1) or the first
			// item's step.started (2).
			cut := slices.IndexFunc(stored, func(ev events.Event) bool { return strings.HasSuffix(ev.StepKey, "/1") })
			require.NotEqual(t, -1, cut)
			runID := stored[0].RunID

			ctx := testkit.Context(t)
			log := testkit.StartLog(t, events.Config{})
			for _, ev := range stored[:cut+1] {
				payload, err := ev.Payload()
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(ev.Data, payload))
				ev.Seq = 0
				_, err = log.Append(ctx, ev, payload)
				require.NoError(t, err, ev.ID)
			}
			feed, err := log.Follow(ctx, events.FollowOptions{Filters: []string{
				events.EventSubject(events.AggregateRun, runID, events.RunFinished)}})
			require.NoError(t, err)
			defer feed.Stop()

			// The engine resumes the runs its views list as not finished:
			// this one.
			runrig.StartEngine(t, log, t.TempDir(), func(context.Context) ([]string, error) { return []string{runID}, nil })

			var fin events.RunFinishedData
			select {
			case ev := <-feed.Events():
				require.NoError(t, ev.Decode(&fin))
			case <-ctx.Done():
				t.Fatal("the resumed run did not finish")
			}
			require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
			hist, err := log.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(runID)}})
			require.NoError(t, err)
			var items, resumed, finishes, starts int
			for _, ev := range hist {
				switch ev.Type {
				case events.FanoutItem:
					items++
				case events.RunResumed:
					resumed++
				case events.ActivityFinished:
					finishes++
				case events.ActivityStarted:
					starts++
					var d events.ActivityStartedData
					require.NoError(t, ev.Decode(&d))
					assert.Equal(t, tc.resent && ev.StepKey == stored[cut].StepKey, d.Redelivered, ev.StepKey)
				}
			}
			assert.Equal(t, 1, resumed, "the run was resumed, not started again")
			assert.Equal(t, tc.items, items, "fanout.item events")
			assert.Equal(t, tc.starts, starts, "activity.started events")
			storedFinishes := len(slices.DeleteFunc(slices.Clone(stored), func(ev events.Event) bool { return ev.Type != events.ActivityFinished }))
			assert.Equal(t, storedFinishes, finishes, "activity.finished events")
		})
	}
}
