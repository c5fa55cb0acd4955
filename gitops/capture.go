package gitops

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Trailers of capture commits, which identify them as such.
const (
	trailerScratch  = "Groundhog-Scratch"
	trailerSnapshot = "Groundhog-Snapshot"
)

// exactPathsMax is the most paths capture names to git add one by one.
const exactPathsMax = 1000

// captured is the outcome of capture.
type captured struct {
	head string // the scratch branch's head

	// refs holds the scratch branch and the task branch as read after a
	// capture commit; nil when none was made.
	refs map[string]branchRef
}

// capture commits the state of the work tree on the scratch branch (HEAD
// is on it, as st, read by the caller, says) and returns the scratch
// branch's head. The files of s.Untracked, and the new paths the
// snapshot's ignore rules ignore (see ignoredBySnapshot), are taken out of
// the index if the attempt put them there, and are not staged. With
// always, a commit is made even when nothing is staged, unless the head is
// already a capture commit of s: CommitSuccess needs that mark to
// recognise, after a crash, that it got past the capture. ident holds the
// commit identity once read, for the caller's next commit.
//
// When HEAD is still at the snapshot (the attempt made no commit of its
// own) st already compares the index and the work tree with the snapshot,
// and stands for the separate queries the general case runs.
func (r *Repo) capture(ctx context.Context, s *Snapshot, st *workStatus, kind, reason string, always bool, ident *[]string) (captured, error) {
	atSnapshot := st.head == s.SnapshotRef
	var ignored []string
	var err error
	if atSnapshot {
		ignored, err = r.ignoredAmong(ctx, s, st.tracked(), notCovered(s.Untracked, st.untracked()),
			notCovered(s.Untracked, st.addedToIndex()))
	} else {
		ignored, err = r.ignoredBySnapshot(ctx, s)
	}
	if err != nil {
		return captured{}, fmt.Errorf("capturing the attempt: %w", err)
	}
	leaveOut := slices.Concat(s.Untracked, ignored)
	excluded := leaveOut
	switch {
	case len(leaveOut) == 0:
	case atSnapshot && !inIndex(leaveOut, st):
		// None of them is in the index, so none is to be unstaged; and
		// git add need only be told to leave out the ones the status
		// lists as untracked: those are not ignored.
		excluded = coveredUntracked(leaveOut, st)
	default:
		// Out of the index, if the attempt put them there. Only the index
		// changes (--cached): the files stay as they are.
		if _, err := r.run(ctx, call{
			args:            []string{"rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"},
			stdin:           pathspecs("", ":(literal)", leaveOut),
			uninterruptible: true,
		}); err != nil {
			return captured{}, fmt.Errorf("capturing the attempt: unstaging files that must stay out of commits: %w", err)
		}
		// git add fails when a pathspec, even an exclusion, names an
		// ignored file; those it would not stage anyway.
		out, err := r.run(ctx, call{
			args:     []string{"check-ignore", "-z", "--stdin"},
			stdin:    pathspecs("", "", leaveOut),
			readOnly: true,
		})
		if err != nil && exitCode(err) != 1 { // 1: none is ignored
			return captured{}, fmt.Errorf("capturing the attempt: %w", err)
		}
		ignoredNow := map[string]bool{}
		for _, p := range nulFields(out) {
			ignoredNow[p] = true
		}
		excluded = slices.DeleteFunc(slices.Clone(leaveOut), func(p string) bool { return ignoredNow[p] })
	}

	// At the snapshot with no change but to files left out, git add would
	// stage nothing. Otherwise the status names what git add --all of the
	// whole work tree would stage: the tracked paths changed in the work
	// tree and the untracked files, but for those left out. Given those
	// paths, git add looks only at them rather than walk every directory
	// again (up to exactPathsMax: git matches each path against every
	// pathspec).
	nothing := atSnapshot && len(notCovered(leaveOut, pathsOf(st.entries))) == 0
	spec := pathspecs(".", ":(exclude,literal)", excluded)
	if atSnapshot {
		var changed []string
		for _, e := range st.entries {
			if e.kind == '?' || e.y != '.' {
				changed = append(changed, e.path)
			}
		}
		if changed = notCovered(leaveOut, changed); len(changed) == 0 {
			spec = nil
		} else if len(changed) <= exactPathsMax {
			spec = pathspecs("", ":(literal)", changed)
		}
	}
	if !nothing && spec != nil {
		if _, err := r.run(ctx, call{
			args:            []string{"add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"},
			stdin:           spec,
			uninterruptible: true,
		}); err != nil {
			return captured{}, fmt.Errorf("capturing the attempt: staging: %w", err)
		}
	}
	head := st.head
	if !atSnapshot {
		if head, err = r.BranchSHA(ctx, s.ScratchBranch); err != nil {
			return captured{}, err
		}
	}
	// At the snapshot, head is no capture commit: always commits whether
	// or not anything is staged. And a new untracked file that is not left
	// out is certainly staged now.
	if !nothing && !(always && atSnapshot) && !(atSnapshot && len(notCovered(leaveOut, st.untracked())) > 0) {
		staged, err := r.hasStaged(ctx)
		if err != nil {
			return captured{}, err
		}
		nothing = !staged
	}
	if nothing {
		if !always {
			return captured{head: head}, nil
		}
		if ok, err := r.isCaptureOf(ctx, head, s); err != nil || ok {
			return captured{head: head}, err
		}
	}

	env, err := r.identity(ctx, ident)
	if err != nil {
		return captured{}, err
	}
	if _, err := r.run(ctx, call{
		args:            []string{"commit", "--quiet", "--no-verify", "--no-gpg-sign", "--allow-empty", "--cleanup=verbatim", "--file=-"},
		stdin:           []byte(captureMessage(s, kind, reason)),
		env:             env,
		uninterruptible: true,
	}); err != nil {
		return captured{}, fmt.Errorf("capturing the attempt: committing on %s: %w", s.ScratchBranch, err)
	}
	refs, err := r.readBranches(ctx, s.ScratchBranch, s.TaskBranch)
	if err != nil {
		return captured{}, err
	}
	scratch, ok := refs[s.ScratchBranch]
	if !ok {
		return captured{}, fmt.Errorf("%w: %s", ErrBranchNotFound, s.ScratchBranch)
	}
	return captured{head: scratch.sha, refs: refs}, nil
}

