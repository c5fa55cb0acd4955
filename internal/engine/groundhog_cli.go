package engine

import (
	"fmt"
	"os"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/mcp"
)

// groundhogCLI is what the engine's Groundhog attempts on a CLI agent
// need: its attempt registry, and an --mcp-config that starts this very
// executable as `orbit mcp`, on the engine's NATS URL, signing in with
// clientSeed (the project's client identity, or the --nkey file an
// external server admits the engine with).
func (e *Engine) groundhogCLI(clientSeed string) *groundhog.CLIBackend {
	scope := func(taskID, token string) (mcp.Scope, error) {
		bin, err := os.Executable()
		if err != nil {
			return mcp.Scope{}, fmt.Errorf("the orbit executable for orbit mcp: %w", err)
		}
		return mcp.Scope{Binary: bin, NATSURL: e.log.ClientURL(), NKeyFile: clientSeed, TaskID: taskID, Token: token}, nil
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

// clientSeed is the seed a CLI agent's `orbit mcp` signs in with: the
// project's client identity on the embedded server, the engine's own
// --nkey file on an external one that admits it.
func clientSeed(cfg Config, creds *events.Creds) string {
	if cfg.NATSURL != "" && cfg.NKeySeedFile != "" {
		return cfg.NKeySeedFile
	}
	return creds.File(events.IdentityClient)
}
