package events

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRunTraceIDTakesTheCallersTraceOrDerivesOne(t *testing.T) {
	a, b := RunTraceID("01A", ""), RunTraceID("01B", "")
	assert.Len(t, a, 32)
	assert.NotEqual(t, a, b)
	assert.Equal(t, a, RunTraceID("01A", ""))
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", RunTraceID("01A", caller))
	for _, bad := range []string{"", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
		"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01"} {
		assert.Equal(t, a, RunTraceID("01A", bad), bad)
	}
}

func FuzzTraceparentTraceID(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, s string) {
		if id, ok := TraceparentTraceID(s); ok && len(id) != 32 {
			t.Fatalf("%q gave trace id %q", s, id)
		}
	})
}
