package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// fsAccess is what a tool wants to do with a path.
type fsAccess int

const (
	accessRead fsAccess = iota
	accessWrite
)

func (a fsAccess) String() string {
	if a == accessWrite {
		return "write"
	}
	return "read"
}

// reserved are the directory names no tool may read or write, whatever the
// profile says: the repository's history and Orbit's own state.
var reserved = []string{".git", ".orbit"}

// fsTarget is a path that passed every check, ready to be acted on.
//
// IMPORTANT: real and entry are relative to root and contain no ".." and,
// when the check ran, no symlink (entry's last element excepted). Tools act
// on them only through an *os.Root opened on root, so even a tree that
// changes after the check cannot lead them outside the workspace.
//
// Races: the tree may change between the check and the act (a program
// that shell.exec left running, another session on the same workspace).
// os.Root resolves every element with openat and refuses to leave root,
// whatever changed. On top of it, reads check that the file they opened is
// the one they looked at (a symlink swapped in at the last element is
// caught), and writes create a new file with O_EXCL, which never follows a
// symlink, and rename it over the target, which replaces a name rather
// than following it. What remains is a directory on the way swapped for a
// symlink to somewhere else inside the workspace (.git/ included) in the
// middle of a call; closing that needs openat2's RESOLVE_NO_SYMLINKS.
type fsTarget struct {
	// rel is the path as the model gave it, cleaned and slash-separated:
	// what results and errors show.
	rel string
	// root is the workspace with its symlinks resolved.
	root string
	// real is the path with every symlink resolved, relative to root ("."
	// for the workspace itself). Reads and writes act on it.
	real string
	// entry is the path with its directories resolved but its last element
	// as it is, relative to root: what fs.delete removes (a symlink, not
	// the file it points to).
	entry string
}

// resolvePath checks that tool may access path in tc's workspace and returns
// where it really is. Every refusal is a *DeniedError; failures to look at
// the filesystem are plain errors.
//
// The checks, in order:
//  1. the path is relative and, cleaned, stays inside the workspace;
//  2. it does not name .git or .orbit, or anything under them (at any
//     depth: a nested repository's hooks are as dangerous as the
//     workspace's);
//  3. the profile's globs for the access allow it;
//  4. its symlinks, resolved (through the longest prefix that exists),
//     lead to a place inside the resolved workspace, and that place passes
//     2 and 3 as well.
//
// The lexical checks run before the filesystem is touched, so a refused
// path reveals nothing about what exists.
func resolvePath(tc *ToolContext, tool, path string, accs ...fsAccess) (*fsTarget, error) {
	if tc == nil || tc.Workspace == "" || !filepath.IsAbs(tc.Workspace) {
		return nil, errors.New("no workspace: the tool context needs an absolute workspace directory")
	}
	deny := func(reason string) error {
		return &DeniedError{Tool: tool, Reason: reason, Path: path}
	}
	if path == "" {
		return nil, errors.New("path must not be empty (use \".\" for the workspace itself)")
	}
	if strings.ContainsRune(path, 0) {
		return nil, errors.New("path contains a NUL byte")
	}
	if filepath.IsAbs(path) {
		return nil, deny("absolute path; paths are relative to the workspace")
	}
	clean := filepath.Clean(path)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, deny("outside the workspace")
	}
	rel := filepath.ToSlash(clean)
	for _, acc := range accs {
		if reason := pathPolicy(tc.Profile, rel, acc); reason != "" {
			return nil, deny(reason)
		}
	}

	root, err := filepath.EvalSymlinks(tc.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	t := &fsTarget{rel: rel, root: root}

	// Find the longest prefix of the path that exists. Lstat, not Stat: a
	// dangling symlink exists, and must be caught below rather than be
	// taken for a missing file that a write may create.
	elems := strings.Split(clean, string(filepath.Separator))
	if clean == "." {
		elems = nil
	}
	n := 0
	for ; n < len(elems); n++ {
		_, err := os.Lstat(filepath.Join(root, filepath.Join(elems[:n+1]...)))
		// ENOTDIR: a file stands where a directory should; the symlink
		// check below still runs on what exists, the operation will fail.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, unwrapPathError(err))
		}
	}
	exists := n == len(elems)
	existing := filepath.Join(root, filepath.Join(elems[:n]...))
	resolved, err := filepath.EvalSymlinks(existing)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, deny("resolves through a dangling symlink " + danglingLink(root, existing))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, unwrapPathError(err))
	}
	realAbs := filepath.Join(append([]string{resolved}, elems[n:]...)...)
	real, ok := insideDir(root, realAbs)
	if !ok {
		return nil, deny(fmt.Sprintf("resolves through a symlink to %s, outside the workspace", realAbs))
	}
	t.real = real

	// The entry keeps its last element: only its directories are resolved.
	t.entry = real
	if exists && len(elems) > 0 {
		dir, err := filepath.EvalSymlinks(filepath.Join(root, filepath.Dir(clean)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, unwrapPathError(err))
		}
		entryAbs := filepath.Join(dir, elems[len(elems)-1])
		if t.entry, ok = insideDir(root, entryAbs); !ok {
			return nil, deny(fmt.Sprintf("resolves through a symlink to %s, outside the workspace", entryAbs))
		}
	}

	// Every name the path goes by must pass: a symlink may not lead a
	// write from docs/ into src/, or a read into .git/.
	for _, p := range []string{t.entry, t.real} {
		p = filepath.ToSlash(p)
		if p == rel {
			continue
		}
		for _, acc := range accs {
			if reason := pathPolicy(tc.Profile, p, acc); reason != "" {
				return nil, deny(fmt.Sprintf("resolves through a symlink to %s: %s", p, reason))
			}
		}
	}
	return t, nil
}

// pathPolicy returns why acc to rel (slash-separated, relative to the
// workspace) is refused, or "" when it is allowed.
func pathPolicy(p FSProfile, rel string, acc fsAccess) string {
	for _, elem := range strings.Split(rel, "/") {
		if name := reservedName(elem); name != "" {
			adj := "readable"
			if acc == accessWrite {
				adj = "writable"
			}
			return fmt.Sprintf("%s/ is never %s", name, adj)
		}
	}
	globs := p.Read
	if acc == accessWrite {
		globs = p.Write
	}
	if len(globs) == 0 {
		return fmt.Sprintf("fsProfile %q allows no %ss", p.Name, acc)
	}
	for _, g := range globs {
		// A malformed glob matches nothing; profiles are validated when
		// they are loaded.
		if ok, _ := doublestar.Match(g, rel); ok {
			return ""
		}
	}
	return fmt.Sprintf("not in fsProfile %q %s globs [%s]", p.Name, acc, strings.Join(globs, ", "))
}

// reservedName returns the reserved name that a path element is, or "".
// Case does not matter: on a case-insensitive filesystem .GIT is .git.
func reservedName(elem string) string {
	for _, name := range reserved {
		if strings.EqualFold(elem, name) {
			return name
		}
	}
	return ""
}

// insideDir returns abs relative to root, and whether it is inside root.
func insideDir(root, abs string) (string, bool) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// danglingLink describes the dangling symlink on the way to abs, a path
// inside root: "link -> where it points".
func danglingLink(root, abs string) string {
	for p := abs; p != root && p != filepath.Dir(p); p = filepath.Dir(p) {
		dst, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			rel, _ := insideDir(root, p)
			return filepath.ToSlash(rel) + " -> " + dst
		}
	}
	rel, _ := insideDir(root, abs)
	return filepath.ToSlash(rel)
}

// unwrapPathError drops the absolute path an *fs.PathError carries, so that
// messages name paths as the model gave them.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
