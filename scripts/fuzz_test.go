package scripts_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestFuzzScriptFindsEveryTarget: scripts/fuzz.sh fuzzes every Fuzz
// function declared in the module's test files, so a new target is never
// silently left out.
func TestFuzzScriptFindsEveryTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the fuzz targets with go test, building their packages' tests")
	}
	root := testkit.ModuleRoot(t)
	var declared []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				declared = append(declared, fn.Name.Name)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, declared)

	out, err := exec.Command(filepath.Join(root, "scripts", "fuzz.sh"), "--list").Output()
	require.NoError(t, err, "fuzz.sh --list")
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		_, target, ok := strings.Cut(line, " ")
		require.True(t, ok, "a line is a package and a target: %q", line)
		listed = append(listed, target)
	}
	sort.Strings(declared)
	sort.Strings(listed)
	assert.Equal(t, declared, listed)
}
