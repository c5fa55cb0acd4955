package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxEditSize is the largest file fs.edit rewrites.
const maxEditSize = 16 << 20

type pathInput struct {
	Path string `json:"path"`
}

type writeInput struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type editInput struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

var pathField = toolField{
	name:     "path",
	typ:      "string",
	desc:     "Path relative to the workspace root, with / separators.",
	required: true,
}

var fsRead = newBuiltin("fs.read",
	"Read a text file of the workspace and return its content. "+
		"Output longer than 64 KiB is truncated, with a note of the full size.",
	[]toolField{pathField}, runRead)

var fsWrite = newBuiltin("fs.write",
	"Create or overwrite a file of the workspace with the given content, "+
		"creating missing parent directories. The file is replaced as a whole.",
	[]toolField{pathField, {name: "content", typ: "string", desc: "The complete new content of the file.", required: true}},
	runWrite)

var fsEdit = newBuiltin("fs.edit",
	"Replace one exact occurrence of a text in a file of the workspace. "+
		"`old` must occur exactly once in the file (whitespace included): "+
		"when it is absent or occurs more than once, nothing is changed and the error says which; "+
		"add surrounding lines to `old` to make it unique.",
	[]toolField{pathField,
		{name: "old", typ: "string", desc: "The exact text to replace; must occur exactly once.", required: true},
		{name: "new", typ: "string", desc: "The text to put in its place.", required: true}},
	runEdit)

var fsList = newBuiltin("fs.list",
	"List the entries of a directory of the workspace, one per line, sorted; "+
		"directories end with /. Use \".\" for the workspace root. .git and .orbit are not listed.",
	[]toolField{{name: "path", typ: "string", desc: "Directory relative to the workspace root; \".\" is the root.", required: true}},
	runList)

var fsDelete = newBuiltin("fs.delete",
	"Delete a file of the workspace. Directories are not deleted.",
	[]toolField{pathField}, runDelete)

// openTarget resolves path for a tool under every access it needs and
// opens the workspace root the operation then goes through.
func openTarget(tc *ToolContext, tool, path string, accs ...fsAccess) (*os.Root, *fsTarget, error) {
	t, err := resolvePath(tc, tool, path, accs...)
	if err != nil {
		return nil, nil, err
	}
	root, err := os.OpenRoot(t.root)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace: %w", err)
	}
	return root, t, nil
}

func runRead(_ context.Context, tc *ToolContext, in *pathInput) (string, error) {
	root, t, err := openTarget(tc, "fs.read", in.Path, accessRead)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, fi, err := openChecked(root, t, false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxResult))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", t.rel, unwrapPathError(err))
	}
	return capResult(string(data), max(fi.Size(), int64(len(data)))), nil
}

func runWrite(_ context.Context, tc *ToolContext, in *writeInput) (string, error) {
	root, t, err := openTarget(tc, "fs.write", in.Path, accessWrite)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := replaceFile(root, t, []byte(in.Content)); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(in.Content), t.rel), nil
}

// runEdit needs the path to be writable and readable: an edit that may
// fail on "not found" tells what a file holds.
func runEdit(_ context.Context, tc *ToolContext, in *editInput) (string, error) {
	root, t, err := openTarget(tc, "fs.edit", in.Path, accessWrite, accessRead)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if in.Old == "" {
		return "", errors.New("old must not be empty")
	}
	f, fi, err := openChecked(root, t, false)
	if err != nil {
		return "", err
	}
	if fi.Size() > maxEditSize {
		f.Close()
		return "", fmt.Errorf("%s is too large to edit (%d bytes, at most %d)", t.rel, fi.Size(), maxEditSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEditSize+1))
	f.Close()
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", t.rel, unwrapPathError(err))
	}
	content := string(data)
	switch n := occurrences(content, in.Old); n {
	case 0:
		return "", fmt.Errorf("old text not found in %s; nothing was changed", t.rel)
	case 1:
	default:
		return "", fmt.Errorf("old text is not unique in %s: it occurs %d times; nothing was changed (include surrounding lines to pick one)", t.rel, n)
	}
	updated := strings.Replace(content, in.Old, in.New, 1)
	if err := replaceFile(root, t, []byte(updated)); err != nil {
		return "", err
	}
	return fmt.Sprintf("edited %s: replaced 1 occurrence (%d bytes now)", t.rel, len(updated)), nil
}

