package proc_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/internal/proc"
)

// TestTailKeepsTheEnd writes the same stream in pieces of every size and
// finds the same last bytes and count as a whole buffer gives.
func TestTailKeepsTheEnd(t *testing.T) {
	t.Parallel()
	var stream bytes.Buffer
	for i := range 5000 {
		stream.WriteByte(byte('a' + i%26))
		if i%7 == 0 {
			stream.WriteByte('\n')
		}
	}
	all := stream.Bytes()
	for _, piece := range []int{1, 3, 8, 9, 15, 16, 17, 100, len(all)} {
		tail := &proc.Tail{Max: 16}
		for rest := all; len(rest) > 0; {
			n := min(piece, len(rest))
			_, _ = tail.Write(rest[:n])
			rest = rest[n:]
		}
		assert.Equal(t, string(all[len(all)-16:]), string(tail.Bytes()), "pieces of %d", piece)
		assert.Equal(t, int64(len(all)), tail.Size(), "pieces of %d", piece)
	}
	short := &proc.Tail{Max: 16}
	_, _ = short.Write([]byte("abc"))
	assert.Equal(t, "abc", string(short.Bytes()))
}
