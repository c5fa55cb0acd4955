package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/mcp"
)

// live is an engine running in the test process on a project of the built
// binary, with one task: the test registers attempts on the engine itself
// and reaches it from subprocesses of the binary, as a CLI agent would.
type live struct {
	t    *testing.T
	p    *testkit.Project
	e    *engine.Engine
	url  string
	task string
}

func startLive(t *testing.T) *live {
	t.Helper()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Open(ctx, engine.Config{Root: p.Root, Listen: "127.0.0.1:0", RefusalWindow: refusalWindow})
	if err != nil {
		cancel()
		t.Fatalf("opening the engine: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		e.Close()
		// IMPORTANT: engine.json names this process: the project's own
		// cleanup would signal it.
		_ = os.Remove(filepath.Join(engine.StateDir(p.Root), "engine.json"))
	})
	var info *engine.Info
	deadline := time.Now().Add(30 * time.Second)
	for {
		if info, err = engine.ReadInfo(p.Root); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine did not serve within 30s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	repo := testkit.NewGitRepo(t, map[string]string{"README.md": "# x\n"})
	plan := "checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"
	r := p.Orbit("task", "create", "--title", "T", "--plan", p.WriteFile("plan.yaml", plan), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	return &live{t: t, p: p, e: e, url: info.URL, task: strings.TrimSpace(r.Stdout)}
}

// env is what a CLI agent's environment tells orbit about its attempt.
func (l *live) env(token string) []string {
	return []string{
		"ORBIT_NATS_URL=" + l.url,
		"ORBIT_NKEY=" + events.CredsFile(engine.CredsDir(l.p.Root), events.IdentityClient),
		"ORBIT_TASK_ID=" + l.task,
		"ORBIT_ATTEMPT_TOKEN=" + token,
	}
}

// register opens attempt a of task on the engine, until the test ends.
func (l *live) register(task string, a events.Attempt) *groundhog.Scope {
	l.t.Helper()
	s, err := l.e.Attempts().Register(task, a)
	require.NoError(l.t, err)
	l.t.Cleanup(func() { l.e.Attempts().Unregister(s) })
	return s
}

// dayOne opens the task's first attempt, at checkpoint one, on day 1.
func (l *live) dayOne() *groundhog.Scope {
	l.t.Helper()
	return l.register(l.task, events.Attempt{Checkpoint: "one", Attempt: 1, Day: 1})
}

// scope is the scope a CLI agent of the attempt s is started in.
func (l *live) scope(s *groundhog.Scope) mcp.Scope {
	return mcp.Scope{
		Binary:   l.p.Bin,
		NATSURL:  l.url,
		NKeyFile: events.CredsFile(engine.CredsDir(l.p.Root), events.IdentityClient),
		TaskID:   l.task,
		Token:    s.Token,
	}
}

// client starts `orbit mcp` with the attempt's environment and connects
// an MCP client to it.
func (l *live) client(token string) *sdk.ClientSession {
	l.t.Helper()
	return l.connect(l.env(token))
}

// connect starts `orbit mcp` with env added to the project's environment
// and connects an MCP client to it, until the test ends.
func (l *live) connect(env []string) *sdk.ClientSession {
	l.t.Helper()
	cmd := l.p.Command("mcp")
	cmd.Dir = l.t.TempDir()
	cmd.Env = append(cmd.Env, env...)
	c := sdk.NewClient(&sdk.Implementation{Name: "orbit-test", Version: "1"}, nil)
	cs, err := c.Connect(testkit.Context(l.t), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(l.t, err)
	l.t.Cleanup(func() { cs.Close() })
	return cs
}

// refusals returns the groundhog.verb_refused events of the task.
func (l *live) refusals() []events.GroundhogVerbRefusedData {
	l.t.Helper()
	evs, err := l.e.Log().Read(testkit.Context(l.t), events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateTask, l.task, events.GroundhogVerbRefused)}})
	require.NoError(l.t, err)
	out := make([]events.GroundhogVerbRefusedData, len(evs))
	for i, ev := range evs {
		require.NoError(l.t, json.Unmarshal(ev.Data, &out[i]))
	}
	return out
}

// refusalWindow is the engine's window for coalescing refused verbs in
// these tests: short, so that a test sees the count of a window soon.
const refusalWindow = 200 * time.Millisecond

// settledRefusals waits until the refusal events of the task count n
// refused verbs (one each, or a coalesced event's Count) and returns them.
func (l *live) settledRefusals(n int) []events.GroundhogVerbRefusedData {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, counted := l.refusals(), 0
		for _, r := range got {
			counted += max(r.Count, 1)
		}
		if counted >= n || time.Now().After(deadline) {
			require.Equal(l.t, n, counted, "refused verbs on record: %+v", got)
			return got
		}
		time.Sleep(refusalWindow / 4)
	}
}

// rawRefusals returns the refusal events as stored, to look for tokens.
func (l *live) rawRefusals() string {
	l.t.Helper()
	evs, err := l.e.Log().Read(testkit.Context(l.t), events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateTask, l.task, events.GroundhogVerbRefused)}})
	require.NoError(l.t, err)
	raw, err := json.Marshal(evs)
	require.NoError(l.t, err)
	return string(raw)
}

// call calls an MCP tool and returns its text and whether it is an error.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(testkit.Context(t), &sdk.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n"), res.IsError
}
