package activity

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResponseEnvelopeParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, msg string
		want      map[string]any
	}{
		{"object", `{"a": 1}`, map[string]any{"a": float64(1)}},
		{"padded", "\n  {\"a\": \"x\"}\n", map[string]any{"a": "x"}},
		{"fenced", "```json\n{\"blocking\": 0}\n```", map[string]any{"blocking": float64(0)}},
		{"bare fence", "```\n{}\n```", map[string]any{}},
		{"prose", "reviewed: blocking=0", nil},
		{"array", `[1]`, nil},
		{"null", `null`, nil},
		{"unclosed fence", "```json\n{}", nil},
		{"prose around json", `Here: {"a": 1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := responseEnvelope(tt.msg)
			assert.Equal(t, tt.want != nil, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzResponseEnvelope(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", "```", "``````", "null", "prose", "{\"a\":[1,{\"b\":null}]}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		env, ok := responseEnvelope(msg)
		if ok != (env != nil) {
			t.Fatalf("ok %v with envelope %v", ok, env)
		}
		if ok {
			if _, err := json.Marshal(env); err != nil {
				t.Fatalf("envelope does not marshal: %v", err)
			}
		}
	})
}
