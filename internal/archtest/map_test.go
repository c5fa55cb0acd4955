package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mapMaxLines is how long ARCHITECTURE.md may grow: it is the map, and
// each area's records live in docs/architecture/.
const mapMaxLines = 400

// TestTheMapNamesEveryPackage: ARCHITECTURE.md stays within mapMaxLines,
// and the first column of its package table names every package of the
// layers, so a newcomer finds each package on the map.
func TestTheMapNamesEveryPackage(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "ARCHITECTURE.md"))
	require.NoError(t, err)
	text := string(data)
	assert.LessOrEqual(t, strings.Count(text, "\n"), mapMaxLines, "ARCHITECTURE.md's lines: move a record into docs/architecture/")

	_, packages, ok := strings.Cut(text, "\n## Packages\n")
	require.True(t, ok, "ARCHITECTURE.md has no section ## Packages")
	packages, _, _ = strings.Cut(packages, "\n## ")
	named := map[string]bool{}
	code := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(packages, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			named[strings.TrimSuffix(m[1], "/")] = true
		}
	}
	for dir := range layers {
		assert.True(t, named[dir], "ARCHITECTURE.md's package table does not name %s", dir)
	}
}
