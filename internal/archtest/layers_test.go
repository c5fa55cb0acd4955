package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/orbitrun/orbit/"

// layers lists, for every package of the module, the packages of ours its
// code (not its tests) may import, from the ground floor up. A package
// that is not listed fails the test: a new package takes its place in the
// layers when it is made.
var layers = map[string][]string{
	// The ground floor: no imports of ours but the crash tests' failpoints.
	"assets":             nil,
	"events":             {"internal/failpoint"},
	"gitops":             nil,
	"internal/failpoint": nil,
	"internal/lease":     {"events", "internal/proc"},
	"internal/proc":      nil,
	"internal/sandbox":   nil,

	// Over the log and the assets.
	"projector":   {"events", "internal/failpoint"},
	"tracing":     {"events", "internal/failpoint"},
	"interpreter": {"assets", "events"},
	"agent":       {"assets", "events", "internal/proc", "internal/sandbox"},

	// Groundhog runs an agent through a checkpoint plan; mcp offers its
	// verbs to a CLI agent.
	"groundhog": {"agent", "assets", "events", "gitops", "internal/failpoint", "internal/proc", "internal/sandbox", "projector"},
	"mcp":       {"groundhog"},

	// The workers with their activities, over the interpreter, the agents
	// and Groundhog; the orchestration over the workers (it validates jobs
	// against their actions and releases a finished run's reservations).
	"activity": {"agent", "assets", "events", "groundhog", "internal/failpoint", "internal/lease", "internal/proc", "internal/sandbox", "interpreter"},
	"executor": {"activity", "assets", "events", "internal/failpoint", "internal/lease", "interpreter"},

	// Capabilities built on runs.
	"shipping": {"activity", "assets", "events", "executor", "gitops", "projector"},
	"routine":  {"assets", "events", "executor", "internal/failpoint"},

	// Retention: archives and removes finished work from the log.
	"retention": {"assets", "events", "internal/failpoint", "internal/lease", "projector"},

	// The engine's wiring, and what stands on it.
	"engine":    {"activity", "agent", "assets", "events", "executor", "groundhog", "internal/failpoint", "internal/proc", "internal/sandbox", "mcp", "projector", "retention", "routine", "shipping", "tracing"},
	"doctor":    {"assets", "engine", "events", "gitops", "internal/sandbox"},
	"console":   {"engine", "events", "gitops", "projector"},
	"cmd/orbit": {"activity", "agent", "assets", "console", "doctor", "engine", "events", "executor", "gitops", "groundhog", "internal/proc", "internal/sandbox", "mcp", "projector", "retention", "routine", "shipping", "tracing"},

	// The test kit, and packages of tests alone.
	"internal/testkit":           {"events"},
	"internal/runrig":            {"activity", "assets", "events", "executor", "internal/testkit", "interpreter", "projector"},
	"internal/cmd/scriptedmodel": {"internal/testkit"},
	"internal/cmd/benchpeers":    {"assets", "engine", "events", "executor"},
	"internal/compat":            nil,
	"internal/bench":             nil,
	"internal/chaos":             nil,
	"internal/soak":              nil,
	"internal/archtest":          nil,
	"scripts":                    nil,
}

// pkg is what the test reads of one package directory.
type pkg struct {
	doc     bool            // a file that is not a test has a package comment
	imports map[string]bool // the imports of ours of its files that are not tests
}

// readPackages parses the package clause, comment and imports of every Go
// file of the module (not testdata, not the CLI agents' node_modules, not
// a module nested in it, such as internal/bench/peers).
func readPackages(t *testing.T) map[string]*pkg {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module's root is two levels up")
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || name == "tools" && filepath.Dir(path) == root {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkg{imports: map[string]bool{}}
			pkgs[rel] = p
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			p.doc = true
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if strings.HasPrefix(path, module) {
				p.imports[strings.TrimPrefix(path, module)] = true
			}
		}
		return nil
	})
	require.NoError(t, err)
	return pkgs
}

// TestEveryPackageSaysWhatItIsFor: go doc of every package prints a
// package comment, so a newcomer learns what a package is for without
// reading its code.
func TestEveryPackageSaysWhatItIsFor(t *testing.T) {
	t.Parallel()
	pkgs := readPackages(t)
	require.NotEmpty(t, pkgs)
	var missing []string
	for dir, p := range pkgs {
		if !p.doc {
			missing = append(missing, dir)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "packages without a package comment on a file that is not a test (go doc prints nothing for them): add one, in a doc.go when it is long")
}

// TestImportsGoDownTheLayers: every package imports only the packages of
// ours that layers allows it, so the layers of ARCHITECTURE.md hold.
func TestImportsGoDownTheLayers(t *testing.T) {
	t.Parallel()
	pkgs := readPackages(t)
	for dir, p := range pkgs {
		allowed, listed := layers[dir]
		if !assert.True(t, listed, "package %s is not in layers (internal/archtest/layers_test.go): give it its place", dir) {
			continue
		}
		for imp := range p.imports {
			assert.True(t, slices.Contains(allowed, imp), "package %s imports %s, which is not below it in the layers (internal/archtest/layers_test.go)", dir, imp)
		}
	}
	for dir := range layers {
		assert.Contains(t, pkgs, dir, "layers lists %s, which is not a package of the module", dir)
	}
}
