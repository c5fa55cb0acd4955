package shipping

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

// Config is what a Service needs from its engine.
type Config struct {
	// Log is the engine's event log.
	Log *events.Log
	// Task returns a task's record reflecting at least every event up to
	// minSeq; a task the views do not hold is an error wrapping
	// events.ErrNotFound.
	Task func(ctx context.Context, id string, minSeq uint64) (*projector.TaskView, error)
	// Tasks returns every task, reflecting at least minSeq.
	Tasks func(ctx context.Context, minSeq uint64) ([]projector.TaskView, error)
	// Run returns a run's view with its steps, reflecting at least minSeq.
	Run func(ctx context.Context, id string, minSeq uint64) (*projector.RunView, error)
	// Root is the project directory: worktrees are made under
	// Root/.orbit/state/worktrees.
	Root string
	// Remote is the remote a base is fetched from and pushed to (default
	// origin).
	Remote string
	// GitEnv is extra environment for git (tests isolate it from the
	// machine's configuration).
	GitEnv []string
	// Forge returns the forge settings the engine runs with now (nil: no
	// forge; pr_open fails naming what is missing).
	Forge func() ForgeSettings
	// Redact is told every token the Service issues, so that nothing it
	// publishes shows one (nil: told nothing).
	Redact func(secret string)
	// Logger receives operational messages (nil discards them).
	Logger *slog.Logger
}

// ReadViews makes Task, Tasks and Run read the views p, each once p has
// applied the log through minSeq: what an engine's views give its
// Service.
func (c *Config) ReadViews(p *projector.Projector) {
	c.Task = func(ctx context.Context, id string, minSeq uint64) (*projector.TaskView, error) {
		if err := p.WaitFor(ctx, minSeq); err != nil {
			return nil, err
		}
		return p.Task(ctx, id)
	}
	c.Tasks = func(ctx context.Context, minSeq uint64) ([]projector.TaskView, error) {
		if err := p.WaitFor(ctx, minSeq); err != nil {
			return nil, err
		}
		return p.Tasks(ctx)
	}
	c.Run = func(ctx context.Context, id string, minSeq uint64) (*projector.RunView, error) {
		if err := p.WaitFor(ctx, minSeq); err != nil {
			return nil, err
		}
		return p.RunView(ctx, id)
	}
}

// Service carries out shipping: the task record's writes and the shipping
// actions. It is safe for concurrent use.
type Service struct {
	cfg    Config
	log    *slog.Logger
	locks  *activity.Locks
	tokens *tokens

	mu    sync.Mutex
	repos map[string]*sync.Mutex // repository (common dir) → its git lock
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Remote == "" {
		cfg.Remote = "origin"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Redact == nil {
		cfg.Redact = func(string) {}
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "shipping"), locks: activity.NewLocks(cfg.Log),
		tokens: newTokens(cfg.Redact), repos: map[string]*sync.Mutex{}}
}

// WorktreesDir is where the worktrees of shipping runs are made, one per
// run, named by the run's id.
func WorktreesDir(root string) string {
	return filepath.Join(root, ".orbit", "state", "worktrees")
}

// lockRepo serialises the git work of the Service's actions on one
// repository (its main work tree): worktree adds and prunes, fetches,
// commits, rebases and merges of several runs at once share the
// repository's refs and object store, and git's own locks would fail one
// of them half-way. It returns the unlock.
func (s *Service) lockRepo(dir string) func() {
	s.mu.Lock()
	m, ok := s.repos[dir]
	if !ok {
		m = &sync.Mutex{}
		s.repos[dir] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// open opens the work tree at dir with the Service's git environment.
func (s *Service) open(dir string) (*gitops.Repo, error) {
	return gitops.Open(dir, gitops.WithEnv(s.cfg.GitEnv...))
}

// mainOf returns the main work tree of the repository dir is a work tree
// of: where its base branch is usually checked out.
func (s *Service) mainOf(ctx context.Context, dir string) (*gitops.Repo, error) {
	r, err := s.open(dir)
	if err != nil {
		return nil, err
	}
	list, err := r.Worktrees(ctx)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: git lists no work tree", dir)
	}
	if list[0].Path == r.Dir {
		return r, nil
	}
	return s.open(list[0].Path)
}

// task reads a task's record as the log has it now.
func (s *Service) task(ctx context.Context, id string) (*projector.TaskView, error) {
	last, err := s.cfg.Log.LastMatching(ctx, []string{events.TaskFilter(id)})
	if err != nil {
		return nil, err
	}
	if last == 0 {
		return nil, fmt.Errorf("task %s: %w", id, events.ErrNotFound)
	}
	return s.cfg.Task(ctx, id, last)
}

// tasks reads every task as the log has it now.
func (s *Service) tasks(ctx context.Context) ([]projector.TaskView, error) {
	last, err := s.cfg.Log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	return s.cfg.Tasks(ctx, last)
}

// tasksOf reads the tasks ids names, in that order; an unknown one is a
// validation failure naming it.
func (s *Service) tasksOf(ctx context.Context, ids []string) ([]*projector.TaskView, error) {
	out := make([]*projector.TaskView, 0, len(ids))
	for _, id := range ids {
		t, err := s.task(ctx, id)
		if errors.Is(err, events.ErrNotFound) {
			return nil, activity.Failure(events.KindValidation, false, "no task %s", id)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// appendTask appends an event of a task. A decision of a run's step
// carries an id derived from what it records (id), so that a redelivered
// step records it once; an id of "" is a new one.
func (s *Service) appendTask(ctx context.Context, taskID, id, typ string, payload any) (uint64, error) {
	a, err := s.cfg.Log.Append(ctx, events.Event{ID: id, Type: typ, TaskID: taskID}, payload)
	return a.Seq, err
}

// hasRun reports whether a task's record lists the run with kind.
func hasRun(t *projector.TaskView, runID, kind string) bool {
	return slices.ContainsFunc(t.Runs, func(r projector.TaskRun) bool { return r.RunID == runID && r.Kind == kind })
}
