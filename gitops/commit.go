package gitops

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Trailer is a "Key: Value" line at the end of a commit message.
type Trailer struct{ Key, Value string }

// subjectMax is the longest commit subject, in characters.
const subjectMax = 72

var trailerKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// CommitSuccess lands a successful attempt as one squash commit on the task
// branch and deletes the scratch branch. It returns the new commit, or
// (s.SnapshotRef, true) when the attempt changed nothing: then no commit is
// made.
//
// Steps: the scratch state is captured as by Rewind (files untracked at
// the snapshot, or ignored by its rules, stay out; a capture commit is
// always made, empty if need be: it marks the attempt as past the
// capture), the task branch is checked out and verified to still point at
// s.SnapshotRef, the scratch branch is merged with git merge --squash, and
// the result is committed with the user's hooks and configuration (but
// never git's guessed identity: see FallbackName). The message is the
// summary, its first line as the subject (cut at a word boundary to 72
// characters, the whole summary then going to the body), a blank line and
// the trailers. The scratch branch is then deleted with git branch -D.
// When the attempt made no commit of its own (the capture's parent is the
// snapshot) and the task branch is still at the snapshot, the switch and
// the merge are one git symbolic-ref that moves HEAD to the task branch:
// the index already holds what the merge would stage (see squashInPlace).
//
// Errors, and the state they leave:
//   - ErrBlankSummary, ErrInvalidArgument (a trailer key other than letters,
//     digits and "-", or a value that is empty or spans lines): before
//     anything is touched.
//   - ErrUnexpectedBranch: HEAD is not on the scratch branch, and this is
//     not a resumption (below); ErrBranchNotFound: the scratch branch is
//     gone. Nothing is touched.
//   - ErrTaskBranchMoved: the repository is on the task branch, which is
//     not reset; the work is on the scratch branch.
//   - ErrScratchDiverged, or a failed commit (a hook refused it): the task
//     branch is reset to s.SnapshotRef, the scratch branch kept.
//   - a failure to delete the scratch branch at the end: the result (the
//     commit, or s.SnapshotRef and true) is returned with the error;
//     calling again finishes.
//
// IMPORTANT: it can be called again after a crash at any point. On the
// task branch, with the scratch branch's head a capture commit of s, it
// resumes after the switch: it resets (as Rewind does, refusing with
// ErrDirty to discard anything that is not a copy of the snapshot or the
// scratch head) and merges again; and when the task branch already holds
// the squash commit (its parent is the snapshot, its tree the scratch
// head's) it only deletes the scratch branch and returns that commit. (A
// squash commit whose content a hook changed is not recognised after a
// crash: ErrTaskBranchMoved, the scratch branch kept.)
func (r *Repo) CommitSuccess(ctx context.Context, s *Snapshot, summary string, trailers []Trailer) (sha string, noChange bool, err error) {
	msg, err := commitMessage(summary, trailers)
	if err != nil {
		return "", false, err
	}
	if err := s.validate(); err != nil {
		return "", false, err
	}
	st, err := r.readStatus(ctx, true)
	if err != nil {
		return "", false, err
	}
	onScratch, scratchHead, err := r.locate(ctx, s, st)
	if err != nil {
		return "", false, err
	}
	var ident []string
	if onScratch {
		c, err := r.capture(ctx, s, st, "success", "", true, &ident)
		if err != nil {
			return "", false, err
		}
		scratchHead = c.head
		if err := r.checkpoint("captured"); err != nil {
			return "", false, err
		}
		scratch, task := c.refs[s.ScratchBranch], c.refs[s.TaskBranch]
		if task.sha == s.SnapshotRef && scratch.sha == scratchHead && len(scratch.parents) > 0 && scratch.parents[0] == s.SnapshotRef {
			return r.squashInPlace(ctx, s, scratch, task, msg, &ident)
		}
		if err := r.leaveScratch(ctx, s); err != nil {
			return "", false, err
		}
		if err := r.checkpoint("switched"); err != nil {
			return "", false, err
		}
	} else {
		// On the task branch: only a resumption after the switch, which the
		// capture commit proves.
		ok, err := r.isCaptureOf(ctx, scratchHead, s)
		if err != nil {
			return "", false, err
		}
		if !ok {
			return "", false, fmt.Errorf("%w: expected HEAD on %s, it is on %s, and %s holds no capture of this attempt",
				ErrUnexpectedBranch, s.ScratchBranch, s.TaskBranch, s.ScratchBranch)
		}
		// A crash after the commit: finish.
		taskHead, err := r.BranchSHA(ctx, s.TaskBranch)
		if err != nil {
			return "", false, err
		}
		if taskHead != s.SnapshotRef {
			if landed, err := r.landed(ctx, s, taskHead, scratchHead); err != nil {
				return "", false, err
			} else if landed {
				return taskHead, false, r.deleteScratch(ctx, s)
			}
		}
	}

	if err := r.restore(ctx, s, scratchHead); err != nil {
		return "", false, err
	}
	if ok, err := r.IsAncestor(ctx, s.SnapshotRef, scratchHead); err != nil {
		return "", false, err
	} else if !ok {
		return "", false, fmt.Errorf("%w: %s is at %s, which does not descend from %s; %s was reset to the snapshot",
			ErrScratchDiverged, s.ScratchBranch, scratchHead, s.SnapshotRef, s.TaskBranch)
	}

	// --ff overrides merge.ff=false, which git refuses with --squash; the
	// scratch branch's capture commits are not signed.
	if _, err := r.run(ctx, call{
		args:            []string{"merge", "--squash", "--ff", "--no-verify-signatures", "--no-log", "--no-stat", "--quiet", scratchHead},
		uninterruptible: true,
	}); err != nil {
		return "", false, r.undoSquash(ctx, s, fmt.Errorf("squashing %s onto %s: %w", s.ScratchBranch, s.TaskBranch, err))
	}
	if err := r.checkpoint("merged"); err != nil {
		return "", false, err
	}

	staged, err := r.hasStaged(ctx)
	if err != nil {
		return "", false, r.undoSquash(ctx, s, err)
	}
	if !staged {
		// The reset also removes the SQUASH_MSG the merge may have left.
		if err := r.resetHard(ctx, s); err != nil {
			return "", false, err
		}
		return s.SnapshotRef, true, r.deleteScratch(ctx, s)
	}

	return r.commitSquash(ctx, s, scratchHead, msg, &ident)
}

