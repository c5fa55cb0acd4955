package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// readmeMaxLines is how long the README may grow: a newcomer reads it in
// ten minutes, and the reference lives in docs/.
const readmeMaxLines = 300

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	// repoPathRE is a code span that names a file of the repository by
	// its path: a Go, Markdown, YAML, JSON or shell file, or a directory
	// (a trailing /), as `agent/cli_stream_test.go` or `./internal/bench/`.
	repoPathRE = regexp.MustCompile("`(?:\\./)?((?:[\\w-][\\w.-]*/)+(?:[\\w.-]+\\.(?:go|md|yaml|json|sh))?)`")
)

// TestTheDocsLinksResolve: every relative link of README.md and docs/*.md
// names a file that exists and, with a #fragment, a heading of it; every
// path of the repository they name in a code span exists (a package
// moved, its docs follow); the README links every page of docs/ and stays
// within readmeMaxLines.
func TestTheDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root := testkit.ModuleRoot(t)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		anchors[path] = headingAnchors(string(data))
		return anchors[path]
	}
	topLevel := map[string]bool{}
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		topLevel[e.Name()] = e.IsDir() && !strings.HasPrefix(e.Name(), ".")
	}
	linked := map[string]bool{}
	for _, file := range docFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		for _, line := range proseLines(string(data)) {
			n := line.n
			for _, m := range repoPathRE.FindAllStringSubmatch(line.text, -1) {
				if !topLevel[strings.SplitN(m[1], "/", 2)[0]] {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
					t.Errorf("%s:%d: %s names no file of the repository", file, n, m[1])
				}
			}
			for _, m := range linkRE.FindAllStringSubmatch(line.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				abs := filepath.Join(root, file)
				if path != "" {
					abs = filepath.Join(root, filepath.Dir(file), path)
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s:%d: the link %s names no file", file, n, target)
					continue
				}
				if file == "README.md" {
					linked[abs] = true
				}
				if frag != "" && !anchorsOf(abs)[frag] {
					t.Errorf("%s:%d: the link %s names no heading of %s", file, n, target, filepath.Base(abs))
				}
			}
		}
	}
	for _, file := range docFiles(t, root)[1:] {
		assert.True(t, linked[filepath.Join(root, file)], "the README links %s", file)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	assert.LessOrEqual(t, strings.Count(string(readme), "\n"), readmeMaxLines, "README.md's lines: move reference material into docs/")
}

// proseLine is a line of a Markdown file outside its fenced blocks.
type proseLine struct {
	n    int // from 1
	text string
}

// proseLines returns a Markdown file's lines, in order, leaving out those
// of fenced blocks.
func proseLines(data string) []proseLine {
	var lines []proseLine
	fenced := false
	for i, line := range strings.Split(data, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, proseLine{i + 1, line})
		}
	}
	return lines
}

// headingAnchors returns the fragments GitHub gives a file's headings:
// lower case, punctuation dropped but for - and _, spaces as -, and -1,
// -2 … after a repeated one.
func headingAnchors(data string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(data) {
		m := headingRE.FindStringSubmatch(line.text)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}
