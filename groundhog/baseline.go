package groundhog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
)

// sourceBaselineRed is the source of the report that closes an attempt
// held as baseline_red: not the agent's failure, so it spends nothing.
const sourceBaselineRed = "baseline_red"

// errBaselineRed is how an attempt tells the loop that its checkpoint is
// held as baseline_red.
var errBaselineRed = errors.New("baseline_red")

// A criterion that fails an attempt is the agent's failure only if the
// base it started from passes it. The base is the commit the attempt's
// snapshot was taken at; a criterion is run there once per base commit
// (groundhog.baseline records the results, which later attempts, runs and
// engines read instead of running it again). A failure the base has too
// holds the checkpoint as baseline_red: the attempt is rewound and closed
// without spending the budget, and the run ends held until the base
// changes, unless the criterion says the checkpoint is there to fix it
// (fixes_baseline: true).
//
// Only command criteria are run on the base, and only those that name no
// path the base lacks: a command that runs a file the checkpoint is to
// make (sh test.sh, go test ./newpkg/) tests the checkpoint's own work,
// which no base has. file_exists and file_contains are about the
// checkpoint's own product too; semantic and paths_untouched are never.

// criterionKey identifies a criterion in the baseline cache: a digest of
// all its fields.
func criterionKey(c *assets.Criterion) string {
	raw, _ := json.Marshal(c)
	sum := sha256.Sum256(raw)
	return "sha256-" + hex.EncodeToString(sum[:])
}

// pathToken is a word of a command that looks like a path: it has a
// slash or a file extension.
var pathToken = regexp.MustCompile(`^[A-Za-z0-9_.@+-]*(/[A-Za-z0-9_.@+-]*)*$`)

// namedPaths returns the words of a command that look like paths, cleaned
// ("./x/" is "x", "./..." is "."): a shell's quoting and punctuation are
// word breaks, an option or an assignment is no path.
func namedPaths(command string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(command, func(r rune) bool { return strings.ContainsRune(" \t\n\"'`$();|&<>=,{}[]*?!", r) }) {
		if strings.HasPrefix(w, "-") || !pathToken.MatchString(w) || strings.Contains(w, "://") {
			continue
		}
		if !strings.Contains(w, "/") && filepath.Ext(w) == "" {
			continue
		}
		w = strings.TrimSuffix(strings.TrimSuffix(w, "..."), "/")
		p := filepath.Clean(w)
		if p == "" || filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			continue
		}
		out = append(out, p)
	}
	return out
}

// baselineCheckable reports whether a failed criterion is run on the base.
func baselineCheckable(c *assets.Criterion) bool {
	return c.Kind == assets.CriterionCommand && !c.FixesBaseline
}

// criteriaOf returns a checkpoint's criteria in the verifier's order:
// success criteria, then anti-criteria.
func criteriaOf(cp *assets.Checkpoint) []assets.Criterion {
	return append(append([]assets.Criterion(nil), cp.SuccessCriteria...), cp.AntiCriteria...)
}

