package engine

import (
	"cmp"
	"fmt"
	"os"

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
		bin, err := os.Executable()
		if err != nil {
			return mcp.Scope{}, fmt.Errorf("the orbit executable for orbit mcp: %w", err)
		}
		s := mcp.Scope{Binary: bin, NATSURL: e.log.ClientURL(), NKeyFile: agentSeed, TaskID: taskID, Token: token}
		if f := e.clientTLS(); f != nil {
			s.TLSCA, s.TLSCert, s.TLSKey = f.CA, f.Cert, f.Key
		}
		return s, nil
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
