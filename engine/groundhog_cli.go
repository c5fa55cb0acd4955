package engine

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/mcp"
)

// groundhogCLI is what the engine's Groundhog attempts on a CLI agent
// need: its attempt registry, and an --mcp-config that starts this very
// executable as `orbit mcp`, on the engine's NATS URL, signing in with
// agentSeed (the project's agent identity: events.IdentityAgent).
func (e *Engine) groundhogCLI(agentSeed string) *groundhog.CLIBackend {
	scope := func(taskID, token string) (mcp.Scope, error) {
		s, err := e.mcpScope(agentSeed, taskID)
		s.Token = token
		return s, err
	}
	return &groundhog.CLIBackend{
		Attempts: e.attempts,
		WriteMCPConfig: func(path, taskID, token string) error {
			s, err := scope(taskID, token)
			if err != nil {
				return err
			}
			return mcp.WriteClaudeConfig(path, s)
		},
		CodexOverrides: func(taskID, token string) ([]string, []string, error) {
			s, err := scope(taskID, token)
			if err != nil {
				return nil, nil, err
			}
			args, err := mcp.CodexOverrides(s)
			return args, s.Environ(), err
		},
	}
}

// mcpScope is what a CLI agent's `orbit mcp` needs for a task, but the
// token: this very executable, the engine's NATS URL and TLS, and the
// agent identity's seed.
func (e *Engine) mcpScope(agentSeed, taskID string) (mcp.Scope, error) {
	bin, err := os.Executable()
	if err != nil {
		return mcp.Scope{}, fmt.Errorf("the orbit executable for orbit mcp: %w", err)
	}
	s := mcp.Scope{Binary: bin, NATSURL: e.log.ClientURL(), NKeyFile: agentSeed, TaskID: taskID}
	if f := e.clientTLS(); f != nil {
		s.TLSCA, s.TLSCert, s.TLSKey = f.CA, f.Cert, f.Key
	}
	return s, nil
}

// Tool names of task_summary as the CLI agents report its calls.
const (
	claudeTaskSummary = "mcp__" + mcp.ServerName + "__" + mcp.ToolTaskSummary
	codexTaskSummary  = "mcp:" + mcp.ServerName + "/" + mcp.ToolTaskSummary
)

// taskMCP gives the CLI agent of an agent step bound to a task (the
// step's task token) `orbit mcp`, which then offers task_summary: a
// --mcp-config file for Claude Code (removed by the cleanup), -c
// overrides and the variables for Codex. Its calls are recorded as
// orbit.task.summary.
func (e *Engine) taskMCP(agentSeed string) func(output, taskID, token string) (*agent.CLIMCP, func(), error) {
	return func(output, taskID, token string) (*agent.CLIMCP, func(), error) {
		s, err := e.mcpScope(agentSeed, taskID)
		if err != nil {
			return nil, nil, err
		}
		s.TaskToken = token
		if output == assets.OutputCodex {
			args, err := mcp.CodexOverrides(s)
			if err != nil {
				return nil, nil, err
			}
			return &agent.CLIMCP{CodexOverrides: args, Env: s.Environ(), Tools: map[string]string{codexTaskSummary: activity.ToolTaskSummary}},
				func() {}, nil
		}
		dir, err := os.MkdirTemp("", "orbit-task-")
		if err != nil {
			return nil, nil, fmt.Errorf("the task's MCP config: %w", err)
		}
		path := filepath.Join(dir, "mcp.json")
		if err := mcp.WriteClaudeConfig(path, s); err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, err
		}
		return &agent.CLIMCP{ConfigPath: path, Tools: map[string]string{claudeTaskSummary: activity.ToolTaskSummary}},
			func() { _ = os.RemoveAll(dir) }, nil
	}
}

// agentSeed is the seed a CLI agent's `orbit mcp` signs in with: the
// project's agent identity, which may send a verb and nothing else, on the
// embedded server and on an external one (configured with the users of
// orbit nats-config).
//
// IMPORTANT: never the client's or the engine's seed: a CLI agent can read
// whatever its `orbit mcp` reads, so the identity it signs in as is what
// the agent can do.
func agentSeed(creds *events.Creds) string {
	return creds.File(events.IdentityAgent)
}

// clientTLS is the TLS of the clients the engine starts (a CLI agent's
// orbit mcp): cfg.TLS, whose CA defaults to the listener's (its ca, else
// its certificate: one that signed itself). Nil when neither is set.
func (e *Engine) clientTLS() *events.TLSFiles {
	if e.cfg.TLS == nil && e.cfg.ListenTLS == nil {
		return nil
	}
	var f events.TLSFiles
	if e.cfg.TLS != nil {
		f = *e.cfg.TLS
	}
	if f.CA == "" && e.cfg.ListenTLS != nil {
		f.CA = cmp.Or(e.cfg.ListenTLS.CA, e.cfg.ListenTLS.Cert)
	}
	return &f
}
