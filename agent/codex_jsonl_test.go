package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCodexJSONLRecordedStreams reads what the real Codex printed
// (testdata/cli): a reconnect it recovered from is not a failure; a failed
// turn is.
func TestCodexJSONLRecordedStreams(t *testing.T) {
	for file, want := range map[string]struct {
		final string
		fails bool
	}{
		"codex-text.jsonl":      {final: "the scripted answer"},
		"codex-exec.jsonl":      {final: "done"},
		"codex-recovered.jsonl": {final: "recovered"},
		"codex-api-error.jsonl": {fails: true},
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "cli", file))
			require.NoError(t, err)
			out, err := parseCLIOutput(OutputCodexJSONL, data)
			if want.fails {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want.final, out.FinalMessage)
			assert.Equal(t, 1, out.Turns)
		})
	}
}
