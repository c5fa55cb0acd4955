package shipping

import (
	"context"
	"errors"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
)

// The upstream system's task_pr_pipeline splits sync_base in two: pr_prepare
// records the branch, the base and origin's branch before anything is
// rewritten, and git_rebase rebases onto exactly that base. Orbit's own
// pipeline does both in sync_base; these two let the upstream job run
// unmodified.

// prPrepare checks that the tasks can be delivered (each has a meaningful
// execution summary) and records the checkpoint the rebase and the push
// work from: the branch and its head, the base freshly fetched, where
// origin has the branch (the push's exact lease), and how far apart the
// branch and the base are. It changes nothing.
func (s *Service) prPrepare(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "pr_prepare"
	var in prInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.WorkspacePath == "" {
		return nil, activity.Failure(events.KindValidation, false, "%s: input.workspace_path is required", action)
	}
	base, sync, err := in.parse(action)
	if err != nil {
		return nil, err
	}
	if _, err := s.prTasks(ctx, action, &in, in.run(call)); err != nil {
		return nil, err
	}
	_, main, head, err := s.headOf(ctx, action, in.WorkspacePath, "")
	if err != nil {
		return nil, err
	}
	defer s.lockRepo(main.Dir)()
	headSHA, err := main.BranchSHA(ctx, head)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	baseSHA, baseRef, err := s.currentBase(ctx, action, main, base, sync)
	if err != nil {
		return nil, err
	}
	remote, err := s.remoteHead(ctx, main, head)
	if err != nil {
		return nil, err
	}
	behind, err := main.CountBetween(ctx, headSHA, baseSHA)
	if err != nil {
		return nil, err
	}
	ahead, err := main.CountBetween(ctx, baseSHA, headSHA)
	if err != nil {
		return nil, err
	}
	return map[string]any{"phase": "prepare", "decision": "prepared", "head": head, "head_sha": headSHA, "base": base,
		"base_ref": baseRef, "base_sha": baseSHA, "remote_sha": remote, "commits_behind": behind, "commits_ahead": ahead,
		"sync_required": behind > 0}, nil
}

// rebaseInput is git_rebase's input.
type rebaseInput struct {
	WorkspacePath string `json:"workspace_path"`
	Head          string `json:"head"`
	HeadSHA       string `json:"head_sha"`
	Base          string `json:"base"`
	BaseRef       string `json:"base_ref"`
	BaseSHA       string `json:"base_sha"`
	RemoteSHA     any    `json:"remote_sha"`
}

// gitRebase rebases the prepared branch onto exactly the prepared base
// commit. A branch that contains it already is reported as it is: rewritten
// when its head is no longer the prepared one (a rebase that happened
// before a crash), up to date otherwise. A conflict stops it, naming the
// files, with the branch as it was.
func (s *Service) gitRebase(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "git_rebase"
	var in rebaseInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.WorkspacePath == "" || in.BaseSHA == "" || in.HeadSHA == "" {
		return nil, activity.Failure(events.KindValidation, false, "%s: input.workspace_path, head_sha and base_sha are required", action)
	}
	wt, main, head, err := s.headOf(ctx, action, in.WorkspacePath, in.Head)
	if err != nil {
		return nil, err
	}
	defer s.lockRepo(main.Dir)()
	after, err := wt.Rebase(ctx, in.BaseSHA)
	if err != nil {
		if errors.Is(err, gitops.ErrConflict) || errors.Is(err, gitops.ErrDirty) {
			return nil, failf("%s: %v", action, err)
		}
		return nil, err
	}
	decision := "rebased"
	if after == in.HeadSHA {
		decision = "up_to_date"
	}
	return map[string]any{"phase": "rebase", "decision": decision, "head": head, "head_sha": after, "head_sha_before": in.HeadSHA,
		"base": in.Base, "base_ref": in.BaseRef, "base_sha": in.BaseSHA, "remote_sha_before": textOf(in.RemoteSHA),
		"rewritten": after != in.HeadSHA}, nil
}
