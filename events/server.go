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
func startEmbedded(cfg Config) (*server.Server, error) {
	opts := &server.Options{
		ServerName:         "orbit",
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		NoSigs:             true,
		NoLog:              true,
		DontListen:         cfg.Listen == "",
		Authorization:      cfg.Token,
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
	}
	if cfg.NKeySeedFile != "" {
		public, err := nkeyPublic(cfg.NKeySeedFile)
		if err != nil {
			return nil, err
		}
		opts.Nkeys = []*server.NkeyUser{{Nkey: public}}
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