// squashInPlace lands a capture commit made on the snapshot (its first
// parent), with the task branch still at the snapshot. The index and the
// work tree hold the capture commit's tree, which is what
// git merge --squash of the scratch branch would stage on the task branch:
// HEAD is moved to the task branch without touching either, where the
// general path would switch (rewriting the work tree back to the
// snapshot), reset and merge (rewriting it forward again). The state it
// leaves at each step is one the general path resumes from.
func (r *Repo) squashInPlace(ctx context.Context, s *Snapshot, scratch, task branchRef, msg string, ident *[]string) (string, bool, error) {
	if _, err := r.run(ctx, call{
		args: []string{"symbolic-ref", "-m", "checkout: moving from " + s.ScratchBranch + " to " + s.TaskBranch,
			"HEAD", "refs/heads/" + s.TaskBranch},
		uninterruptible: true,
	}); err != nil {
		return "", false, fmt.Errorf("switching to %s (the attempt's work is on %s): %w", s.TaskBranch, s.ScratchBranch, err)
	}
	for _, point := range []string{"switched", "reset", "merged"} {
		if err := r.checkpoint(point); err != nil {
			return "", false, err
		}
	}
	if scratch.tree == task.tree {
		return s.SnapshotRef, true, r.deleteScratch(ctx, s)
	}
	return r.commitSquash(ctx, s, scratch.sha, msg, ident)
}

// commitSquash commits the staged squash of scratchHead on the task branch,
// checked out at the snapshot, with the user's hooks, and deletes the
// scratch branch.
func (r *Repo) commitSquash(ctx context.Context, s *Snapshot, scratchHead, msg string, ident *[]string) (string, bool, error) {
	env, err := r.identity(ctx, ident)
	if err != nil {
		return "", false, r.undoSquash(ctx, s, err)
	}
	_, commitErr := r.run(ctx, call{
		args:  []string{"commit", "--quiet", "--cleanup=whitespace", "--file=-"},
		stdin: []byte(msg),
		env:   env,
		hooks: true,
	})
	// The commit may have landed even if git did not exit cleanly (killed
	// after updating the branch): look at the branch, not the exit code.
	// From here on ctx is no longer honoured: these steps are short, and
	// stopping between them would leave the work half-landed.
	ctx = context.WithoutCancel(ctx)
	refs, err := r.readBranches(ctx, s.TaskBranch)
	if err != nil {
		return "", false, err
	}
	task, ok := refs[s.TaskBranch]
	if !ok {
		return "", false, fmt.Errorf("%w: %s", ErrBranchNotFound, s.TaskBranch)
	}
	taskHead := task.sha
	if taskHead == s.SnapshotRef {
		if commitErr == nil {
			commitErr = fmt.Errorf("git commit succeeded but %s did not move", s.TaskBranch)
		}
		return "", false, r.undoSquash(ctx, s, fmt.Errorf("committing on %s (the attempt's work is on %s): %w",
			s.TaskBranch, s.ScratchBranch, commitErr))
	}
	// git commit succeeded and moved the branch from the snapshot: the new
	// commit is ours, even if a hook changed what it holds (a formatter
	// that re-stages). Otherwise only the tree can tell.
	landed := false
	if commitErr == nil {
		landed = len(task.parents) > 0 && task.parents[0] == s.SnapshotRef
	} else if landed, err = r.landed(ctx, s, taskHead, scratchHead); err != nil {
		return "", false, err
	}
	if !landed {
		return "", false, fmt.Errorf("%w: %s moved to %s while committing; the attempt's work is on %s at %s",
			ErrTaskBranchMoved, s.TaskBranch, taskHead, s.ScratchBranch, scratchHead)
	}
	if err := r.checkpoint("committed"); err != nil {
		return taskHead, false, err
	}
	return taskHead, false, r.deleteScratch(ctx, s)
}

