package events

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
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
// missing) and cfg.ExtraClients, each in its account with its Permissions
// (AccountsBlock, the configuration orbit nats-config prints, parsed by
// the server's own parser): there is no anonymous access on any listener,
// loopback included.
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
	opts := &server.Options{}
	if err := opts.ProcessConfigString(AccountsBlock(creds, extra...)); err != nil {
		return nil, fmt.Errorf("events: the server's accounts: %w", err)
	}
	opts.ServerName = "orbit"
	opts.JetStream = true
	opts.StoreDir = cfg.StoreDir
	opts.NoSigs, opts.NoLog = true, true
	opts.DontListen = cfg.Listen == ""
	opts.MaxPayload = cfg.MaxPayload
	opts.JetStreamMaxMemory = 64 << 20
	if err := moveToEngineAccount(cfg.StoreDir); err != nil {
		return nil, err
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

// moveToEngineAccount moves a store written before the engine had an
// account of its own (EngineAccount) to it: JetStream keeps each account's
// streams in a directory of the account's name, and those of a server
// without accounts are the global account's ($G). Renaming the directory
// keeps every stream as it was, its creation time included, so the log is
// the same log (Log.Created).
func moveToEngineAccount(storeDir string) error {
	dir := filepath.Join(storeDir, server.JetStreamStoreDir)
	legacy, current := filepath.Join(dir, legacyAccount), filepath.Join(dir, EngineAccount)
	if _, err := os.Stat(legacy); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(current); err == nil {
		return fmt.Errorf("events: store %s holds streams of the global account (%s) and of the engine's account (%s): move one aside", storeDir, legacy, current)
	}
	if err := os.Rename(legacy, current); err != nil {
		return fmt.Errorf("events: moving the store to the engine's account: %w", err)
	}
	return nil
}
