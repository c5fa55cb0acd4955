package mcp_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
)

// orbitAs runs the binary with an attempt's environment.
func (l *live) orbitAs(token string, args ...string) testkit.Result {
	l.t.Helper()
	cmd := l.p.Command(args...)
	cmd.Dir = l.t.TempDir()
	cmd.Env = append(cmd.Env, l.env(token)...)
	return runCmd(l.t, cmd)
}

// TestGroundhogVerbCommands: the verbs as plain commands reach the open
// attempt's session with the token from ORBIT_ATTEMPT_TOKEN (exit 0, the
// session's answer on stdout); a missing or foreign token exits 1 with
// the reason, and the refusals are recorded; bad flags exit 2 and send
// nothing.
func TestGroundhogVerbCommands(t *testing.T) {
	t.Parallel()
	l := startLive(t)
	s := l.dayOne()

	got := session(t, s, 4)
	r := l.orbitAs(s.Token, "groundhog", "side-effect", "--kind", "git_commit", "--target", "main", "--irreversible")
	require.Equal(t, 0, r.Code, r.String())
	require.Equal(t, "Recorded.\n", r.Stdout)
	r = l.orbitAs(s.Token, "groundhog", "failure", "--what-happened", "the build broke", "--next-attempt-plan", "pin the compiler")
	require.Equal(t, 0, r.Code, r.String())
	r = l.orbitAs(s.Token, "groundhog", "success", "--summary", "done", "--side-effect", "file_delete:old.txt:irreversible")
	require.Equal(t, 0, r.Code, r.String())
	r = l.orbitAs(s.Token, "groundhog", "success", "--summary", "done again")
	require.Equal(t, 0, r.Code, r.String())
	require.Equal(t, []received{
		{verb: groundhog.VerbSideEffect, input: map[string]any{"kind": "git_commit", "target": "main", "reversible": false}},
		{verb: groundhog.VerbFailure, input: map[string]any{"what_tried": "", "what_happened": "the build broke", "next_attempt_plan": "pin the compiler"}},
		{verb: groundhog.VerbSuccess, input: map[string]any{"summary": "done", "side_effects": []any{map[string]any{"kind": "file_delete", "target": "old.txt", "reversible": false}}}},
		{verb: groundhog.VerbSuccess, input: map[string]any{"summary": "done again", "side_effects": []any{}}},
	}, <-got)

	for _, tc := range []struct {
		name, token, reason string
	}{
		{"missing", "", groundhog.ErrTokenMissing.Error()},
		{"foreign", strings.Repeat("ab", 32), groundhog.ErrTokenForeign.Error()},
	} {
		r := l.orbitAs(tc.token, "groundhog", "success", "--summary", "done")
		require.Equal(t, 1, r.Code, "%s: %s", tc.name, r)
		require.Contains(t, r.Stderr, "refused: "+tc.reason, tc.name)
	}
	refusals := l.settledRefusals(2)
	require.Equal(t, "orbit groundhog", refusals[0].By)

	for _, args := range [][]string{
		{"groundhog", "side-effect", "--kind", "file_write", "--target", "x", "extra"},
		{"groundhog", "success", "--summary", "s", "--side-effect", "no-target"},
		{"groundhog", "success", "--summary", "s", "--side-effect", "git_commit::irreversible"},
		{"groundhog", "failure", "--bogus"},
	} {
		r := l.orbitAs(s.Token, args...)
		require.Equal(t, 2, r.Code, "%v: %s", args, r)
	}
	// A task the log does not know: nothing can be recorded under it, so
	// the verb is a usage error, not a refusal on record.
	for _, task := range []string{"", "no-such-task"} {
		cmd := l.p.Command("groundhog", "success", "--summary", "s")
		cmd.Env = append(cmd.Env, l.env(s.Token)...)
		cmd.Env = append(cmd.Env, "ORBIT_TASK_ID="+task)
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "%q: %s", task, out)
		require.Equal(t, 2, exitErr.ExitCode(), "%q: %s", task, out)
	}
	l.settledRefusals(2)

	select {
	case c := <-s.Calls():
		t.Fatalf("a refused or malformed verb reached the attempt: %s", c.Verb)
	default:
	}
}
