package shipping

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// NewTask is a task to create (orbit task add, orbit task create).
type NewTask struct {
	Title              string   `json:"title"`
	Description        string   `json:"description,omitempty"`
	AcceptanceCriteria []string `json:"acceptance_criteria,omitempty"`
	// ContextFiles are the files (or globs) the task is expected to touch,
	// relative to the repository: a shipping gate reserves them.
	ContextFiles []string `json:"context_files,omitempty"`
	Dependencies []string `json:"dependencies,omitempty"`
	PlanText     string   `json:"plan_text,omitempty"`
	// Plan is a checkpoint plan (YAML): a task that has one is implemented
	// by Groundhog, which needs Branch.
	Plan     string `json:"plan,omitempty"`
	Priority string `json:"priority,omitempty"`
	Type     string `json:"type,omitempty"`
	// Status is the status it starts in: proposed (default), backlog,
	// someday or friction.
	Status string `json:"status,omitempty"`
	// Workspace is the repository the task changes (an absolute path).
	Workspace string `json:"workspace"`
	Branch    string `json:"branch,omitempty"`
	By        string `json:"by,omitempty"`
}

// TaskChange changes a task's fields (those set) and, when Status is set,
// its status.
type TaskChange struct {
	TaskID             string    `json:"task_id"`
	Title              *string   `json:"title,omitempty"`
	Description        *string   `json:"description,omitempty"`
	AcceptanceCriteria *[]string `json:"acceptance_criteria,omitempty"`
	ContextFiles       *[]string `json:"context_files,omitempty"`
	Dependencies       *[]string `json:"dependencies,omitempty"`
	PlanText           *string   `json:"plan_text,omitempty"`
	Priority           *string   `json:"priority,omitempty"`
	Type               *string   `json:"type,omitempty"`
	ExecutionSummary   *string   `json:"execution_summary,omitempty"`
	Status             string    `json:"status,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	By                 string    `json:"by,omitempty"`
}

var priorities = []string{"low", "medium", "high", "critical"}

// typeWord is what a task type looks like: a short lower-case word.
var typeWord = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// maxTitle bounds a title; longer text belongs in the description.
const maxTitle = 200

// Create records a new task under the next free id T-<n> and returns the
// id and the sequence of its task.created. Its event must be the first on
// its subject, so two creations racing for one id cannot both win: the
// loser takes the next.
func (s *Service) Create(ctx context.Context, t NewTask) (string, uint64, error) {
	t.Title = strings.TrimSpace(t.Title)
	if err := s.checkNew(ctx, &t); err != nil {
		return "", 0, err
	}
	all, err := s.tasks(ctx)
	if err != nil {
		return "", 0, err
	}
	n := 0
	for _, task := range all {
		if k, err := strconv.Atoi(strings.TrimPrefix(task.ID, "T-")); err == nil && k > n {
			n = k
		}
	}
	data := events.TaskCreatedData{Title: t.Title, Workspace: t.Workspace, Branch: t.Branch, Plan: t.Plan,
		Description: t.Description, AcceptanceCriteria: t.AcceptanceCriteria, ContextFiles: t.ContextFiles,
		Dependencies: t.Dependencies, PlanText: t.PlanText, Priority: t.Priority, Type: t.Type, Status: t.Status, By: t.By,
		Signer: events.RequestSigner(ctx)}
	if t.Plan != "" {
		data.PlanVersion, data.PlanDigest = 1, assets.PlanDigest([]byte(t.Plan))
	}
	for try := range 100 {
		id := "T-" + strconv.Itoa(n+1+try)
		a, err := s.cfg.Log.AppendFirst(ctx, events.Event{Type: events.TaskCreated, TaskID: id}, data)
		if errors.Is(err, events.ErrConflict) {
			continue
		}
		if err != nil {
			return "", 0, err
		}
		return id, a.Seq, nil
	}
	return "", 0, fmt.Errorf("no free task id after T-%d", n)
}

// checkNew validates a new task and puts its lists in their recorded form.
func (s *Service) checkNew(ctx context.Context, t *NewTask) error {
	if t.Title == "" {
		return fmt.Errorf("%w: a task needs a title", ErrInvalidTask)
	}
	if len(t.Title) > maxTitle {
		return fmt.Errorf("%w: the title is %d bytes, more than %d; put the rest in the description", ErrInvalidTask, len(t.Title), maxTitle)
	}
	if t.Workspace == "" || !filepath.IsAbs(t.Workspace) {
		return fmt.Errorf("%w: a task needs its repository as an absolute path, not %q", ErrInvalidTask, t.Workspace)
	}
	if t.Status == "" {
		t.Status = events.TaskProposed
	}
	if !slices.Contains(createStatuses, t.Status) {
		return fmt.Errorf("%w: a task is created %s, not %q", ErrInvalidTask, strings.Join(createStatuses, ", "), t.Status)
	}
	if t.Plan != "" {
		if _, err := assets.ParsePlan("plan", []byte(t.Plan)); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidTask, err)
		}
		if t.Branch == "" {
			return fmt.Errorf("%w: a task with a checkpoint plan needs the branch Groundhog commits on", ErrInvalidTask)
		}
	}
	if err := checkPriority(t.Priority); err != nil {
		return err
	}
	if err := checkType(t.Type); err != nil {
		return err
	}
	files, err := contextFiles(t.ContextFiles)
	if err != nil {
		return err
	}
	t.ContextFiles = files
	t.AcceptanceCriteria = nonEmpty(t.AcceptanceCriteria)
	return s.checkDependencies(ctx, "", t.Dependencies)
}

func checkPriority(p string) error {
	if p != "" && !slices.Contains(priorities, p) {
		return fmt.Errorf("%w: priority %q is not one of %s", ErrInvalidTask, p, strings.Join(priorities, ", "))
	}
	return nil
}

func checkType(t string) error {
	if t != "" && !typeWord.MatchString(t) {
		return fmt.Errorf("%w: type %q is not a short lower-case word (feature, bug, chore, …)", ErrInvalidTask, t)
	}
	return nil
}

// contextFiles checks and normalises context files: paths or globs
// relative to the repository, cleaned, slash-separated; the upstream
// system's selectors file:P and dir:D are read as P and D/**.
func contextFiles(in []string) ([]string, error) {
	var out []string
	for _, f := range in {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, ok := strings.CutPrefix(f, "file:"); ok {
			f = p
		} else if d, ok := strings.CutPrefix(f, "dir:"); ok {
			f = strings.TrimSuffix(d, "/") + "/**"
		}
		clean := path.Clean(filepath.ToSlash(f))
		if path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(clean, 0) {
			return nil, fmt.Errorf("%w: context file %q is not a path inside the repository", ErrInvalidTask, f)
		}
		if !slices.Contains(out, clean) {
			out = append(out, clean)
		}
	}
	return out, nil
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if strings.TrimSpace(s) != "" {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// checkDependencies refuses a dependency on a task that does not exist or
// on the task itself.
func (s *Service) checkDependencies(ctx context.Context, self string, deps []string) error {
	for _, d := range deps {
		if d == self {
			return fmt.Errorf("%w: task %s cannot depend on itself", ErrInvalidTask, d)
		}
		if _, err := s.task(ctx, d); errors.Is(err, events.ErrNotFound) {
			return fmt.Errorf("%w: dependency %s: no such task", ErrInvalidTask, d)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// Update records a change of a task's fields and status, as a person or
// an agent asks for it, and returns the sequence of its last event. A
// move from in-progress to review needs a meaningful execution summary
// (ErrSummary), the record delivery reads.
func (s *Service) Update(ctx context.Context, c TaskChange) (uint64, error) {
	t, err := s.task(ctx, c.TaskID)
	if err != nil {
		return 0, err
	}
	fields, err := s.fieldChange(ctx, t, &c)
	if err != nil {
		return 0, err
	}
	if c.Status != "" {
		if err := checkTransition(t.ID, t.Status, c.Status, byUpdate); err != nil {
			return 0, err
		}
		summary := t.ExecutionSummary
		if c.ExecutionSummary != nil {
			summary = *c.ExecutionSummary
		}
		if events.TaskStatusMeaning(t.Status) == events.TaskInProgress && c.Status == events.TaskReview && !meaningfulSummary(summary) {
			return 0, fmt.Errorf("%w: task %s goes to review with an execution summary of what was done (--summary)", ErrSummary, t.ID)
		}
	}
	var seq uint64
	if fields != nil {
		if seq, err = s.appendTask(ctx, t.ID, "", events.TaskUpdated, fields); err != nil {
			return 0, err
		}
	}
	if c.Status != "" && c.Status != t.Status {
		return s.setStatus(ctx, t, "", c.Status, c.By, c.Reason, "")
	}
	if fields == nil && c.Status == "" {
		return 0, fmt.Errorf("%w: nothing to change", ErrInvalidTask)
	}
	return seq, nil
}

// fieldChange validates the field changes of c and returns them as an
// event, or nil when c changes no field.
func (s *Service) fieldChange(ctx context.Context, t *projector.TaskView, c *TaskChange) (*events.TaskUpdatedData, error) {
	d := &events.TaskUpdatedData{Title: c.Title, Description: c.Description, AcceptanceCriteria: c.AcceptanceCriteria,
		Dependencies: c.Dependencies, PlanText: c.PlanText, Priority: c.Priority, Type: c.Type, ExecutionSummary: c.ExecutionSummary, By: c.By,
		Signer: events.RequestSigner(ctx)}
	if c.Title != nil {
		title := strings.TrimSpace(*c.Title)
		if title == "" || len(title) > maxTitle {
			return nil, fmt.Errorf("%w: a title is 1 to %d bytes", ErrInvalidTask, maxTitle)
		}
		d.Title = &title
	}
	if c.Priority != nil {
		if err := checkPriority(*c.Priority); err != nil {
			return nil, err
		}
	}
	if c.Type != nil {
		if err := checkType(*c.Type); err != nil {
			return nil, err
		}
	}
	if c.ContextFiles != nil {
		files, err := contextFiles(*c.ContextFiles)
		if err != nil {
			return nil, err
		}
		d.ContextFiles = &files
	}
	if c.AcceptanceCriteria != nil {
		ac := nonEmpty(*c.AcceptanceCriteria)
		d.AcceptanceCriteria = &ac
	}
	if c.Dependencies != nil {
		if err := s.checkDependencies(ctx, t.ID, *c.Dependencies); err != nil {
			return nil, err
		}
	}
	if c.ExecutionSummary != nil && !meaningfulSummary(*c.ExecutionSummary) {
		return nil, fmt.Errorf("%w: an execution summary says what was done, not %q", ErrSummary, *c.ExecutionSummary)
	}
	if *d == (events.TaskUpdatedData{By: c.By, Signer: d.Signer}) {
		return nil, nil
	}
	return d, nil
}

// Start takes a waiting task (proposed, backlog, someday, blocked) into
// in-progress.
func (s *Service) Start(ctx context.Context, id, by, reason string) (uint64, error) {
	t, err := s.task(ctx, id)
	if err != nil {
		return 0, err
	}
	if err := checkTransition(t.ID, t.Status, events.TaskInProgress, byStart); err != nil {
		return 0, err
	}
	return s.setStatus(ctx, t, "", events.TaskInProgress, by, reason, "")
}

// Archive puts a task away; archiving an archived task changes nothing.
func (s *Service) Archive(ctx context.Context, id, by, reason string) (uint64, error) {
	t, err := s.task(ctx, id)
	if err != nil {
		return 0, err
	}
	if err := checkTransition(t.ID, t.Status, events.TaskArchived, byArchive); err != nil {
		return 0, err
	}
	if t.Status == events.TaskArchived {
		return 0, nil
	}
	return s.setStatus(ctx, t, "", events.TaskArchived, by, reason, "")
}

// setStatus records a task's move to status, from the status its record
// has; id is the event's id ("" for a new one). A change a signed request
// asked for records its signer.
func (s *Service) setStatus(ctx context.Context, t *projector.TaskView, id, status, by, reason, runID string) (uint64, error) {
	return s.appendTask(ctx, t.ID, id, events.TaskStatusChanged, events.TaskStatusChangedData{
		Status: status, From: t.Status, By: by, Reason: reason, RunID: runID, Signer: events.RequestSigner(ctx)})
}

// recordSummary records an execution summary of a task.
func (s *Service) recordSummary(ctx context.Context, taskID, summary, by, runID string) error {
	if !meaningfulSummary(summary) {
		return fmt.Errorf("%w: an execution summary says what was done, not %q", ErrSummary, summary)
	}
	_, err := s.appendTask(ctx, taskID, "", events.TaskUpdated, events.TaskUpdatedData{ExecutionSummary: &summary, By: by, RunID: runID})
	return err
}