func runList(_ context.Context, tc *ToolContext, in *pathInput) (string, error) {
	root, t, err := openTarget(tc, "fs.list", in.Path, accessRead)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, _, err := openChecked(root, t, true)
	if err != nil {
		return "", err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", fmt.Errorf("listing %s: %w", t.rel, unwrapPathError(err))
	}
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		if reservedName(e.Name()) != "" {
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		lines = append(lines, name)
	}
	if len(lines) == 0 {
		return "(empty directory)", nil
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

func runDelete(_ context.Context, tc *ToolContext, in *pathInput) (string, error) {
	root, t, err := openTarget(tc, "fs.delete", in.Path, accessWrite)
	if err != nil {
		return "", err
	}
	defer root.Close()
	// The entry, not what it resolves to: deleting a symlink removes the
	// link.
	fi, err := root.Lstat(t.entry)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.rel, unwrapPathError(err))
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory; fs.delete deletes files only", t.rel)
	}
	if err := root.Remove(t.entry); err != nil {
		return "", fmt.Errorf("deleting %s: %w", t.rel, unwrapPathError(err))
	}
	return "deleted " + t.rel, nil
}

// openChecked opens t.real for reading, which must be a directory if dir
// and a regular file otherwise. It fails if what it opened is not what was
// there when it looked (a symlink swapped in after the check).
func openChecked(root *os.Root, t *fsTarget, dir bool) (*os.File, fs.FileInfo, error) {
	before, err := root.Lstat(t.real)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.rel, unwrapPathError(err))
	}
	switch {
	case dir && !before.IsDir():
		return nil, nil, fmt.Errorf("%s is not a directory", t.rel)
	case !dir && before.IsDir():
		return nil, nil, fmt.Errorf("%s is a directory (fs.list lists it)", t.rel)
	case !dir && !before.Mode().IsRegular():
		return nil, nil, fmt.Errorf("%s is not a regular file", t.rel)
	}
	f, err := root.Open(t.real)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", t.rel, unwrapPathError(err))
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, nil, fmt.Errorf("%s changed while it was being opened", t.rel)
	}
	return f, after, nil
}

// replaceFile gives t.real the content data: it writes a temporary file in
// the same directory and renames it over the target. A reader never sees a
// half-written file, a failed write leaves the old content, and the target
// name is replaced rather than opened, so a symlink swapped in after the
// check is replaced, not followed. An existing file keeps its permissions;
// a new one gets 0666 less the umask, like any editor's.
func replaceFile(root *os.Root, t *fsTarget, data []byte) error {
	perm, keepPerm := fs.FileMode(0o666), false
	fi, err := root.Lstat(t.real)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory", t.rel)
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", t.rel)
	case err == nil:
		perm, keepPerm = fi.Mode().Perm(), true
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(t.real); dir != "." {
			if err := root.MkdirAll(dir, 0o777); err != nil {
				return fmt.Errorf("creating the directory of %s: %w", t.rel, unwrapPathError(err))
			}
		}
	default:
		return fmt.Errorf("%s: %w", t.rel, unwrapPathError(err))
	}

	tmp := filepath.Join(filepath.Dir(t.real), ".orbit-write-"+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", t.rel, unwrapPathError(err))
	}
	_, err = f.Write(data)
	if err == nil && keepPerm {
		err = f.Chmod(perm) // the umask may have dropped bits
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, t.real)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", t.rel, unwrapPathError(err))
	}
	return nil
}

// occurrences counts where sub starts in s, overlapping matches included:
// "aa" is not unique in "aaa".
func occurrences(s, sub string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return n
		}
		n++
		i += j + 1
	}
}
