package groundhog

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/internal/sandbox"
)

const (
	// outputCap bounds the output of a command criterion kept in the log.
	outputCap = 4 << 10
	// verifierParallel bounds criteria checked at once.
	verifierParallel = 4
	// readCap bounds the file a file_contains criterion reads.
	readCap = 16 << 20
	// defaultCriterionTimeout bounds a command criterion without its own.
	defaultCriterionTimeout = 600 * time.Second
)

// Outcomes of a criterion.
const (
	OutcomePass    = "pass"
	OutcomeFail    = "fail"
	OutcomeSkipped = "skipped"
)

// verifier checks a checkpoint's criteria in a workspace: the runtime's
// own judgement of a claimed success, never the agent's.
type verifier struct {
	repo *gitops.Repo
	snap *gitops.Snapshot
	env  []string
	// sandbox, when set, is the policy command criteria run under: they
	// run the workspace's code, which the agent wrote, so they see what
	// the agent sees (CLIBackend.Sandbox).
	sandbox *sandbox.Policy
}

// check runs every criterion (success criteria, then anti-criteria) in
// parallel, at most verifierParallel at once, and returns their results in
// that order and whether the checkpoint passed: no success criterion
// failed to hold and no anti-criterion held. semantic criteria are
// recorded as skipped, for the agent's judgement.
func (v *verifier) check(ctx context.Context, cp *assets.Checkpoint) ([]events.CriterionResult, bool) {
	type job struct {
		c    assets.Criterion
		anti bool
	}
	var jobs []job
	for _, c := range cp.SuccessCriteria {
		jobs = append(jobs, job{c, false})
	}
	for _, c := range cp.AntiCriteria {
		jobs = append(jobs, job{c, true})
	}
	results := make([]events.CriterionResult, len(jobs))
	slots := make(chan struct{}, verifierParallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			r := v.criterion(ctx, &j.c, j.anti)
			r.Index, r.Kind, r.Anti = i, j.c.Kind, j.anti
			results[i] = r
		}()
	}
	wg.Wait()
	passed := true
	for _, r := range results {
		if r.Outcome == OutcomeFail {
			passed = false
		}
	}
	return results, passed
}

// criterion checks one criterion. For an anti-criterion the condition is
// evaluated the same way and the outcome inverted: it passes when the
// condition does not hold. paths_untouched is the exception: it is
// phrased as what must hold (the paths are untouched) and fails when a
// matching path changed.
func (v *verifier) criterion(ctx context.Context, c *assets.Criterion, anti bool) events.CriterionResult {
	var r events.CriterionResult
	var holds bool
	switch c.Kind {
	case "semantic":
		return events.CriterionResult{Outcome: OutcomeSkipped, Detail: "left to the agent's judgement: " + c.Statement}
	case "paths_untouched":
		changed, err := v.repo.ChangedPaths(ctx, v.snap)
		if err != nil {
			return events.CriterionResult{Outcome: OutcomeFail, Detail: "listing changed paths: " + err.Error()}
		}
		var touched []string
		for _, p := range changed {
			for _, g := range c.Paths {
				if ok, _ := doublestar.Match(g, p); ok {
					touched = append(touched, p)
					break
				}
			}
		}
		if len(touched) > 0 {
			return events.CriterionResult{Outcome: OutcomeFail, Detail: fmt.Sprintf("changed %s, which must stay untouched (%s)", strings.Join(touched, ", "), strings.Join(c.Paths, ", "))}
		}
		return events.CriterionResult{Outcome: OutcomePass, Detail: "no path matching " + strings.Join(c.Paths, ", ") + " changed"}
	case "command":
		r, holds = v.command(ctx, c)
	case "file_exists":
		_, err := os.Lstat(filepath.Join(v.repo.Dir, filepath.FromSlash(c.Path)))
		holds = err == nil
		r.Detail = c.Path + map[bool]string{true: " exists", false: " does not exist"}[holds]
	case "file_contains":
		holds, r.Detail = v.contains(c)
	default:
		return events.CriterionResult{Outcome: OutcomeFail, Detail: "unknown criterion kind " + c.Kind}
	}
	if holds != anti {
		r.Outcome = OutcomePass
	} else {
		r.Outcome = OutcomeFail
	}
	return r
}

// command runs a command criterion with sh -c in the workspace and reports
// whether it exited with the expected code.
func (v *verifier) command(ctx context.Context, c *assets.Criterion) (events.CriterionResult, bool) {
	want := 0
	if c.ExpectExit != nil {
		want = *c.ExpectExit
	}
	timeout := defaultCriterionTimeout
	if c.TimeoutSeconds > 0 {
		timeout = time.Duration(c.TimeoutSeconds) * time.Second
	}
	out := tailBuffer{Tail: proc.Tail{Max: outputCap}}
	cmd := exec.Command("sh", "-c", c.Command)
	mode := ""
	if v.sandbox != nil {
		var err error
		if mode, err = sandbox.Wrap(cmd, v.sandbox.ForWorkspace(v.repo.Dir)); err != nil {
			return events.CriterionResult{Detail: "starting sh: " + err.Error()}, false
		}
	}
	cmd.Dir = v.repo.Dir
	cmd.Env = v.env
	cmd.Stdout, cmd.Stderr = &out, &out
	g, err := proc.Start(ctx, cmd)
	if err != nil {
		return events.CriterionResult{Detail: "starting sh: " + err.Error(), Sandbox: mode}, false
	}
	res := g.Wait(ctx, timeout, 3*time.Second)
	code := res.ExitCode
	r := events.CriterionResult{ExitCode: &code, Output: out.String(), Sandbox: mode}
	switch {
	case res.TimedOut:
		r.Detail = fmt.Sprintf("`%s` timed out after %s", c.Command, timeout)
		return r, false
	case res.Signal != "":
		r.Detail = fmt.Sprintf("`%s` was killed by %s", c.Command, res.Signal)
		return r, false
	}
	r.Detail = fmt.Sprintf("`%s` exited %d (expected %d)", c.Command, code, want)
	return r, code == want
}

// contains reports whether a file matches a file_contains pattern.
func (v *verifier) contains(c *assets.Criterion) (bool, string) {
	re, err := c.Compiled()
	if err != nil {
		return false, "pattern: " + err.Error()
	}
	f, err := os.Open(filepath.Join(v.repo.Dir, filepath.FromSlash(c.Path)))
	if err != nil {
		return false, c.Path + " cannot be read: " + err.Error()
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, readCap+1))
	if err != nil {
		return false, c.Path + " cannot be read: " + err.Error()
	}
	if len(data) > readCap {
		return false, fmt.Sprintf("%s is larger than %d bytes", c.Path, readCap)
	}
	if re.Match(data) {
		return true, fmt.Sprintf("%s matches /%s/", c.Path, c.Pattern)
	}
	return false, fmt.Sprintf("%s does not match /%s/", c.Path, c.Pattern)
}

// tailBuffer is the end of a command's output, which says what it left
// out: the end of a failing command's output is where its error is.
type tailBuffer struct{ proc.Tail }

func (t *tailBuffer) String() string {
	kept := t.Bytes()
	if t.Size() > int64(len(kept)) {
		return fmt.Sprintf("[… %d bytes before]\n", t.Size()-int64(len(kept))) + string(kept)
	}
	return string(kept)
}
