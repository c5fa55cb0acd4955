package engine

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/sandbox"
)

// checkAgentAdmitted warns when the external server refuses the agent
// identity (one configured before it existed): the verbs of every CLI
// agent's `orbit mcp` would be refused.
func (e *Engine) checkAgentAdmitted(ctx context.Context, creds *events.Creds) {
	l, err := events.DialAPI(ctx, e.log.ClientURL(), events.Config{NKeySeedFile: agentSeed(creds), TLS: e.cfg.TLS, Name: "orbit-agent-check"})
	if errors.Is(err, events.ErrUnauthorized) {
		e.logger.Warn("the NATS server does not admit the agent identity, so CLI agents cannot send their verbs; configure it with the users of orbit nats-config", "seed", agentSeed(creds))
		return
	}
	if err != nil {
		e.logger.Debug("the agent identity was not checked", "err", err)
		return
	}
	l.Close()
}

// agentSandbox is what the engine's CLI agents do not see: the whole state
// directory (the nkey seeds and the log key in creds/, the NATS store with
// the log and the command queue, the views, engine.json, engine.log), and
// the --log-key and --nkey files and the private key of serve.tls
// wherever they are. The agent identity's seed stays readable at its own
// path: `orbit mcp` signs in with it, and it is worth no more than the
// verbs (events.IdentityAgent). The rest of
// .orbit is read-only: the jobs, activities and configuration there are
// what the engine runs next, outside any sandbox. And the agent is
// confined (sandbox.Policy.Confine): the whole file system is read-only
// to it but for its workspace (bound by ForWorkspace, its git directory
// read-only), its CLI's own directory (agent.withCLIHome) and a private
// /tmp that holds its home.
//
// It logs a warning when the machine cannot sandbox a program: the agents
// then run as before, which their records say (sandbox: none); and when
// the engine is root and the machine cannot give its agents a user of
// their own (sandbox.AgentUID), so that they are root on the file system.
func agentSandbox(cfg Config, creds *events.Creds, logger *slog.Logger) *sandbox.Policy {
	state := StateDir(cfg.Root)
	p := &sandbox.Policy{
		Hide:     []string{state},
		Keep:     []string{creds.File(events.IdentityAgent)},
		ReadOnly: []string{filepath.Dir(state)},
		Confine:  true,
	}
	files := []string{cfg.LogKeyFile, cfg.NKeySeedFile}
	if cfg.ListenTLS != nil {
		files = append(files, cfg.ListenTLS.Key) // the listener's own: an agent shows a client's
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			p.Hide = append(p.Hide, abs)
		}
	}
	switch ok, why := sandbox.Available(); {
	case !ok:
		logger.Warn("CLI agents run without a sandbox: an agent with a shell can read the engine's keys in "+state+" and write what the engine's user can", "reason", why)
	case os.Getuid() == 0:
		if why := sandbox.Unenforced(sandbox.ModeMountNamespace); why != "" {
			logger.Warn("CLI agents run confined, as root: the read-only mounts, not file permissions, stop their writes outside the workspace", "reason", why)
		}
	}
	return p
}
