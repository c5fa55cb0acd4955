package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
)

// escapeFixture is a temp root holding a workspace and, next to it, a
// directory the tools must never reach:
//
//	root/outside/sentinel.txt
//	root/ws/a.txt, sub/b.txt, .git/{config,HEAD}, .orbit/state, sub/.git/config
//	root/ws/link_file    -> root/outside/sentinel.txt (absolute)
//	root/ws/link_rel_out -> ../outside/sentinel.txt
//	root/ws/link_dir     -> ../outside
//	root/ws/gitlink      -> .git
//	root/ws/dangling     -> root/outside/new.txt (does not exist)
//
// Every file holds "secret", so an fs.edit of "secret" would succeed
// wherever it was let through.
type escapeFixture struct {
	root, ws, sentinel string
}

func newEscapeFixture(t *testing.T) *escapeFixture {
	t.Helper()
	root := t.TempDir()
	f := &escapeFixture{
		root:     root,
		ws:       filepath.Join(root, "ws"),
		sentinel: filepath.Join(root, "outside", "sentinel.txt"),
	}
	writeTestTree(t, root, map[string]string{
		"outside/sentinel.txt": "secret outside\n",
		"ws/a.txt":             "secret a\n",
		"ws/sub/b.txt":         "secret b\n",
		"ws/.git/config":       "[core] secret\n",
		"ws/.git/HEAD":         "ref: refs/heads/secret\n",
		"ws/.orbit/state":      "secret orbit\n",
		"ws/sub/.git/config":   "[core] nested secret\n",
	})
	for link, dst := range map[string]string{
		"link_file":    f.sentinel,
		"link_rel_out": "../outside/sentinel.txt",
		"link_dir":     "../outside",
		"gitlink":      ".git",
		"dangling":     filepath.Join(root, "outside", "new.txt"),
	} {
		require.NoError(t, os.Symlink(dst, filepath.Join(f.ws, link)))
	}
	return f
}

func (f *escapeFixture) tc(p agent.FSProfile) *agent.ToolContext {
	return &agent.ToolContext{Workspace: f.ws, Profile: p}
}

// escapePaths are paths no fs tool may act on, whatever the profile.
func escapePaths(f *escapeFixture) []string {
	return []string{
		"../x",
		"../outside/sentinel.txt",
		"../outside",
		"../../etc/passwd",
		"/etc/passwd",
		f.sentinel,
		"a/../../x",
		"sub/../../outside/sentinel.txt",
		"link_file",
		"link_rel_out",
		"link_dir",
		"link_dir/sentinel.txt",
		"link_dir/new.txt",
		"dangling",
		"gitlink",
		"gitlink/config",
		"gitlink/new",
		".git",
		".git/",
		".git/config",
		"./.git/config",
		"sub/../.git/HEAD",
		".git/new",
		"sub/.git/config",
		".orbit",
		".orbit/state",
		".orbit/new",
	}
}

func TestPathEscapesAreDenied(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"fs.read", "fs.write", "fs.edit", "fs.list", "fs.delete"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			f := newEscapeFixture(t)
			before := snapshotTree(t, f.root)
			for _, p := range escapePaths(f) {
				out, err := callBuiltin(t, f.tc(agent.DefaultProfile), tool, escapeInput(tool, p))
				var denied *agent.DeniedError
				if assert.ErrorAs(t, err, &denied, "%s %q: want a denial, got %q", tool, p, out) {
					assert.ErrorIs(t, err, agent.ErrDenied)
					assert.Equal(t, tool, denied.Tool)
					assert.Equal(t, p, denied.Path)
					assert.NotEmpty(t, denied.Reason)
				}
				assert.Empty(t, out, "%s %q", tool, p)
			}
			assert.Equal(t, before, snapshotTree(t, f.root), "a denied call changed the tree")
		})
	}
}

func escapeInput(tool, path string) map[string]any {
	switch tool {
	case "fs.write":
		return map[string]any{"path": path, "content": "pwned"}
	case "fs.edit":
		return map[string]any{"path": path, "old": "secret", "new": "pwned"}
	}
	return map[string]any{"path": path}
}

