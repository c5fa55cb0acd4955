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

// TestTheDocsLinksResolve: every relative link of README.md, docs/*.md,
// ARCHITECTURE.md and the records of docs/architecture/ names a file that
// exists and, with a #fragment, a heading of it; every path of the
// repository they name in a code span exists (a package moved, its docs
// follow); the README links every page of docs/ and stays within
// readmeMaxLines.
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
	records, err := filepath.Glob(filepath.Join(root, "docs", "architecture", "*.md"))
	require.NoError(t, err)
	files := append(docFiles(t, root), "ARCHITECTURE.md")
	for _, r := range records {
		files = append(files, filepath.Join("docs", "architecture", filepath.Base(r)))
	}
	for _, file := range files {
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

var (
	// citeAfterRE is a citation of a section of a page by its title after
	// the page: docs/architecture/runs.md, "Live descendants".
	citeAfterRE = regexp.MustCompile(`((?:docs/[\w/-]+|ARCHITECTURE)\.md),?\s+"([^"]+)"`)
	// citeBeforeRE is one with the title first: "The binary" in
	// ARCHITECTURE.md.
	citeBeforeRE = regexp.MustCompile(`"([^"]+)"\s+in\s+((?:docs/[\w/-]+|ARCHITECTURE)\.md)`)
	// linkCiteRE is a Markdown link to a page followed by the title of
	// one of its sections: [runs.md](architecture/runs.md), "A title".
	linkCiteRE = regexp.MustCompile(`\]\(([^)#\s]+\.md)\),?\s+"([^"]+)"`)
)

// TestTheCitedSectionsExist: a section that the code's comments or the
// docs cite by its page and title (docs/architecture/runs.md, "Live
// descendants"; "The binary" in ARCHITECTURE.md), or that the docs cite
// after a link to its page, is a heading or a paragraph's bold title of
// that page: a record that moves takes its citations with it.
func TestTheCitedSectionsExist(t *testing.T) {
	t.Parallel()
	root := testkit.ModuleRoot(t)
	check := func(where, page, title string) {
		data, err := os.ReadFile(page)
		page, _ = filepath.Rel(root, page)
		if err != nil {
			t.Errorf("%s cites %q of %s, which does not exist", where, title, page)
			return
		}
		if !hasSection(string(data), title) {
			t.Errorf("%s cites %q of %s, which has no such heading nor bold title", where, title, page)
		}
	}
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, ".go"):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, block := range commentBlocks(string(data)) {
				for _, m := range citeAfterRE.FindAllStringSubmatch(block.text, -1) {
					check(rel+":"+strconv.Itoa(block.n), filepath.Join(root, m[1]), m[2])
				}
				for _, m := range citeBeforeRE.FindAllStringSubmatch(block.text, -1) {
					check(rel+":"+strconv.Itoa(block.n), filepath.Join(root, m[2]), m[1])
				}
			}
		case strings.HasSuffix(path, ".md"):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			text := strings.Join(strings.Fields(string(data)), " ")
			for _, m := range linkCiteRE.FindAllStringSubmatch(text, -1) {
				if !strings.Contains(m[1], "://") {
					check(rel, filepath.Join(filepath.Dir(path), m[1]), m[2])
				}
			}
			for _, m := range citeAfterRE.FindAllStringSubmatch(text, -1) {
				check(rel, filepath.Join(root, m[1]), m[2])
			}
			for _, m := range citeBeforeRE.FindAllStringSubmatch(text, -1) {
				check(rel, filepath.Join(root, m[2]), m[1])
			}
		}
		return nil
	}))
}

// commentBlocks returns the runs of // comment lines of a Go file, each
// as one line of text (the first line's number and the words joined by
// spaces), so that a citation broken across lines reads whole.
func commentBlocks(data string) []proseLine {
	var blocks []proseLine
	var words []string
	first := 0
	flush := func() {
		if len(words) > 0 {
			blocks = append(blocks, proseLine{first, strings.Join(words, " ")})
		}
		words = nil
	}
	for i, line := range strings.Split(data, "\n") {
		_, comment, ok := strings.Cut(line, "// ")
		if !ok {
			flush()
			continue
		}
		if len(words) == 0 {
			first = i + 1
		}
		words = append(words, strings.Fields(comment)...)
	}
	flush()
	return blocks
}

// hasSection reports whether a Markdown page has a heading titled title,
// or a paragraph (or list item) that opens with it in bold.
func hasSection(data, title string) bool {
	bold := regexp.MustCompile(`^(?:[-*] )?\*\*` + regexp.QuoteMeta(title) + `(?:\*\*|[ .(:,])`)
	for _, line := range proseLines(data) {
		// A heading may name its code after the title: "Group commit
		// (`events/groupcommit.go`)".
		if m := headingRE.FindStringSubmatch(line.text); m != nil {
			if h := strings.TrimSpace(m[1]); h == title || strings.HasPrefix(h, title+" (`") {
				return true
			}
		}
		if bold.MatchString(strings.TrimSpace(line.text)) {
			return true
		}
	}
	return false
}
