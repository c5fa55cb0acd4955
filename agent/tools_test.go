package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
)

// callBuiltin calls a built-in tool with input marshalled to JSON.
func callBuiltin(t *testing.T, tc *agent.ToolContext, name string, input any) (string, error) {
	t.Helper()
	tool, ok := agent.Builtin(name)
	require.True(t, ok, "no built-in tool %s", name)
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	return tool.Call(context.Background(), tc, raw)
}

// writeTestTree creates files (slash-separated paths relative to dir).
func writeTestTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func mustReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// snapshotTree describes everything under root: each file's mode and
// content, each directory, each symlink's target.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			dst, err := os.Readlink(p)
			if err != nil {
				return err
			}
			snap[rel] = "symlink -> " + dst
		case d.IsDir():
			snap[rel] = "dir " + info.Mode().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			snap[rel] = fmt.Sprintf("file %s %q", info.Mode(), b)
		}
		return nil
	})
	require.NoError(t, err)
	return snap
}

func TestBuiltinToolRegistry(t *testing.T) {
	t.Parallel()
	want := []string{"fs.delete", "fs.edit", "fs.list", "fs.read", "fs.write", "shell.exec"}
	assert.Equal(t, want, agent.BuiltinNames())
	required := map[string][]string{
		"fs.read":    {"path"},
		"fs.write":   {"path", "content"},
		"fs.edit":    {"path", "old", "new"},
		"fs.list":    {"path"},
		"fs.delete":  {"path"},
		"shell.exec": {"program"},
	}
	props := map[string][]string{
		"fs.read":    {"path"},
		"fs.write":   {"content", "path"},
		"fs.edit":    {"new", "old", "path"},
		"fs.list":    {"path"},
		"fs.delete":  {"path"},
		"shell.exec": {"args", "program", "timeout_seconds"},
	}
	for _, name := range want {
		tool, ok := agent.Builtin(name)
		require.True(t, ok, name)
		spec := tool.Spec()
		assert.Equal(t, name, spec.Name)
		assert.NotEmpty(t, spec.Description)
		var schema struct {
			Type                 string                    `json:"type"`
			Properties           map[string]map[string]any `json:"properties"`
			Required             []string                  `json:"required"`
			AdditionalProperties *bool                     `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(spec.InputSchema, &schema), name)
		assert.Equal(t, "object", schema.Type, name)
		assert.ElementsMatch(t, required[name], schema.Required, name)
		if assert.NotNil(t, schema.AdditionalProperties, name) {
			assert.False(t, *schema.AdditionalProperties, name)
		}
		var got []string
		for p, def := range schema.Properties {
			got = append(got, p)
			assert.NotEmpty(t, def["type"], "%s.%s", name, p)
			assert.NotEmpty(t, def["description"], "%s.%s", name, p)
		}
		assert.ElementsMatch(t, props[name], got, name)
	}
	_, ok := agent.Builtin("fs.chmod")
	assert.False(t, ok)

	// A caller changing the schema it was given changes nothing.
	tool, _ := agent.Builtin("fs.read")
	s := tool.Spec()
	s.InputSchema[0] = 'X'
	assert.True(t, json.Valid(tool.Spec().InputSchema))
}

func TestToolInputDecodingIsStrict(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"a.txt": "a\n"})
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.DefaultProfile, AllowedPrograms: []string{"true"}}
	tests := []struct {
		name, tool, input, want string
	}{
		{"unknown field", "fs.read", `{"path":"a.txt","mode":"r"}`, `unknown field "mode"`},
		{"wrong type", "fs.read", `{"path":3}`, `field "path": want a string, got the number 3`},
		{"missing required", "fs.write", `{"path":"a.txt"}`, `missing required field "content"`},
		{"null required", "fs.edit", `{"path":"a.txt","old":null,"new":"x"}`, `missing required field "old"`},
		{"not an object", "fs.list", `["."]`, `want a JSON object, got an array`},
		{"not JSON", "fs.delete", `{"path":`, `not valid JSON`},
		{"two values", "fs.read", `{"path":"a.txt"} {}`, `more than one JSON value`},
		{"empty", "fs.read", ``, `missing required field "path"`},
		{"args not array", "shell.exec", `{"program":"true","args":"-v"}`, `field "args": want an array of strings, got a string`},
		{"args element", "shell.exec", `{"program":"true","args":["a",1]}`, `field "args": element 1: want a string, got the number 1`},
		{"timeout fraction", "shell.exec", `{"program":"true","timeout_seconds":1.5}`, `field "timeout_seconds": want an integer, got 1.5`},
		{"timeout string", "shell.exec", `{"program":"true","timeout_seconds":"5"}`, `field "timeout_seconds": want an integer, got a string`},
		{"unknown shell field", "shell.exec", `{"program":"true","cwd":"/"}`, `unknown field "cwd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, _ := agent.Builtin(tt.tool)
			before := snapshotTree(t, ws)
			out, err := tool.Call(context.Background(), tc, json.RawMessage(tt.input))
			require.Error(t, err)
			assert.NotErrorIs(t, err, agent.ErrDenied)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, out)
			assert.Equal(t, before, snapshotTree(t, ws))
		})
	}
}