func TestPathDenialReasons(t *testing.T) {
	t.Parallel()
	f := newEscapeFixture(t)
	sentinel, err := filepath.EvalSymlinks(f.sentinel)
	require.NoError(t, err)
	outside := filepath.Dir(sentinel)
	tests := []struct {
		tool, path, reason string
	}{
		{"fs.read", "../x", "outside the workspace"},
		{"fs.read", "a/../../x", "outside the workspace"},
		{"fs.read", "/etc/passwd", "absolute path; paths are relative to the workspace"},
		{"fs.read", "link_file", "resolves through a symlink to " + sentinel + ", outside the workspace"},
		{"fs.write", "link_dir/new.txt", "resolves through a symlink to " + filepath.Join(outside, "new.txt") + ", outside the workspace"},
		{"fs.write", "dangling", "resolves through a dangling symlink dangling -> " + filepath.Join(f.root, "outside", "new.txt")},
		{"fs.read", ".git/config", ".git/ is never readable"},
		{"fs.write", "sub/../.git/HEAD", ".git/ is never writable"},
		{"fs.delete", ".orbit/state", ".orbit/ is never writable"},
		{"fs.write", "gitlink/config", "resolves through a symlink to .git/config: .git/ is never writable"},
	}
	for _, tt := range tests {
		_, err := callBuiltin(t, f.tc(agent.DefaultProfile), tt.tool, escapeInput(tt.tool, tt.path))
		var denied *agent.DeniedError
		if assert.ErrorAs(t, err, &denied, "%s %s", tt.tool, tt.path) {
			assert.Equal(t, tt.reason, denied.Reason, "%s %s", tt.tool, tt.path)
		}
	}
}

// Symlinks that stay inside the workspace are followed.
func TestPathSymlinkInsideWorkspace(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"docs/real.md": "hello\n"})
	require.NoError(t, os.Symlink("docs/real.md", filepath.Join(ws, "alias.md")))
	require.NoError(t, os.Symlink("docs", filepath.Join(ws, "d")))
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.DefaultProfile}

	out, err := callBuiltin(t, tc, "fs.read", map[string]any{"path": "alias.md"})
	require.NoError(t, err)
	assert.Equal(t, "hello\n", out)

	_, err = callBuiltin(t, tc, "fs.write", map[string]any{"path": "d/new.md", "content": "new\n"})
	require.NoError(t, err)
	assert.Equal(t, "new\n", mustReadFile(t, filepath.Join(ws, "docs/new.md")))

	// Writing through a symlink replaces its target and keeps the link.
	_, err = callBuiltin(t, tc, "fs.write", map[string]any{"path": "alias.md", "content": "changed\n"})
	require.NoError(t, err)
	assert.Equal(t, "changed\n", mustReadFile(t, filepath.Join(ws, "docs/real.md")))
	dst, err := os.Readlink(filepath.Join(ws, "alias.md"))
	require.NoError(t, err)
	assert.Equal(t, "docs/real.md", dst)
}

func TestProfileReadOnlyRefusesWrites(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"a.txt": "keep\n"})
	ro := agent.FSProfile{Name: "ro", Read: []string{"**"}}
	tc := &agent.ToolContext{Workspace: ws, Profile: ro}

	out, err := callBuiltin(t, tc, "fs.read", map[string]any{"path": "a.txt"})
	require.NoError(t, err)
	assert.Equal(t, "keep\n", out)

	before := snapshotTree(t, ws)
	for _, c := range []struct {
		tool  string
		input map[string]any
	}{
		{"fs.write", map[string]any{"path": "a.txt", "content": "x"}},
		{"fs.write", map[string]any{"path": "new.txt", "content": "x"}},
		{"fs.edit", map[string]any{"path": "a.txt", "old": "keep", "new": "x"}},
		{"fs.delete", map[string]any{"path": "a.txt"}},
	} {
		_, err := callBuiltin(t, tc, c.tool, c.input)
		var denied *agent.DeniedError
		if assert.ErrorAs(t, err, &denied, c.tool) {
			assert.Equal(t, `fsProfile "ro" allows no writes`, denied.Reason)
		}
	}
	assert.Equal(t, before, snapshotTree(t, ws))
}

