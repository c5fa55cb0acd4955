package shipping

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// tokens are the summary tokens of the agent steps bound to a task now: an
// agent that runs in its own process (a CLI agent) records its execution
// summary through the engine's API with one (Service.SummaryWithToken),
// and the agent identity may call nothing that does not check one.
//
// IMPORTANT: tokens live in the engine's memory only. An engine that
// restarts has ended every step it ran, so an old token is refused, which
// is the answer wanted.
type tokens struct {
	redact func(string)
	mu     sync.Mutex
	open   map[string]binding // token → what it scopes
}

// binding is what a token scopes: one attempt of one agent step, for one
// task.
type binding struct {
	taskID string
	step   activity.StepRef
}

func newTokens(redact func(string)) *tokens {
	return &tokens{redact: redact, open: map[string]binding{}}
}

func (t *tokens) issue(b binding) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(raw)
	t.redact(tok)
	t.mu.Lock()
	t.open[tok] = b
	t.mu.Unlock()
	return tok, nil
}

func (t *tokens) forget(tok string) {
	t.mu.Lock()
	delete(t.open, tok)
	t.mu.Unlock()
}

// scope returns what token scopes, if it is open for task taskID.
func (t *tokens) scope(taskID, tok string) (binding, bool) {
	t.mu.Lock()
	b, ok := t.open[tok]
	t.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare([]byte(b.taskID), []byte(taskID)) != 1 {
		return binding{}, false
	}
	return b, true
}

var _ activity.TaskBinder = (*Service)(nil)

// Bind binds an agent step to its task: the agent is given the task's
// record as input.task, records its execution summary with the
// orbit.task.summary tool, or, from its own process, with the token.
func (s *Service) Bind(ctx context.Context, step activity.StepRef, taskID string) (*activity.TaskBinding, error) {
	t, err := s.task(ctx, taskID)
	if err != nil {
		return nil, err
	}
	tok, err := s.tokens.issue(binding{taskID: taskID, step: step})
	if err != nil {
		return nil, err
	}
	by := agentActor(step)
	return &activity.TaskBinding{
		Snapshot: snapshot(t),
		Token:    tok,
		RecordSummary: func(ctx context.Context, summary string) error {
			return s.recordSummary(ctx, taskID, summary, by, step.RunID)
		},
		Release: func() { s.tokens.forget(tok) },
	}, nil
}

// agentActor names an agent step as the author of what it records.
func agentActor(step activity.StepRef) string {
	return fmt.Sprintf("agent:run:%s/%s#%d", step.RunID, step.StepKey, step.Attempt)
}

// SummaryWithToken records the execution summary a CLI agent sends from
// its own process, when token scopes an open agent step of the task
// (ErrToken otherwise, nothing recorded). It returns the sequence of the
// record.
func (s *Service) SummaryWithToken(ctx context.Context, taskID, token, summary string) error {
	b, ok := s.tokens.scope(taskID, token)
	if !ok || token == "" {
		return ErrToken
	}
	if _, err := s.task(ctx, taskID); err != nil {
		return err
	}
	return s.recordSummary(ctx, taskID, summary, agentActor(b.step), b.step.RunID)
}

// TaskSnapshot is a task as an implementing agent is given it.
type TaskSnapshot struct {
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description,omitempty"`
	AcceptanceCriteria []string `json:"acceptance_criteria,omitempty"`
	ContextFiles       []string `json:"context_files,omitempty"`
	Dependencies       []string `json:"dependencies,omitempty"`
	Plan               string   `json:"plan,omitempty"`
	Priority           string   `json:"priority,omitempty"`
	Type               string   `json:"type,omitempty"`
	Status             string   `json:"status"`
	Branch             string   `json:"branch,omitempty"`
	Worktree           string   `json:"worktree,omitempty"`
	ExecutionSummary   string   `json:"execution_summary,omitempty"`
	// Terminal says the task is in review or done already: an agent given
	// it does nothing (a retry overtaken by another run).
	Terminal bool `json:"terminal"`
}

func snapshot(t *projector.TaskView) TaskSnapshot {
	status := events.TaskStatusMeaning(t.Status)
	return TaskSnapshot{ID: t.ID, Title: t.Title, Description: t.Description, AcceptanceCriteria: t.AcceptanceCriteria,
		ContextFiles: t.ContextFiles, Dependencies: t.Dependencies, Plan: t.PlanText, Priority: t.Priority, Type: t.Type,
		Status: status, Branch: t.Branch, Worktree: t.Worktree, ExecutionSummary: t.ExecutionSummary,
		Terminal: status == events.TaskReview || status == events.TaskDone}
}