func TestToolFSReadWrite(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.DefaultProfile}

	out, err := callBuiltin(t, tc, "fs.write", map[string]any{"path": "a/b/c.txt", "content": "héllo\n"})
	require.NoError(t, err)
	assert.Equal(t, "wrote 7 bytes to a/b/c.txt", out)
	out, err = callBuiltin(t, tc, "fs.read", map[string]any{"path": "./a/b/../b/c.txt"})
	require.NoError(t, err)
	assert.Equal(t, "héllo\n", out)

	// Overwriting keeps the file's permissions and leaves no temp file.
	p := filepath.Join(ws, "a/b/c.txt")
	require.NoError(t, os.Chmod(p, 0o600))
	_, err = callBuiltin(t, tc, "fs.write", map[string]any{"path": "a/b/c.txt", "content": ""})
	require.NoError(t, err)
	assert.Equal(t, "", mustReadFile(t, p))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Join(ws, "a/b"))
	require.NoError(t, err)
	assert.Len(t, entries, 1)

	_, err = callBuiltin(t, tc, "fs.read", map[string]any{"path": "missing.txt"})
	require.Error(t, err)
	assert.NotErrorIs(t, err, agent.ErrDenied)
	_, err = callBuiltin(t, tc, "fs.read", map[string]any{"path": "a"})
	assert.ErrorContains(t, err, "a is a directory")
	_, err = callBuiltin(t, tc, "fs.write", map[string]any{"path": "a", "content": "x"})
	assert.ErrorContains(t, err, "a is a directory")
	assert.NotErrorIs(t, err, agent.ErrDenied)
	_, err = callBuiltin(t, tc, "fs.read", map[string]any{"path": ""})
	assert.ErrorContains(t, err, "path must not be empty")
}

func TestToolFSEdit(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	const content = "func a() {}\nfunc b() {}\nreturn nil\nreturn nil\n"
	writeTestTree(t, ws, map[string]string{"x.go": content, "aaa.txt": "aaa"})
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.DefaultProfile}
	p := filepath.Join(ws, "x.go")

	for _, c := range []struct {
		name, path, old, want string
	}{
		{"absent", "x.go", "func c()", "old text not found in x.go"},
		{"twice", "x.go", "return nil\n", "old text is not unique in x.go: it occurs 2 times"},
		{"overlapping", "aaa.txt", "aa", "it occurs 2 times"},
		{"empty old", "x.go", "", "old must not be empty"},
		{"missing file", "y.go", "a", "y.go"},
	} {
		before := snapshotTree(t, ws)
		_, err := callBuiltin(t, tc, "fs.edit", map[string]any{"path": c.path, "old": c.old, "new": "X"})
		if assert.Error(t, err, c.name) {
			assert.NotErrorIs(t, err, agent.ErrDenied, c.name)
			assert.Contains(t, err.Error(), c.want, c.name)
		}
		assert.Equal(t, before, snapshotTree(t, ws), c.name)
	}

	out, err := callBuiltin(t, tc, "fs.edit", map[string]any{"path": "x.go", "old": "func b() {}\nreturn nil\n", "new": "func b() { return }\n"})
	require.NoError(t, err)
	assert.Contains(t, out, "edited x.go")
	assert.Equal(t, "func a() {}\nfunc b() { return }\nreturn nil\n", mustReadFile(t, p))
}

