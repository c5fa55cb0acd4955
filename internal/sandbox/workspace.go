package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ForWorkspace returns p with dir (the program's work tree) in Work when
// p confines the program or a hidden or read-only path holds it, and the
// git directory of the repository that holds dir added to ReadOnly,
// whole: the work tree's .git (a directory, or in a linked work tree the
// file that names its git directory), its git directory and the common
// one. Git runs commands named in its configuration (core.fsmonitor,
// filter drivers, core.hooksPath) and the hooks, and reads the config and
// hooks of whatever directory a commondir file names, and the engine's
// own git runs in that repository later, outside the sandbox, as the
// engine's user: a program that could write any of it, or make a
// commondir where there is none, could run code there. So the program
// reads the repository (log, diff, status) but commits nothing: the
// engine commits its work (Groundhog's checkpoints, a pipeline's commit
// step). A .git that is a mount point cannot be renamed or removed
// either. p itself is not changed; dir outside a repository gives a copy
// of p with dir in Work as above.
func (p Policy) ForWorkspace(dir string) Policy {
	p.ReadOnly = slices.Clone(p.ReadOnly)
	p.Work = slices.Clone(p.Work)
	if abs, err := filepath.Abs(dir); err == nil && (p.Confine || p.covers(abs)) && !slices.Contains(p.Work, abs) {
		p.Work = append(p.Work, abs)
	}
	dotGit, gitDir, common := gitDirs(dir)
	if gitDir == "" {
		return p
	}
	for _, path := range []string{dotGit, gitDir, common} {
		if !slices.Contains(p.ReadOnly, path) {
			p.ReadOnly = append(p.ReadOnly, path)
		}
	}
	return p
}

// covers reports whether a hidden or read-only path of p holds path.
func (p Policy) covers(path string) bool {
	return slices.ContainsFunc(slices.Concat(p.Hide, p.ReadOnly), func(c string) bool { return within(c, path) })
}

// within reports whether path is dir or under it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// gitDirs finds the repository of the work tree at dir as git does, from
// dir up: the .git it found, its git directory and its common one (the
// main repository's, for a linked work tree; else the same), absolute;
// "" when there is none.
func gitDirs(dir string) (dotGit, gitDir, common string) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", "", ""
	}
	for {
		dotGit = filepath.Join(dir, ".git")
		fi, err := os.Stat(dotGit)
		switch {
		case err == nil && fi.IsDir():
			gitDir = dotGit
		case err == nil:
			data, err := os.ReadFile(dotGit)
			target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
			if err != nil || !ok {
				return "", "", ""
			}
			gitDir = resolve(dir, strings.TrimSpace(target))
		}
		if gitDir != "" {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", ""
		}
		dir = parent
	}
	common = gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = resolve(gitDir, strings.TrimSpace(string(data)))
	}
	return dotGit, gitDir, common
}

// resolve is path, relative to base when it is not absolute.
func resolve(base, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(base, path)
}
