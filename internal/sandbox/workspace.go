package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ForWorkspace returns p with dir (the program's work tree) in Work when
// a hidden or read-only path holds it, and the git configuration and hooks
// of the repository that holds dir added to ReadOnly:
// git runs commands named in its configuration (core.fsmonitor, filter
// drivers, core.hooksPath) and the hooks, and the engine's own git runs
// in that repository later, outside the sandbox, as the engine's user.
// The work tree and the rest of .git stay writable: a program may still
// add and commit. The hooks directory is made when it is missing, so that
// there is one to make read-only. p itself is not changed; dir outside a
// repository gives a copy of p.
func (p Policy) ForWorkspace(dir string) Policy {
	p.ReadOnly = slices.Clone(p.ReadOnly)
	p.Work = slices.Clone(p.Work)
	if abs, err := filepath.Abs(dir); err == nil && p.covers(abs) && !slices.Contains(p.Work, abs) {
		p.Work = append(p.Work, abs)
	}
	gitDir, common := gitDirs(dir)
	if gitDir == "" {
		return p
	}
	// Git reads the hooks and config of the common directory, which a
	// linked work tree's commondir names, and config.worktree of both.
	hooks := filepath.Join(common, "hooks")
	_ = os.MkdirAll(hooks, 0o755)
	paths := []string{
		filepath.Join(gitDir, "commondir"), filepath.Join(gitDir, "config.worktree"),
		filepath.Join(common, "config"), filepath.Join(common, "config.worktree"), hooks,
	}
	for _, path := range paths {
		if !slices.Contains(p.ReadOnly, path) {
			p.ReadOnly = append(p.ReadOnly, path)
		}
	}
	return p
}

// covers reports whether a hidden or read-only path of p holds path.
func (p Policy) covers(path string) bool {
	for _, c := range append(slices.Clone(p.Hide), p.ReadOnly...) {
		if rel, err := filepath.Rel(c, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// gitDirs finds the repository of the work tree at dir as git does, from
// dir up: its git directory and its common one (the main repository's,
// for a linked work tree; else the same), absolute; "" when there is none.
func gitDirs(dir string) (gitDir, common string) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", ""
	}
	for {
		dotGit := filepath.Join(dir, ".git")
		fi, err := os.Stat(dotGit)
		switch {
		case err == nil && fi.IsDir():
			gitDir = dotGit
		case err == nil:
			data, err := os.ReadFile(dotGit)
			target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
			if err != nil || !ok {
				return "", ""
			}
			gitDir = resolve(dir, strings.TrimSpace(target))
		}
		if gitDir != "" {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ""
		}
		dir = parent
	}
	common = gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = resolve(gitDir, strings.TrimSpace(string(data)))
	}
	return gitDir, common
}

// resolve is path, relative to base when it is not absolute.
func resolve(base, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(base, path)
}