// landed reports whether commit is the squash of the scratch head onto the
// snapshot: its first parent is the snapshot and its tree the scratch
// head's.
func (r *Repo) landed(ctx context.Context, s *Snapshot, commit, scratchHead string) (bool, error) {
	parent, err := r.FirstParent(ctx, commit)
	if err != nil || parent != s.SnapshotRef {
		return false, err
	}
	out, err := r.run(ctx, call{
		args:     []string{"rev-parse", commit + "^{tree}", scratchHead + "^{tree}"},
		readOnly: true,
	})
	if err != nil {
		return false, fmt.Errorf("comparing %s with %s: %w", commit, scratchHead, err)
	}
	trees := lines(out)
	return len(trees) == 2 && trees[0] == trees[1], nil
}

// undoSquash resets the task branch, still at the snapshot, after a failed
// merge or commit, and returns cause. The reset runs even if ctx is done:
// it must not be left half-way.
func (r *Repo) undoSquash(ctx context.Context, s *Snapshot, cause error) error {
	if err := r.resetHard(context.WithoutCancel(ctx), s); err != nil {
		return fmt.Errorf("%w; then %w", cause, err)
	}
	return cause
}

// deleteScratch deletes the scratch branch. -D: it was merged by squash,
// which -d does not recognise.
func (r *Repo) deleteScratch(ctx context.Context, s *Snapshot) error {
	if _, err := r.run(ctx, call{
		args:            []string{"branch", "--quiet", "-D", s.ScratchBranch},
		uninterruptible: true,
	}); err != nil {
		return fmt.Errorf("deleting %s: %w", s.ScratchBranch, err)
	}
	return nil
}

// commitMessage builds the squash commit's message.
func commitMessage(summary string, trailers []Trailer) (string, error) {
	text := strings.TrimSpace(strings.ReplaceAll(summary, "\r\n", "\n"))
	if text == "" {
		return "", ErrBlankSummary
	}
	if strings.ContainsRune(text, 0) {
		return "", fmt.Errorf("%w: the summary contains a NUL byte", ErrInvalidArgument)
	}
	first, rest, _ := strings.Cut(text, "\n")
	first = strings.TrimSpace(first)
	subject, body := first, strings.TrimSpace(rest)
	if utf8.RuneCountInString(first) > subjectMax {
		subject, body = cutAtWord(first, subjectMax), text
	}

	var b strings.Builder
	b.WriteString(subject + "\n")
	if body != "" {
		b.WriteString("\n" + body + "\n")
	}
	for i, t := range trailers {
		key, value := strings.TrimSpace(t.Key), strings.TrimSpace(t.Value)
		if !trailerKey.MatchString(key) {
			return "", fmt.Errorf("%w: trailer key %q: letters, digits and - only", ErrInvalidArgument, t.Key)
		}
		if value == "" || strings.ContainsAny(value, "\n\r\x00") {
			return "", fmt.Errorf("%w: trailer %s: value %q must be one non-empty line", ErrInvalidArgument, key, t.Value)
		}
		if i == 0 {
			b.WriteString("\n")
		}
		b.WriteString(key + ": " + value + "\n")
	}
	return b.String(), nil
}

// cutAtWord returns the longest prefix of s of at most max characters that
// ends at a word boundary (or the first max characters, if the first word
// is longer).
func cutAtWord(s string, max int) string {
	runes := []rune(s)
	if len(runes) <= max {
		return s
	}
	// A boundary is a space at or before max (the word before it fits).
	for i := max; i > 0; i-- {
		if runes[i] == ' ' || runes[i] == '\t' {
			if cut := strings.TrimRight(string(runes[:i]), " \t"); cut != "" {
				return cut
			}
		}
	}
	return string(runes[:max])
}
