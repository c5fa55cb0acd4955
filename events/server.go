package events

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startEmbedded starts a NATS server with JetStream storing in cfg.StoreDir.
// In strict mode every write is fsynced before it is acknowledged, because the
// server's default (fsync every two minutes) can lose acknowledged writes on
// power loss.
//
// The server admits only the identities in cfg.CredsDir (created if
// missing) and cfg.ExtraClients, each with its Permissions: there is no
// anonymous access on any listener, loopback included.
func startEmbedded(cfg Config) (*server.Server, error) {
	creds, err := EnsureCreds(cfg.CredsDir)
	if err != nil {
		return nil, err
	}
	var extra []string
	for _, path := range cfg.ExtraClients {
		public, err := nkeyPublic(path)
		if err != nil {
			return nil, err
		}
		extra = append(extra, public)
	}
	opts := &server.Options{
		ServerName:         "orbit",
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		NoSigs:             true,
		NoLog:              true,
		DontListen:         cfg.Listen == "",
		MaxPayload:         cfg.MaxPayload,
		Nkeys:              users(creds, extra),
		JetStreamMaxMemory: 64 << 20,
	}
	if cfg.Durability == DurabilityStrict {
		opts.SyncAlways = true
	}
	if cfg.Listen != "" {
		host, portText, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("events: listen address %q: %w", cfg.Listen, err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			return nil, fmt.Errorf("events: listen address %q: bad port", cfg.Listen)
		}
		if port == 0 {
			port = server.RANDOM_PORT
		} else if ln, err := net.Listen("tcp", cfg.Listen); err != nil {
			// The server would retry for as long as it is let; say now.
			return nil, fmt.Errorf("%w: %s: %v (choose another with --listen or serve.listen in .orbit/config.yaml)", ErrAddressInUse, cfg.Listen, err)
		} else {
			ln.Close()
		}
		opts.Host, opts.Port = host, port
		if cfg.ListenTLS != nil {
			if err := listenTLS(opts, cfg.ListenTLS); err != nil {
				return nil, err
			}
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("events: starting embedded NATS: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("%w: embedded NATS did not become ready (store %s)", ErrUnavailable, cfg.StoreDir)
	}
	return srv, nil
}
