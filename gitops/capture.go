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

// capture commits the state of the work tree on the scratch branch (HEAD
// is on it) and returns the scratch branch's head. The files of
// s.Untracked, and the new paths the snapshot's ignore rules ignore (see
// ignoredBySnapshot), are taken out of the index if the attempt put them
// there, and are not staged. With always, a commit is made even when
// nothing is staged, unless the head is already a capture commit of s:
// CommitSuccess needs that mark to recognise, after a crash, that it got
// past the capture.
func (r *Repo) capture(ctx context.Context, s *Snapshot, kind, reason string, always bool) (string, error) {
	ignored, err := r.ignoredBySnapshot(ctx, s)
	if err != nil {
		return "", fmt.Errorf("capturing the attempt: %w", err)
	}
	leaveOut := slices.Concat(s.Untracked, ignored)
	if len(leaveOut) > 0 {
		// Out of the index, if the attempt put them there. Only the index
		// changes (--cached): the files stay as they are.
		if _, err := r.run(ctx, call{
			args:            []string{"rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"},
			stdin:           pathspecs("", ":(literal)", leaveOut),
			uninterruptible: true,
		}); err != nil {
			return "", fmt.Errorf("capturing the attempt: unstaging files that must stay out of commits: %w", err)
		}
	}
	// git add fails when a pathspec, even an exclusion, names an ignored
	// file; those it would not stage anyway.
	excluded := leaveOut
	if len(leaveOut) > 0 {
		out, err := r.run(ctx, call{
			args:     []string{"check-ignore", "-z", "--stdin"},
			stdin:    pathspecs("", "", leaveOut),
			readOnly: true,
		})
		if err != nil && exitCode(err) != 1 { // 1: none is ignored
			return "", fmt.Errorf("capturing the attempt: %w", err)
		}
		ignoredNow := map[string]bool{}
		for _, p := range nulFields(out) {
			ignoredNow[p] = true
		}
		excluded = slices.DeleteFunc(slices.Clone(leaveOut), func(p string) bool { return ignoredNow[p] })
	}
	if _, err := r.run(ctx, call{
		args:            []string{"add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"},
		stdin:           pathspecs(".", ":(exclude,literal)", excluded),
		uninterruptible: true,
	}); err != nil {
		return "", fmt.Errorf("capturing the attempt: staging: %w", err)
	}
	staged, err := r.hasStaged(ctx)
	if err != nil {
		return "", err
	}
	head, err := r.BranchSHA(ctx, s.ScratchBranch)
	if err != nil {
		return "", err
	}
	if !staged {
		if !always {
			return head, nil
		}
		if ok, err := r.isCaptureOf(ctx, head, s); err != nil || ok {
			return head, err
		}
	}

	env, err := r.identityEnv(ctx)
	if err != nil {
		return "", err
	}
	if _, err := r.run(ctx, call{
		args:            []string{"commit", "--quiet", "--no-verify", "--no-gpg-sign", "--allow-empty", "--cleanup=verbatim", "--file=-"},
		stdin:           []byte(captureMessage(s, kind, reason)),
		env:             env,
		uninterruptible: true,
	}); err != nil {
		return "", fmt.Errorf("capturing the attempt: committing on %s: %w", s.ScratchBranch, err)
	}
	return r.BranchSHA(ctx, s.ScratchBranch)
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
