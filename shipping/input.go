package shipping

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
)

// decodeInput decodes an action's input into v. Fields the action does
// not read are ignored: the upstream system's jobs pass more than Orbit's
// actions need (base_ref, landing_branch, scope), and they must still run.
func decodeInput(action string, input any, v any) error {
	raw, err := json.Marshal(input)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return activity.Failure(events.KindValidation, false, "%s: input: %v", action, err)
	}
	return nil
}

// taskIDsInput are the task ids an action is given: task_ids, or one
// task_id.
type taskIDsInput struct {
	TaskID  string   `json:"task_id"`
	TaskIDs []string `json:"task_ids"`
}

// ids returns the task ids, each once, in order; none is a validation
// failure of action.
func (in taskIDsInput) ids(action string) ([]string, error) {
	var out []string
	for _, id := range append(in.TaskIDs, in.TaskID) {
		id = strings.TrimSpace(id)
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, activity.Failure(events.KindValidation, false, "%s: input names no task (task_ids or task_id)", action)
	}
	return out, nil
}

// baseSync is how a run starts from its base branch.
type baseSync string

const (
	// syncRemote fetches origin/<base> and starts from the remote-tracking
	// ref: published history, whatever the local branch holds.
	syncRemote baseSync = "remote"
	// syncLocal starts from the local base branch, fetching nothing.
	syncLocal baseSync = "local"
)

// parseSync reads input.base_sync (default remote).
func parseSync(action, s string) (baseSync, error) {
	switch baseSync(s) {
	case "", syncRemote:
		return syncRemote, nil
	case syncLocal:
		return syncLocal, nil
	}
	return "", activity.Failure(events.KindValidation, false, "%s: base_sync is remote or local, not %q", action, s)
}

// baseInput is the base an action works against, in the upstream
// activities' fields.
type baseInput struct {
	Base       string `json:"base"`
	BaseBranch string `json:"base_branch"`
	BaseSync   string `json:"base_sync"`
}

// parse reads the base branch (see baseBranch) and how to sync with it
// (see parseSync).
func (in baseInput) parse(action string) (string, baseSync, error) {
	base, err := baseBranch(action, in.Base, in.BaseBranch)
	if err != nil {
		return "", "", err
	}
	sync, err := parseSync(action, in.BaseSync)
	return base, sync, err
}

// baseBranch reads the base branch: input.base, else input.base_branch,
// else main; origin/main is main.
func baseBranch(action string, base, baseBranch string) (string, error) {
	b := strings.TrimSpace(base)
	if b == "" {
		b = strings.TrimSpace(baseBranch)
	}
	if b == "" {
		b = "main"
	}
	b = strings.TrimPrefix(b, "origin/")
	if b == "" || strings.HasPrefix(b, "-") {
		return "", activity.Failure(events.KindValidation, false, "%s: %q is not a base branch", action, base)
	}
	return b, nil
}

// failf is a failure of an action that another attempt would not mend.
func failf(format string, args ...any) error {
	return activity.Failure(events.KindActivity, false, format, args...)
}

// retryf is a failure of an action that another attempt may mend.
func retryf(format string, args ...any) error {
	return activity.Failure(events.KindActivity, true, format, args...)
}
