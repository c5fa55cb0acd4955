package assets_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// TestDurationsAreBoundedAtLoad: every timeout, backoff and wall clock of
// a job, an activity and the config is refused past ten years, naming the
// file, the line, the path and the bound; a time.Duration would overflow
// past 292 years and a wait would time out at once. Ten years exactly is
// accepted.
func TestDurationsAreBoundedAtLoad(t *testing.T) {
	t.Parallel()
	secs, ms := fmt.Sprint(assets.MaxDurationSeconds), fmt.Sprint(assets.MaxDurationMS)
	over := func(s string) []string {
		return []string{fmt.Sprint(mustAtoi(t, s) + 1), "10000000000000", "99999999999999999999999"}
	}
	job := func(step string) string {
		return "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n" + step
	}
	cases := []struct {
		name, path, max string
		parse           func(v string) error
	}{
		{"wait", "spec.steps[0].wait.timeout_seconds", secs, func(v string) error {
			_, err := assets.ParseJob("j.yaml", []byte(job("    - id: approve\n      wait: {signal: ok, timeout_seconds: "+v+"}\n")), nil)
			return err
		}},
		{"step", "spec.steps[0].timeout_seconds", secs, func(v string) error {
			_, err := assets.ParseJob("j.yaml", []byte(job("    - id: s\n      timeout_seconds: "+v+"\n      spec: {type: deterministic, action: echo}\n")), nil)
			return err
		}},
		{"initial backoff", "spec.steps[0].retry.initial_backoff_ms", ms, func(v string) error {
			_, err := assets.ParseJob("j.yaml", []byte(job("    - id: s\n      retry: {max_attempts: 2, initial_backoff_ms: "+v+", backoff_cap_ms: "+ms+"}\n      spec: {type: deterministic, action: echo}\n")), nil)
			return err
		}},
		{"backoff cap", "spec.steps[0].retry.backoff_cap_ms", ms, func(v string) error {
			_, err := assets.ParseJob("j.yaml", []byte(job("    - id: s\n      retry: {max_attempts: 2, backoff_cap_ms: "+v+"}\n      spec: {type: deterministic, action: echo}\n")), nil)
			return err
		}},
		{"shell timeout", "spec.timeout_seconds", secs, func(v string) error {
			_, err := assets.ParseActivity("a.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\nspec: {type: shell, program: sh, allowed_programs: [sh], timeout_seconds: "+v+"}\n"))
			return err
		}},
		{"agent wall clock", "spec.wall_clock_timeout_seconds", secs, func(v string) error {
			_, err := assets.ParseActivity("a.yaml", []byte("schemaVersion: 2\nkind: Activity\nmetadata: {name: a}\nspec: {type: agent_loop, instruction: hi, wall_clock_timeout_seconds: "+v+"}\n"))
			return err
		}},
		{"idle timeout", "engine.idle_timeout_seconds", secs, func(v string) error {
			_, err := assets.ParseConfig("config.yaml", []byte("engine: {idle_timeout_seconds: "+v+"}\n"))
			return err
		}},
		{"ack wait", "engine.ack_wait_seconds", secs, func(v string) error {
			_, err := assets.ParseConfig("config.yaml", []byte("engine: {ack_wait_seconds: "+v+"}\n"))
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.parse(c.max), "ten years is accepted")
			for _, v := range over(c.max) {
				err := c.parse(v)
				require.ErrorIs(t, err, assets.ErrInvalid, v)
				file := "j.yaml"
				if strings.HasPrefix(c.path, "engine.") {
					file = "config.yaml"
				} else if !strings.HasPrefix(c.path, "spec.steps") {
					file = "a.yaml"
				}
				assert.Regexp(t, `^`+regexp.QuoteMeta(file)+`:\d+: `+regexp.QuoteMeta(c.path+": must be at most "+c.max+" (ten years)")+`$`, err.Error(), v)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	var v int64
	_, err := fmt.Sscan(s, &v)
	require.NoError(t, err)
	return v
}
