package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/internal/testkit"
)

// withSettings gives cmd exactly the provider settings kv (NAME=value),
// whatever the test process has.
func withSettings(cmd *exec.Cmd, kv ...string) *exec.Cmd {
	cmd.Env = slices.DeleteFunc(cmd.Env, func(e string) bool {
		name, _, _ := strings.Cut(e, "=")
		return slices.ContainsFunc(agent.Settings(), func(s agent.Setting) bool { return s.Name == name })
	})
	cmd.Env = append(cmd.Env, kv...)
	return cmd
}

// serveLogged starts `orbit serve` and returns, once the engine has said
// which provider settings it has, a function that returns all it has
// written to stderr so far.
func serveLogged(t *testing.T, cmd *exec.Cmd) func() string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var mu sync.Mutex
	var out strings.Builder
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !signalled && strings.Contains(sc.Text(), "provider settings") {
				close(ready)
				signalled = true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("orbit serve did not start")
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}

// TestAgentRunsWarnWhenTheEngineHasOtherSettings: the provider settings of
// an engine are those of the environment it started in. engine.json and
// `orbit serve` say which it has (never a key's value), and `orbit job run`
// of a job with agent steps says, a line a setting, where its own shell
// differs and how to fix it; a job without agent steps, or a shell that
// agrees with the engine, gets no warning.
func TestAgentRunsWarnWhenTheEngineHasOtherSettings(t *testing.T) {
	t.Parallel()
	const engineKey, hereKey = "sk-engine-secret-0123456789", "sk-here-secret-9876543210"
	p := testkit.NewProject(t)
	config := filepath.Join(p.Root, ".orbit", "config.yaml")
	data, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(config, append(data, "providers:\n  claude: {api_key_env: MY_CLAUDE_KEY}\n"...), 0o644))
	engineEnv := []string{"OPENAI_API_KEY=" + engineKey, "ANTHROPIC_BASE_URL=http://engine.example"}
	logged := serveLogged(t, withSettings(p.Command("serve", "--listen", "127.0.0.1:0"), engineEnv...))

	assert.Contains(t, logged(), `set="ANTHROPIC_BASE_URL=http://engine.example OPENAI_API_KEY"`)
	assert.NotContains(t, logged(), engineKey)
	info, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
	require.NoError(t, err)
	assert.Contains(t, string(info), `"name": "OPENAI_API_KEY",
      "set": true,
      "secret": true
    }`)
	assert.Contains(t, string(info), `"name": "ANTHROPIC_API_KEY",
      "set": false,`)
	assert.Contains(t, string(info), `"value": "http://engine.example"`)
	assert.NotContains(t, string(info), engineKey)

	run := func(job string, env ...string) testkit.Result {
		t.Helper()
		cmd := withSettings(p.Command("job", "run", job), env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return testkit.Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
	}
	hereEnv := []string{"ANTHROPIC_API_KEY=" + hereKey, "ANTHROPIC_BASE_URL=http://here.example"}
	r := run("example_agent", append(hereEnv, "MY_CLAUDE_KEY="+hereKey)...)
	require.Equal(t, 0, r.Code, r.String())
	var warnings []string
	for _, line := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(line, "warning: ") {
			warnings = append(warnings, line)
		}
	}
	assert.Equal(t, []string{
		"warning: ANTHROPIC_API_KEY is set here but not set in the engine; the job's agent steps use the engine's",
		`warning: ANTHROPIC_BASE_URL is "http://here.example" here but "http://engine.example" in the engine; the job's agent steps use the engine's`,
		"warning: OPENAI_API_KEY is not set here but set in the engine; the job's agent steps use the engine's",
		"warning: MY_CLAUDE_KEY is set here but not set in the engine; the job's agent steps use the engine's",
	}, warnings, r.Stderr)
	assert.Contains(t, r.Stderr, "hint: the engine (orbit serve, pid ")
	assert.Contains(t, r.Stderr, "restart orbit serve with these settings")
	assert.NotContains(t, r.Stderr, hereKey)
	assert.NotContains(t, r.Stderr, engineKey)

	r = run("hello", hereEnv...)
	require.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stderr, "warning:", "a job without agent steps is not concerned")

	r = run("example_agent", "OPENAI_API_KEY=another-key-of-the-same-kind", "ANTHROPIC_BASE_URL=http://engine.example")
	require.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stderr, "warning:", "the shell agrees with the engine (keys: set in both)")
}

// TestGroundhogRunWarnsWhenTheEngineHasOtherSettings: `orbit groundhog
// run` warns as `orbit job run` does, and says how to restart the
// background engine.
func TestGroundhogRunWarnsWhenTheEngineHasOtherSettings(t *testing.T) {
	t.Parallel()
	p, _, task := groundhogProject(t, readExample(t, "fixture.json"), readExample(t, "plan.yaml"))
	pid := p.EnginePID()
	require.NotZero(t, pid)
	cmd := withSettings(p.Command("groundhog", "run", task))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Contains(t, stderr.String(), `warning: ORBIT_REPLAY_FIXTURE is not set here but "`+filepath.Join(p.Root, "fixture.json")+`" in the engine; the job's agent steps use the engine's`)
	assert.Contains(t, stderr.String(), "hint: the background engine (pid ")
	assert.Contains(t, stderr.String(), "orbit engine restart starts one with this shell's settings")
}
