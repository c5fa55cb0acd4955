package projector

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unmarshal reuses its decoders: whatever one value leaves behind (bytes
// after it, a syntax error, a truncated value) must not reach the next, and
// numbers in untyped values stay json.Number, as with a new decoder.
func TestUnmarshalReusedDecodersSeeOnlyTheirValue(t *testing.T) {
	t.Parallel()
	values := []struct {
		data    string
		want    map[string]any
		wantErr bool
	}{
		{data: `{"a":1}`, want: map[string]any{"a": json.Number("1")}},
		{data: `{"b":2} {"leftover":true}`, want: map[string]any{"b": json.Number("2")}},
		{data: `{"c":12345678901234567890}`, want: map[string]any{"c": json.Number("12345678901234567890")}},
		{data: `{"d":`, wantErr: true},
		{data: `{"e":"x"}`, want: map[string]any{"e": "x"}},
		{data: `{"f" 1}`, wantErr: true},
		{data: `{"g":[1,2]}` + "\n", want: map[string]any{"g": []any{json.Number("1"), json.Number("2")}}},
		{data: `{"h":null}`, want: map[string]any{"h": nil}},
	}
	// Twice over, so that each value follows every kind of value before it
	// in a decoder that may have been reused.
	for range 2 {
		for _, v := range values {
			var got map[string]any
			err := unmarshal([]byte(v.data), &got)
			if v.wantErr {
				assert.Error(t, err, v.data)
				continue
			}
			require.NoError(t, err, v.data)
			assert.Equal(t, v.want, got, v.data)
		}
	}
}
