package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/proc"
)

// startTimeout bounds how long a command waits for an engine it started.
const startTimeout = 60 * time.Second

// connect returns a connection to the engine serving the project: the one
// named by --nats-url (or nats.url in the root's config), else the one recorded in the root's engine.json, else
// a background engine started now (`orbit serve` in its own session, which
// exits after the configured idle timeout).
func (a *app) connect(ctx context.Context) (*events.Log, error) {
	l, err := a.connectLog(ctx)
	if err != nil {
		return nil, err
	}
	a.followKey(ctx, l)
	return l, nil
}

// connectLog is connect without followKey.
func (a *app) connectLog(ctx context.Context) (*events.Log, error) {
	if a.nkey != "" {
		if _, err := os.Stat(a.nkey); err != nil {
			return nil, usageErr("--nkey: %v", err)
		}
	}
	if a.natsURL != "" {
		return a.dial(ctx, a.natsURL)
	}
	root, err := a.project()
	if err != nil {
		return nil, err
	}
	if project, err := a.config(root); err == nil && project.NATS.URL != "" {
		return a.dial(ctx, project.NATS.URL)
	}
	// A user who may not sign in as the root's client is refused here,
	// before an engine of their own could be started beside the owner's.
	cfg, err := a.clientConfig(root)
	if err != nil {
		return nil, err
	}
	l, err := a.dialRoot(ctx, root, cfg)
	if errors.Is(err, events.ErrUnauthorized) || errors.Is(err, events.ErrTLS) {
		return nil, refused("the engine serving "+root, err)
	}
	if err == nil {
		return l, nil
	}
	return a.startEngine(ctx, root)
}

// dial connects to the engines at url (--nats-url, or nats.url). It signs
// in with --nkey or --token when given, else as the root's client when the
// root has that key: the key is the owner's, and the engines on url serve
// the project whose identities they share, whether the root's own engine
// (the one its engine.json records) runs or another engine of the
// cluster serves alone. With no key of its own it signs in with nothing,
// for a server that asks for nothing.
func (a *app) dial(ctx context.Context, url string) (*events.Log, error) {
	cfg := events.Config{Token: a.token, NKeySeedFile: a.nkey, LogKeyFile: a.logKey, TLS: a.tlsFiles(""), Name: "orbit-cli", OnReject: a.rejected}
	if root, err := a.root(); err == nil {
		if info, err := engine.ReadInfo(root); err == nil && info.URL == url {
			// The root's own engine, reached by its URL: as for connect.
			if cfg, err = a.clientConfig(root); err != nil {
				return nil, err
			}
		} else if seed := a.rootClientSeed(root); seed != "" {
			cfg.NKeySeedFile = seed
		}
	}
	l, err := events.Dial(ctx, url, cfg)
	if err != nil {
		if errors.Is(err, events.ErrUnauthorized) || errors.Is(err, events.ErrTLS) {
			return nil, refused("the engine at "+url, err)
		}
		return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("no Orbit engine at %s: %w", url, err)}
	}
	return l, nil
}

func (a *app) dialRoot(ctx context.Context, root string, cfg events.Config) (*events.Log, error) {
	info, err := engine.ReadInfo(root)
	if err != nil {
		return nil, err
	}
	return events.Dial(ctx, info.URL, cfg)
}

// refused is the error for an engine that turned this client's credentials
// (or its TLS) down: it says what to pass rather than starting an engine of
// its own.
func refused(engine string, err error) error {
	if errors.Is(err, events.ErrTLS) {
		return &exitError{code: exitUnavailable, err: fmt.Errorf("refused: TLS with %s failed (%w); pass --tls-ca with the CA that signed its certificate, and --tls-cert and --tls-key with a client certificate its serve.tls.ca signed when it asks for one (ORBIT_TLS_CA, ORBIT_TLS_CERT, ORBIT_TLS_KEY)", engine, err)}
	}
	return &exitError{code: exitUnavailable, err: fmt.Errorf("refused: %s turned this client down (%w); pass --nkey with a seed file the engine admits (ORBIT_NKEY), or --token for an external server that takes one (ORBIT_TOKEN)", engine, err)}
}

// tlsFiles is the TLS of a client: the CA of --tls-ca, else, for root's
// own engine (root not empty), the CA of its serve.tls (its ca, else its
// certificate: one that signed itself); and the certificate of --tls-cert
// and --tls-key. Nil when there is nothing to say: a server that asks for
// TLS is then checked against the system's roots.
func (a *app) tlsFiles(root string) *events.TLSFiles {
	f := a.tls
	if f.CA == "" && root != "" {
		if cfg, err := a.config(root); err == nil && cfg.Serve.TLS != nil {
			own := cfg.Serve.TLS.Resolve(root)
			f.CA = cmp.Or(own.CA, own.Cert)
		}
	}
	if f == (events.TLSFiles{}) {
		return nil
	}
	return &f
}

