package assets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestEveryProblemQuotesAHugeValueShort: whichever check reports a 1 MB
// value (a kind, a step id, type or target, an unknown key, a template
// root), its problem quotes 64 bytes of it and its length, and a value
// echoed unquoted (a template as written) is cut in the middle.
func TestEveryProblemQuotesAHugeValueShort(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("a", 1<<20)
	const step = "spec: {type: deterministic, action: echo, config: {}}"
	for _, tc := range []struct {
		name, yaml string
	}{
		{"kind", "schemaVersion: 2\nkind: " + huge + "\nmetadata: {name: j}\nspec: {}\n"},
		{"step id", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: \"a " + huge + "\"\n      " + step + "\n"},
		{"type", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: a\n      spec: {type: " + huge + "}\n"},
		{"target", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: a\n      target: " + huge + "\n"},
		{"unknown key", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  ? " + huge + "\n  : 1\n  steps:\n    - id: a\n      " + step + "\n"},
		{"template root", "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: a\n      spec: {type: deterministic, action: echo, config: {x: \"{{ " + huge + " }}\"}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := assets.ParseJob("big.yaml", []byte(tc.yaml), nil)
			require.Error(t, err)
			assert.Less(t, len(err.Error()), 1000, "%.2000s", err.Error())
			assert.Contains(t, err.Error(), "big.yaml:")
			assert.Contains(t, err.Error(), strings.Repeat("a", 60)+`"… (`)
			assert.Contains(t, err.Error(), " bytes")
		})
	}
}

// TestQuoteCutsAtACharacter: Quote keeps short values whole and cuts long
// ones at a character boundary.
func TestQuoteCutsAtACharacter(t *testing.T) {
	t.Parallel()
	assert.Equal(t, `"short"`, assets.Quote("short"))
	assert.Equal(t, `"`+strings.Repeat("é", 32)+`"… (200 bytes)`, assets.Quote(strings.Repeat("é", 100)))
	assert.Equal(t, `"x`+strings.Repeat("é", 31)+`"… (201 bytes)`, assets.Quote("x"+strings.Repeat("é", 100)))
}

// FuzzProblemsAreBounded: whatever a job file holds, each problem reported
// for it is one bounded line: a path of at most 256 bytes and a reason of
// at most 512 (quoted values 64) around the file name and line.
func FuzzProblemsAreBounded(f *testing.F) {
	long := strings.Repeat("z", 2000)
	for _, seed := range []string{
		"kind: " + long,
		"schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: a\n      target: " + long + "\n",
		"schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  ? " + long + "\n  : 1\n",
		"schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: a\n      spec: {type: deterministic, action: echo, config: {x: \"{{ " + long + " }}\"}}\n",
		"\"" + long + "\\\"",
		long,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := assets.ParseJob("f.yaml", data, nil)
		var aerr *assets.Error
		if !errors.As(err, &aerr) {
			return
		}
		for _, p := range aerr.Problems {
			if n := len(p.String()); n > 1024 {
				t.Fatalf("a problem of %d bytes: %.300s", n, p.String())
			}
		}
	})
}