// inIndex reports whether a status names one of paths (or a path under one
// of them ending in "/") as added to the index.
func inIndex(paths []string, st *workStatus) bool {
	pre := newPreexisting(paths)
	for _, p := range st.addedToIndex() {
		if pre.covers(p) || pre.covers(p+"/") {
			return true
		}
	}
	return false
}

// coveredUntracked returns the paths that cover an untracked file of st.
func coveredUntracked(paths []string, st *workStatus) []string {
	var res []string
	for _, p := range paths {
		one := newPreexisting([]string{p})
		for _, u := range st.untracked() {
			if one.covers(u) {
				res = append(res, p)
				break
			}
		}
	}
	return res
}

// pathsOf returns the paths of status entries.
func pathsOf(entries []statusEntry) []string {
	res := make([]string, len(entries))
	for i, e := range entries {
		res[i] = e.path
	}
	return res
}

// captureMessage names the task, the day and the reason, and carries the
// trailers that mark a capture commit of s.
func captureMessage(s *Snapshot, kind, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "groundhog: task %s, day %d: %s\n", oneLine(s.Task), s.Day, kind)
	reason = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(reason, "\r\n", "\n"), "\x00", ""))
	if reason != "" {
		b.WriteString("\n" + reason + "\n")
	}
	fmt.Fprintf(&b, "\n%s: %s\n%s: %s\n", trailerScratch, s.ScratchBranch, trailerSnapshot, s.SnapshotRef)
	return b.String()
}

// isCaptureOf reports whether commit is a capture commit of s.
func (r *Repo) isCaptureOf(ctx context.Context, commit string, s *Snapshot) (bool, error) {
	if commit == s.SnapshotRef {
		return false, nil
	}
	t, err := r.Trailers(ctx, commit)
	if err != nil {
		return false, err
	}
	return t[trailerScratch] == s.ScratchBranch && t[trailerSnapshot] == s.SnapshotRef, nil
}

// pathspecs is the NUL-separated input of --pathspec-from-file: first (if
// any), then each path with the given magic.
func pathspecs(first, magic string, paths []string) []byte {
	var b strings.Builder
	if first != "" {
		b.WriteString(first)
		b.WriteByte(0)
	}
	for _, p := range paths {
		b.WriteString(magic)
		b.WriteString(p)
		b.WriteByte(0)
	}
	return []byte(b.String())
}

// hasStaged reports whether the index differs from HEAD.
func (r *Repo) hasStaged(ctx context.Context) (bool, error) {
	_, err := r.run(ctx, call{args: []string{"diff", "--cached", "--quiet", "--no-ext-diff"}, readOnly: true})
	switch exitCode(err) {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, fmt.Errorf("checking for staged changes: %w", err)
}