func TestToolFSList(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{
		"b.txt": "", "a.txt": "", "src/x.go": "", "Zeta/y": "",
		".git/HEAD": "", ".orbit/state": "", "src/.git/config": "", ".gitignore": "",
	})
	require.NoError(t, os.Mkdir(filepath.Join(ws, "empty"), 0o755))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(ws, "link")))
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.DefaultProfile}

	out, err := callBuiltin(t, tc, "fs.list", map[string]any{"path": "."})
	require.NoError(t, err)
	assert.Equal(t, ".gitignore\nZeta/\na.txt\nb.txt\nempty/\nlink\nsrc/", out)

	out, err = callBuiltin(t, tc, "fs.list", map[string]any{"path": "src/"})
	require.NoError(t, err)
	assert.Equal(t, "x.go", out)

	out, err = callBuiltin(t, tc, "fs.list", map[string]any{"path": "empty"})
	require.NoError(t, err)
	assert.Equal(t, "(empty directory)", out)

	_, err = callBuiltin(t, tc, "fs.list", map[string]any{"path": "a.txt"})
	assert.ErrorContains(t, err, "a.txt is not a directory")
	assert.NotErrorIs(t, err, agent.ErrDenied)
	_, err = callBuiltin(t, tc, "fs.list", map[string]any{"path": "nope"})
	assert.Error(t, err)
	assert.NotErrorIs(t, err, agent.ErrDenied)
}

func TestToolFSDelete(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"a.txt": "a", "dir/b.txt": "b", "target.txt": "t"})
	require.NoError(t, os.Symlink("target.txt", filepath.Join(ws, "link")))
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.DefaultProfile}

	out, err := callBuiltin(t, tc, "fs.delete", map[string]any{"path": "a.txt"})
	require.NoError(t, err)
	assert.Equal(t, "deleted a.txt", out)
	assert.NoFileExists(t, filepath.Join(ws, "a.txt"))

	// A symlink is deleted, not what it points to.
	_, err = callBuiltin(t, tc, "fs.delete", map[string]any{"path": "link"})
	require.NoError(t, err)
	_, err = os.Lstat(filepath.Join(ws, "link"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, "t", mustReadFile(t, filepath.Join(ws, "target.txt")))

	before := snapshotTree(t, ws)
	for _, c := range []struct{ path, want string }{
		{"dir", "dir is a directory; fs.delete deletes files only"},
		{".", ". is a directory"},
		{"a.txt", "a.txt: no such file or directory"},
	} {
		_, err := callBuiltin(t, tc, "fs.delete", map[string]any{"path": c.path})
		if assert.Error(t, err, c.path) {
			assert.NotErrorIs(t, err, agent.ErrDenied, c.path)
			assert.Contains(t, err.Error(), c.want)
		}
	}
	assert.Equal(t, before, snapshotTree(t, ws))
}

func TestToolOutputIsCapped(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	big := strings.Repeat("é", 50<<10) // 100 KiB of two-byte characters
	writeTestTree(t, ws, map[string]string{"big.txt": big, "small.txt": "small"})
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.DefaultProfile}

	out, err := callBuiltin(t, tc, "fs.read", map[string]any{"path": "big.txt"})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), 64<<10)
	assert.True(t, utf8.ValidString(out), "cut inside a character")
	assert.True(t, strings.HasSuffix(out, fmt.Sprintf("… [truncated, %d bytes total]", len(big))), out[len(out)-60:])
	assert.True(t, strings.HasPrefix(big, out[:strings.LastIndex(out, "\n…")]))

	out, err = callBuiltin(t, tc, "fs.read", map[string]any{"path": "small.txt"})
	require.NoError(t, err)
	assert.Equal(t, "small", out)

	// A listing is capped the same way.
	var files = map[string]string{}
	for i := range 3000 {
		files[fmt.Sprintf("many/%s-%04d.txt", strings.Repeat("n", 20), i)] = ""
	}
	writeTestTree(t, ws, files)
	out, err = callBuiltin(t, tc, "fs.list", map[string]any{"path": "many"})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), 64<<10)
	assert.Contains(t, out, "… [truncated, ")
}