func TestProfileWriteGlobs(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"src/a.go": "package a\n", "docs/old.md": "old\n"})
	require.NoError(t, os.Symlink("../src/a.go", filepath.Join(ws, "docs/link.go")))
	docs := agent.FSProfile{Name: "docs", Read: []string{"**"}, Write: []string{"docs/**"}}
	tc := &agent.ToolContext{Workspace: ws, Profile: docs}

	out, err := callBuiltin(t, tc, "fs.write", map[string]any{"path": "docs/a.md", "content": "# A\n"})
	require.NoError(t, err)
	assert.Equal(t, "wrote 4 bytes to docs/a.md", out)
	assert.Equal(t, "# A\n", mustReadFile(t, filepath.Join(ws, "docs/a.md")))
	_, err = callBuiltin(t, tc, "fs.delete", map[string]any{"path": "docs/old.md"})
	require.NoError(t, err)

	before := snapshotTree(t, ws)
	for _, c := range []struct {
		tool, reason string
		input        map[string]any
	}{
		{"fs.write", `not in fsProfile "docs" write globs [docs/**]`, map[string]any{"path": "src/a.go", "content": "x"}},
		{"fs.write", `not in fsProfile "docs" write globs [docs/**]`, map[string]any{"path": "docs/../src/b.go", "content": "x"}},
		{"fs.edit", `not in fsProfile "docs" write globs [docs/**]`, map[string]any{"path": "src/a.go", "old": "a", "new": "b"}},
		{"fs.delete", `not in fsProfile "docs" write globs [docs/**]`, map[string]any{"path": "src/a.go"}},
		// A symlink under docs/ does not carry a write into src/.
		{"fs.write", `resolves through a symlink to src/a.go: not in fsProfile "docs" write globs [docs/**]`, map[string]any{"path": "docs/link.go", "content": "x"}},
	} {
		_, err := callBuiltin(t, tc, c.tool, c.input)
		var denied *agent.DeniedError
		if assert.ErrorAs(t, err, &denied, "%s %v", c.tool, c.input) {
			assert.Equal(t, c.reason, denied.Reason)
		}
	}
	assert.Equal(t, before, snapshotTree(t, ws))
}

func TestProfileEmptyWriteListRefusesAll(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"a.txt": "a\n"})
	for _, p := range []agent.FSProfile{
		{Name: "none", Read: []string{"**"}, Write: []string{}},
		{Name: "nil", Read: []string{"**"}},
	} {
		tc := &agent.ToolContext{Workspace: ws, Profile: p}
		before := snapshotTree(t, ws)
		for _, path := range []string{"a.txt", "new.txt", "docs/new.md"} {
			_, err := callBuiltin(t, tc, "fs.write", map[string]any{"path": path, "content": "x"})
			assert.ErrorIs(t, err, agent.ErrDenied, "%s %s", p.Name, path)
		}
		_, err := callBuiltin(t, tc, "fs.delete", map[string]any{"path": "a.txt"})
		assert.ErrorIs(t, err, agent.ErrDenied)
		assert.Equal(t, before, snapshotTree(t, ws))
	}
}

func TestProfileReadGlobs(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"src/a.go": "package a\n", "docs/a.md": "# A\n"})
	p := agent.FSProfile{Name: "docs", Read: []string{"docs/**"}, Write: []string{"docs/**"}}
	tc := &agent.ToolContext{Workspace: ws, Profile: p}

	for _, c := range []struct{ tool, path string }{
		{"fs.read", "src/a.go"},
		{"fs.list", "src"},
		{"fs.list", "."},
	} {
		_, err := callBuiltin(t, tc, c.tool, map[string]any{"path": c.path})
		var denied *agent.DeniedError
		if assert.ErrorAs(t, err, &denied, "%s %s", c.tool, c.path) {
			assert.Contains(t, denied.Reason, `not in fsProfile "docs" read globs [docs/**]`)
		}
	}
	out, err := callBuiltin(t, tc, "fs.list", map[string]any{"path": "docs"})
	require.NoError(t, err)
	assert.Equal(t, "a.md", out)

	// The zero profile allows nothing.
	_, err = callBuiltin(t, &agent.ToolContext{Workspace: ws}, "fs.read", map[string]any{"path": "docs/a.md"})
	assert.ErrorIs(t, err, agent.ErrDenied)
}

// A path that does not look at the filesystem must not say what exists.
func TestPathDenialRevealsNothing(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTestTree(t, ws, map[string]string{"src/a.go": "package a\n"})
	tc := &agent.ToolContext{Workspace: ws, Profile: agent.FSProfile{Name: "docs", Read: []string{"docs/**"}}}
	_, errExists := callBuiltin(t, tc, "fs.read", map[string]any{"path": "src/a.go"})
	_, errMissing := callBuiltin(t, tc, "fs.read", map[string]any{"path": "src/b.go"})
	var d1, d2 *agent.DeniedError
	require.True(t, errors.As(errExists, &d1) && errors.As(errMissing, &d2))
	assert.Equal(t, d1.Reason, d2.Reason)
}
