package engine

import (
	"log/slog"
	"path/filepath"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/sandbox"
)

// agentSandbox is what the engine's CLI agents do not see: the whole state
// directory (the nkey seeds and the log key in creds/, the NATS store with
// the log and the command queue, the views, engine.json, engine.log), and
// the --log-key and --nkey files wherever they are. The agent identity's
// seed stays readable at its own path: `orbit mcp` signs in with it, and
// it is worth no more than the verbs (events.IdentityAgent).
//
// It logs a warning when the machine cannot sandbox a program: the agents
// then run as before, which their records say (sandbox: none).
func agentSandbox(cfg Config, creds *events.Creds, logger *slog.Logger) *sandbox.Policy {
	state := StateDir(cfg.Root)
	p := &sandbox.Policy{Hide: []string{state}, Keep: []string{creds.File(events.IdentityAgent)}}
	for _, f := range []string{cfg.LogKeyFile, cfg.NKeySeedFile} {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			p.Hide = append(p.Hide, abs)
		}
	}
	if ok, why := sandbox.Available(); !ok {
		logger.Warn("CLI agents run without a sandbox: an agent with a shell can read the engine's keys in "+state, "reason", why)
	}
	return p
}