// clientConfig is how the CLI signs in to the engine serving root: with
// --nkey or --token when given, else as the root's client identity. A
// client seed that exists but cannot be read (another user's project) is
// refused with exit code 3. A missing one is made by the engine this
// command starts. What the client reads is verified with the root's log
// key (or --log-key) when it may read it and the engine signs with it (see
// followKey).
func (a *app) clientConfig(root string) (events.Config, error) {
	logKey := a.logKey
	if logKey == "" {
		logKey = engine.LogKeyPath(root)
	}
	cfg := events.Config{Token: a.token, NKeySeedFile: a.nkey, LogKeyFile: logKey, TLS: a.tlsFiles(root), Name: "orbit-cli", OnReject: a.rejected}
	if a.nkey != "" || a.token != "" {
		return cfg, nil
	}
	seed := events.CredsFile(engine.CredsDir(root), events.IdentityClient)
	f, err := os.Open(seed)
	if errors.Is(err, fs.ErrNotExist) {
		cfg.NKeySeedFile = seed
		return cfg, nil
	}
	if err != nil {
		return cfg, &exitError{code: exitUnavailable, err: fmt.Errorf("refused: cannot read %s, the client identity of %s (%w); pass --nkey with a seed file its engine admits (ORBIT_NKEY)", seed, root, err)}
	}
	f.Close()
	cfg.NKeySeedFile = seed
	return cfg, nil
}

// rootClientSeed is the seed file of root's client identity when it may
// sign in with it: no --nkey or --token is given and the file is there to
// read; "" otherwise.
func (a *app) rootClientSeed(root string) string {
	if a.nkey != "" || a.token != "" {
		return ""
	}
	seed := events.CredsFile(engine.CredsDir(root), events.IdentityClient)
	f, err := os.Open(seed)
	if err != nil {
		return ""
	}
	f.Close()
	return seed
}

// startEngine starts a background engine for root and waits until it
// serves. If another command started one at the same time, whichever took
// the root first serves both.
func (a *app) startEngine(ctx context.Context, root string) (*events.Log, error) {
	cfg, err := a.config(root)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logPath := engine.LogPath(root)
	if err := engine.EnsureStateDir(root); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(exe, "serve", "--root", root, "--listen", "127.0.0.1:0",
		"--idle-timeout", strconv.Itoa(cfg.Engine.IdleTimeoutSeconds)+"s", "--background")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// The engine serves whatever comes after this command: it is not part
	// of the step or program that happened to start it, and must not die
	// with that one's processes (see proc.TagVar).
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, proc.TagVar+"=") })
	if err := cmd.Start(); err != nil {
		return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("starting an engine: %w", err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if l, err := a.dialRootAs(ctx, root); err == nil {
			return l, nil
		}
		select {
		case err := <-exited:
			// Lost a race with another engine start, or failed: either way,
			// an engine that serves now is as good.
			if l, derr := a.waitForOther(ctx, root); derr == nil {
				return l, nil
			}
			return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("the engine exited (%v); see %s:\n%s", err, logPath, tail(logPath, 10))}
		case <-tick.C:
		case <-deadline.C:
			return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("the engine did not start within %s; see %s", startTimeout, logPath)}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dialRootAs dials the engine serving root as the root's client (whose
// seed the engine makes when it starts).
func (a *app) dialRootAs(ctx context.Context, root string) (*events.Log, error) {
	cfg, err := a.clientConfig(root)
	if err != nil {
		return nil, err
	}
	return a.dialRoot(ctx, root, cfg)
}

// waitForOther waits briefly for an engine started by someone else.
func (a *app) waitForOther(ctx context.Context, root string) (*events.Log, error) {
	for range 20 {
		if l, err := a.dialRootAs(ctx, root); err == nil {
			return l, nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, errors.New("no engine")
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// request asks the engine's API, mapping "no engine" to exit code 3.
func request(ctx context.Context, l *events.Log, endpoint string, req, resp any) error {
	err := l.Request(ctx, endpoint, req, resp)
	if errors.Is(err, events.ErrUnavailable) {
		return &exitError{code: exitUnavailable, err: err}
	}
	return err
}

// requestEngine asks the engine with id only, mapping "no such engine or
// no answer" to exit code 3.
func requestEngine(ctx context.Context, l *events.Log, id, endpoint string, req, resp any) error {
	err := l.RequestEngine(ctx, id, endpoint, req, resp)
	if errors.Is(err, events.ErrUnavailable) {
		return &exitError{code: exitUnavailable, err: err}
	}
	return err
}

// withEngine adapts a command body that needs the engine to cobra: it
// connects (starting an engine if need be) and closes the connection after.
func (a *app) withEngine(run func(ctx context.Context, l *events.Log, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		l, err := a.connect(ctx)
		if err != nil {
			return err
		}
		defer l.Close()
		return run(ctx, l, args)
	}
}
