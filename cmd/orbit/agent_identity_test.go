package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnEngineSaysWhenTheServerRefusesTheAgentIdentity: on an external
// server configured before the agent identity existed (engine, client and
// reader only), the engine warns at start that CLI agents cannot send
// their verbs and names orbit nats-config; on one configured with what
// orbit nats-config prints now, it does not.
func TestAnEngineSaysWhenTheServerRefusesTheAgentIdentity(t *testing.T) {
	t.Parallel()
	for name, withAgent := range map[string]bool{"an old configuration": false, "nats-config's": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := testkit.NewProject(t)
			creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
			require.NoError(t, err)
			block := events.AuthorizationBlock(creds)
			if !withAgent {
				block = "authorization { users = [\n"
				for _, id := range []events.Identity{events.IdentityEngine, events.IdentityClient, events.IdentityReader} {
					block += "{nkey: " + creds.Public[id] + "}\n"
				}
				block += "] }\n"
			}
			conf := filepath.Join(t.TempDir(), "nats.conf")
			require.NoError(t, os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\njetstream { store_dir: \""+filepath.Join(t.TempDir(), "js")+"\" }\n"+block), 0o600))
			opts, err := server.ProcessConfigFile(conf)
			require.NoError(t, err)
			opts.NoLog, opts.NoSigs = true, true
			srv, err := server.NewServer(opts)
			require.NoError(t, err)
			srv.Start()
			require.True(t, srv.ReadyForConnections(10*time.Second))
			t.Cleanup(srv.Shutdown)

			p.Env = append(p.Env, "ORBIT_NATS_URL="+srv.ClientURL())
			stderr := &syncBuffer{}
			cmd := p.Command("serve")
			cmd.Stderr = stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			waitFor(t, "the engine to serve", func() bool { return strings.Contains(stderr.String(), "engine running") })
			const warning = "does not admit the agent identity"
			if withAgent {
				assert.NotContains(t, stderr.String(), warning)
				return
			}
			assert.Contains(t, stderr.String(), warning)
			assert.Contains(t, stderr.String(), "orbit nats-config")
		})
	}
}
