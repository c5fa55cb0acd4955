package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ignoredBySnapshot returns the paths that a capture would add to the
// scratch branch (untracked files, and files the attempt staged or
// committed) although the snapshot's ignore rules ignore them. The capture
// leaves them out, as it leaves out the files of s.Untracked: a user's
// ignored .env must not end up in a commit because an agent rewrote
// .gitignore, or force-added it.
//
// The snapshot's rules are those of its .gitignore files and of the
// repository's info/exclude and core.excludesFile. When the attempt changed
// or created no .gitignore they are the current ones; otherwise they are
// evaluated by git check-ignore in a scratch repository outside the work
// tree that holds nothing but the snapshot's .gitignore files.
func (r *Repo) ignoredBySnapshot(ctx context.Context, s *Snapshot) ([]string, error) {
	changed, err := r.diffNames(ctx, s.SnapshotRef, false, "")
	if err != nil {
		return nil, err
	}
	untracked, err := r.newUntracked(ctx, s)
	if err != nil {
		return nil, err
	}
	inIndex, err := r.diffNames(ctx, s.SnapshotRef, true, "A")
	if err != nil {
		return nil, err
	}
	return r.ignoredAmong(ctx, s, changed, untracked, notCovered(s.Untracked, inIndex))
}

// ignoredAmong is ignoredBySnapshot once the paths are known: changed, the
// tracked paths whose content differs from the snapshot (more may be
// named: they only decide whether the ignore rules may have changed);
// untracked, the untracked files not in s.Untracked; added, the paths the
// index has and the snapshot has not, but for those of s.Untracked.
func (r *Repo) ignoredAmong(ctx context.Context, s *Snapshot, changed, untracked, added []string) ([]string, error) {
	touched := false
	for _, p := range slices.Concat(changed, untracked, added) {
		if path.Base(p) == ".gitignore" {
			touched = true
			break
		}
	}
	if !touched {
		// The rules are the snapshot's, and git add -A already leaves out
		// the untracked files they ignore.
		if len(added) == 0 {
			return nil, nil
		}
		return checkIgnore(ctx, r.Dir, r.env, added)
	}
	candidates := uniqueSorted(slices.Concat(untracked, added))
	if len(candidates) == 0 {
		return nil, nil
	}

	tmp, err := os.MkdirTemp("", "orbit-gitops-ignore-")
	if err != nil {
		return nil, fmt.Errorf("evaluating the snapshot's ignore rules: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := runGit(ctx, tmp, r.env, call{args: []string{"init", "--quiet"}}); err != nil {
		return nil, fmt.Errorf("evaluating the snapshot's ignore rules: %w", err)
	}

	// The snapshot's .gitignore files.
	out, err := r.run(ctx, call{args: []string{"ls-tree", "-r", "-z", "--full-tree", s.SnapshotRef}, readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("listing the snapshot's files: %w", err)
	}
	for _, e := range nulFields(out) {
		// "<mode> <type> <object>\t<path>"
		meta, p, ok := strings.Cut(e, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || path.Base(p) != ".gitignore" || f[1] != "blob" ||
			(f[0] != "100644" && f[0] != "100755") || !filepath.IsLocal(filepath.FromSlash(p)) {
			continue
		}
		blob, err := r.run(ctx, call{args: []string{"cat-file", "blob", f[2]}, readOnly: true})
		if err != nil {
			return nil, fmt.Errorf("reading %s of the snapshot: %w", p, err)
		}
		if err := writeFile(filepath.Join(tmp, filepath.FromSlash(p)), blob); err != nil {
			return nil, fmt.Errorf("evaluating the snapshot's ignore rules: %w", err)
		}
	}
	// The repository's info/exclude (outside the work tree, so the
	// snapshot's too).
	exclude := r.excludeFile
	if data, err := os.ReadFile(exclude); err == nil {
		if err := writeFile(filepath.Join(tmp, ".git", "info", "exclude"), data); err != nil {
			return nil, fmt.Errorf("evaluating the snapshot's ignore rules: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", exclude, err)
	}

	return checkIgnore(ctx, tmp, r.env, candidates)
}

// checkIgnore returns the paths the ignore rules of the work tree at dir
// ignore, whether tracked or not.
func checkIgnore(ctx context.Context, dir string, env []string, paths []string) ([]string, error) {
	out, err := runGit(ctx, dir, env, call{
		args:     []string{"check-ignore", "-z", "--stdin", "--no-index"},
		stdin:    pathspecs("", "", paths),
		readOnly: true,
	})
	if exitCode(err) == 1 { // none is ignored
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("evaluating the snapshot's ignore rules: %w", err)
	}
	return nulFields(out), nil
}

func writeFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}
