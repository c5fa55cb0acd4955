package shipping_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

func TestCreateChecksTheRecordAndNumbersTasks(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id, _, err := r.svc.Create(r.ctx, shipping.NewTask{Title: "  Greet in French  ", Workspace: r.repo,
		Description: "Say bonjour.", AcceptanceCriteria: []string{"greet.txt says bonjour", " "},
		ContextFiles: []string{"file:greet.txt", "dir:docs/", "./src//a.go", "greet.txt"}, Priority: "high", Type: "feature",
		PlanText: "Edit greet.txt.", By: "cli:me"})
	require.NoError(t, err)
	assert.Equal(t, "T-1", id)
	task := r.task(id)
	assert.Equal(t, "Greet in French", task.Title)
	assert.Equal(t, events.TaskProposed, task.Status, "a task is proposed unless it says otherwise")
	assert.Equal(t, []string{"greet.txt", "docs/**", "src/a.go"}, task.ContextFiles, "selectors read, paths cleaned, each once")
	assert.Equal(t, []string{"greet.txt says bonjour"}, task.AcceptanceCriteria)
	assert.Equal(t, "cli:me", task.History[0].By)
	assert.Zero(t, task.PlanVersion, "no checkpoint plan")
	assert.Equal(t, "T-2", r.add(shipping.NewTask{Title: "second"}))

	for name, bad := range map[string]shipping.NewTask{
		"no title":           {Title: " ", Workspace: r.repo},
		"relative workspace": {Title: "t", Workspace: "repo"},
		"status":             {Title: "t", Workspace: r.repo, Status: events.TaskDone},
		"priority":           {Title: "t", Workspace: r.repo, Priority: "urgent"},
		"type":               {Title: "t", Workspace: r.repo, Type: "Big Feature"},
		"escaping file":      {Title: "t", Workspace: r.repo, ContextFiles: []string{"../secrets"}},
		"absolute file":      {Title: "t", Workspace: r.repo, ContextFiles: []string{"/etc/passwd"}},
		"unknown dependency": {Title: "t", Workspace: r.repo, Dependencies: []string{"T-99"}},
		"plan, no branch":    {Title: "t", Workspace: r.repo, Plan: "checkpoints:\n  - id: a\n    spec: x\n    success_criteria: [{kind: file_exists, path: a}]\n"},
		"bad plan":           {Title: "t", Workspace: r.repo, Branch: "main", Plan: "checkpoints: []\n"},
	} {
		_, _, err := r.svc.Create(r.ctx, bad)
		assert.ErrorIs(t, err, shipping.ErrInvalidTask, name)
	}
}

func TestTransitionsAreRecordedWithWhoMadeThem(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := r.add(shipping.NewTask{Title: "t", Status: events.TaskProposed})

	_, err := r.svc.Start(r.ctx, id, "cli:ada", "")
	require.NoError(t, err)
	_, err = r.svc.Start(r.ctx, id, "cli:ada", "")
	assert.ErrorIs(t, err, shipping.ErrTransition, "already in progress")

	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, Status: events.TaskReview, By: "cli:ada"})
	require.ErrorIs(t, err, shipping.ErrSummary, "in progress to review needs an execution summary")
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, ExecutionSummary: ptr("TBD")})
	assert.ErrorIs(t, err, shipping.ErrSummary, "a placeholder says nothing")
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, Status: events.TaskReview, By: "cli:ada",
		ExecutionSummary: ptr("Added bonjour to greet.txt."), Reason: "ready"})
	require.NoError(t, err)

	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, Status: events.TaskArchived})
	assert.ErrorContains(t, err, "orbit task archive")
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, Status: events.TaskDone, By: "cli:bob"})
	require.NoError(t, err)
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: id, Status: events.TaskBacklog})
	assert.ErrorContains(t, err, "done is final")
	_, err = r.svc.Archive(r.ctx, id, "cli:bob", "")
	assert.ErrorIs(t, err, shipping.ErrTransition)

	task := r.task(id)
	assert.Equal(t, "Added bonjour to greet.txt.", task.ExecutionSummary)
	type move struct{ from, to, by, reason string }
	var moves []move
	for _, h := range task.History {
		moves = append(moves, move{h.From, h.To, h.By, h.Reason})
	}
	assert.Equal(t, []move{{"", "proposed", "", ""}, {"proposed", "in-progress", "cli:ada", ""},
		{"in-progress", "review", "cli:ada", "ready"}, {"review", "done", "cli:bob", ""}}, moves)

	other := r.add(shipping.NewTask{Title: "u"})
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: other, ContextFiles: &[]string{"a.txt"}, Dependencies: &[]string{id}, Title: ptr("renamed")})
	require.NoError(t, err)
	_, err = r.svc.Archive(r.ctx, other, "cli:bob", "not now")
	require.NoError(t, err)
	task = r.task(other)
	assert.Equal(t, "renamed", task.Title)
	assert.Equal(t, []string{"a.txt"}, task.ContextFiles)
	assert.Equal(t, events.TaskArchived, task.Status)
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: other, Dependencies: &[]string{other}})
	assert.ErrorIs(t, err, shipping.ErrInvalidTask, "a task cannot depend on itself")
	_, err = r.svc.Update(r.ctx, shipping.TaskChange{TaskID: other})
	assert.ErrorIs(t, err, shipping.ErrInvalidTask, "nothing to change")
}

func TestAnAgentsSummaryNeedsItsStepsToken(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := r.add(shipping.NewTask{Title: "t", AcceptanceCriteria: []string{"it works"}})
	other := r.add(shipping.NewTask{Title: "u"})
	var redacted []string
	cfg := r.cfg
	cfg.Redact = func(s string) { redacted = append(redacted, s) }
	svc := shipping.New(cfg)
	b, err := svc.Bind(r.ctx, activity.StepRef{RunID: "RUN", StepKey: "implement_bundle/1/implement_one", Attempt: 1}, id)
	require.NoError(t, err)
	assert.Equal(t, []string{b.Token}, redacted, "the token is never published")
	snap, _ := json.Marshal(b.Snapshot)
	assert.JSONEq(t, `{"id":"`+id+`","title":"t","acceptance_criteria":["it works"],"status":"backlog","terminal":false}`, string(snap))

	assert.ErrorIs(t, svc.SummaryWithToken(r.ctx, other, b.Token, "done things"), shipping.ErrToken, "another task's")
	assert.ErrorIs(t, svc.SummaryWithToken(r.ctx, id, "", "done things"), shipping.ErrToken)
	assert.ErrorIs(t, svc.SummaryWithToken(r.ctx, id, b.Token, " "), shipping.ErrSummary)
	require.NoError(t, svc.SummaryWithToken(r.ctx, id, b.Token, "Did the thing, checked it."))
	assert.Equal(t, "Did the thing, checked it.", r.task(id).ExecutionSummary)
	require.NoError(t, b.RecordSummary(r.ctx, "Did it again, better."))
	assert.Equal(t, "Did it again, better.", r.task(id).ExecutionSummary)
	b.Release()
	assert.ErrorIs(t, svc.SummaryWithToken(r.ctx, id, b.Token, "too late"), shipping.ErrToken, "an ended step's token")

	_, err = svc.Bind(r.ctx, activity.StepRef{RunID: "RUN"}, "T-404")
	assert.ErrorIs(t, err, events.ErrNotFound)
}