// baseline runs on the attempt's base the criteria its verification
// failed that may be the base's failure (from the cache when a run
// already did on this base), records groundhog.baseline, and returns the
// indexes of those the base fails too. Nothing is recorded when no
// failed criterion is for the base.
func (r *runner) baseline(ctx context.Context, a *attempt, cp *assets.Checkpoint, results []events.CriterionResult) ([]int, error) {
	criteria := criteriaOf(cp)
	base := a.snap.SnapshotRef
	var idx []int
	for i, res := range results {
		if res.Outcome == OutcomeFail && baselineCheckable(&criteria[i]) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	var tree *gitops.Repo
	var cleanup func()
	defer func() {
		if cleanup != nil {
			cleanup()
		}
	}()
	data := events.GroundhogBaselineData{Attempt: a.id, BaseSHA: base}
	for _, i := range idx {
		c := &criteria[i]
		key := criterionKey(c)
		res, ok := r.st.baseline[base+"|"+key]
		if !ok {
			if tree == nil {
				var err error
				if tree, cleanup, err = r.baseTree(ctx, base); err != nil {
					return nil, err
				}
			}
			if lacks, p := lacksPath(tree.Dir, c.Command); lacks {
				// The command runs something the checkpoint makes: its
				// failure is the attempt's.
				res = events.CriterionResult{Outcome: OutcomeSkipped, Detail: "names " + p + ", which the base lacks: the checkpoint's own work"}
			} else {
				v := &verifier{repo: tree, env: r.cfg.Env}
				if r.cfg.CLI != nil {
					v.sandbox = r.cfg.CLI.Sandbox
				}
				res = v.criterion(ctx, c, i >= len(cp.SuccessCriteria))
			}
			res.Index, res.Kind, res.Anti = i, c.Kind, i >= len(cp.SuccessCriteria)
		}
		data.Checks = append(data.Checks, events.BaselineCheck{Key: key, Result: res})
		if res.Outcome == OutcomeFail {
			data.Red = append(data.Red, i)
		}
	}
	err := record(ctx, r, events.GroundhogBaseline, events.DecisionID(events.GroundhogBaseline, r.cfg.TaskID, strconv.Itoa(a.id.Day)), data)
	return data.Red, err
}

// lacksPath reports whether a command names a path that does not exist in
// the tree, and which.
func lacksPath(tree, command string) (bool, string) {
	for _, p := range namedPaths(command) {
		if _, err := os.Lstat(filepath.Join(tree, p)); err != nil {
			return true, p
		}
	}
	return false, ""
}

// baseTree checks the base commit out in a throwaway linked work tree and
// returns it and how to remove it.
func (r *runner) baseTree(ctx context.Context, base string) (*gitops.Repo, func(), error) {
	tmp, err := os.MkdirTemp("", "orbit-baseline-")
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(tmp, "base")
	wt, err := r.repo.AddDetached(ctx, path, base)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("checking the base %s out: %w", base, err)
	}
	return wt, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := r.repo.RemoveWorktree(ctx, path, true); err != nil {
			r.log.Warn("removing the base work tree", "path", path, "err", err)
		}
		_ = os.RemoveAll(tmp)
	}, nil
}

// heldOnBaseline returns the result of a run that holds a checkpoint
// before its next attempt: a criterion of it (still in the plan as it
// was) failed on the commit the next attempt would start from, as
// recorded. Nothing is run.
func (r *runner) heldOnBaseline(ctx context.Context, cp *assets.Checkpoint) (*Result, error) {
	if len(r.st.baseline) == 0 {
		return nil, nil
	}
	head, err := r.repo.HeadSHA(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range criteriaOf(cp) {
		if !baselineCheckable(&c) {
			continue
		}
		if res, ok := r.st.baseline[head+"|"+criterionKey(&c)]; ok && res.Outcome == OutcomeFail {
			return baselineResult(r, cp, head, []events.CriterionResult{res}), nil
		}
	}
	return nil, nil
}

// baselineResult is the result of a run held as baseline_red.
func baselineResult(r *runner, cp *assets.Checkpoint, base string, red []events.CriterionResult) *Result {
	var what []string
	for _, res := range red {
		what = append(what, res.Detail)
	}
	return &Result{State: events.GroundhogBaselineRed, Committed: r.committedCount(),
		Message: fmt.Sprintf("checkpoint %s holds: its base %s fails it too (%s); fix the base, or mark the criterion fixes_baseline: true",
			cp.ID, shortSHA(base), strings.Join(what, "; "))}
}

// baselineReport is the report that closes an attempt held as
// baseline_red.
func baselineReport(results []events.CriterionResult, red []int, base string) events.FailureReport {
	rep := verifierReport(results)
	rep.Source = sourceBaselineRed
	var which []string
	for _, i := range red {
		which = append(which, results[i].Detail)
	}
	rep.WhatHappened = fmt.Sprintf("the checks failed, and the base %s fails them too: %s; the checkpoint holds (baseline_red), no attempt spent",
		shortSHA(base), strings.Join(which, "; "))
	return rep
}
