package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/console"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		listen      string
		httpAddr    string
		httpToken   string
		idleTimeout time.Duration
		background  bool
		verbose     bool
		replicas    int
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the engine in the foreground",
		Long: `Run the engine for the project in the foreground until interrupted.

The embedded NATS server listens on 127.0.0.1:4222 by default (or serve.listen
in .orbit/config.yaml) and admits only the project's identities in
.orbit/state/creds/ (and --nkey keys): 'orbit nats-context --reader' writes a
context with which 'nats sub "orbit.events.>"' tails a live engine. Other
orbit commands on the same root use this engine. With --nats-url the engine
uses that NATS server or cluster (a comma-separated list of URLs, or nats.url
in .orbit/config.yaml) instead of its embedded one, with --replicas (or
nats.replicas) replicas of every stream, signing in as the
project's engine identity (see orbit nats-config) unless --nkey or --token
says otherwise.

With serve.tls in the config ({cert, key, ca}) the listener speaks TLS only,
and with a ca it admits only clients that show a certificate the ca signed;
clients trust its CA with --tls-ca (the root's own CLI reads it from the
config) and show theirs with --tls-cert and --tls-key. Beyond loopback
without TLS the engine warns: the keys never cross the wire, but events,
inputs and outputs do, in clear.

With --http (or serve.http in the config) the engine also serves the web
console and /metrics there, to its owner only: every request must carry the
console's token, made once into .orbit/state/console.token (mode 0600), or
--http-token (ORBIT_HTTP_TOKEN) when given. The login URL printed at start
(http://…/?token=…; orbit console prints it again, also for an engine a
command started) leaves a cookie in the browser; scripts and Prometheus
send "Authorization: Bearer <token>". The console answers only to its own
host names (its address, localhost, 127.0.0.1, [::1], and serve.http_hosts),
421 otherwise. Beyond loopback it listens only with --http-token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := a.project()
			if err != nil {
				return err
			}
			cfg, err := a.config(root)
			if err != nil {
				return err
			}
			if listen == "" {
				listen = cfg.Serve.Listen
			}
			if httpAddr == "" {
				httpAddr = cfg.Serve.HTTP
			}
			natsURL := a.natsURL
			if natsURL == "" {
				natsURL = cfg.NATS.URL
			}
			if !cmd.Flags().Changed("replicas") {
				replicas = cfg.NATS.Replicas
			}
			if replicas < 0 || replicas > assets.MaxReplicas {
				return usageErr("--replicas %d: want 1 to %d", replicas, assets.MaxReplicas)
			}
			var listenTLS *events.TLSFiles
			if t := cfg.Serve.TLS; t != nil && natsURL == "" && !background {
				// A background engine listens on loopback at a port of its
				// own, for the commands of this root only.
				own := t.Resolve(root)
				listenTLS = &events.TLSFiles{Cert: own.Cert, Key: own.Key, CA: own.CA}
			}
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			redactor := events.RedactorFromEnv()
			logger := slog.New(redactor.Handler(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level})))
			var (
				beside     func(context.Context, *events.Log) error
				consoleURL string
				loginURL   string
				served     *engine.ConsoleInfo
			)
			if httpAddr != "" {
				ln, err := console.Listen(httpAddr, httpToken)
				if errors.Is(err, console.ErrAddress) || errors.Is(err, console.ErrInsecure) {
					return usageErr("%w", err)
				}
				if err != nil {
					return err
				}
				defer ln.Close()
				consoleURL = "http://" + ln.Addr().String()
				served = &engine.ConsoleInfo{URL: consoleURL, OwnerToken: httpToken == ""}
				token := httpToken
				if token == "" {
					if token, err = consoleToken(root); err != nil {
						return err
					}
					loginURL = console.LoginURL(consoleURL, token)
				}
				beside = func(ctx context.Context, l *events.Log) error {
					return console.Serve(ctx, ln, console.Config{Log: l, Requester: "console@" + hostname(), Token: token,
						Hosts: cfg.Serve.HTTPHosts, Logger: logger})
				}
			}
			e, err := engine.Open(cmd.Context(), engine.Config{
				Root:         root,
				NATSURL:      natsURL,
				Replicas:     replicas,
				Listen:       listen,
				ListenTLS:    listenTLS,
				TLS:          a.tlsFiles(""),
				Token:        a.token,
				NKeySeedFile: a.nkey,
				LogKeyFile:   a.logKey,
				Redactor:     redactor,
				Durability:   cfg.Durability,
				IdleTimeout:  idleTimeout,
				Background:   background,
				Logger:       logger,
				Beside:       beside,
				Console:      served,
			})
			if errors.Is(err, events.ErrTLS) {
				return usageErr("serve.tls in %s: %w", filepath.Join(root, ".orbit", "config.yaml"), err)
			}
			if err != nil {
				return err
			}
			defer e.Close()
			if natsURL == "" && listenTLS == nil && !loopback(listen) {
				a.errorf("warning: %s is beyond loopback and without TLS: the keys never cross the wire, but everything else does in clear (set serve.tls in .orbit/config.yaml)\n", listen)
			}
			if !background {
				a.errorf("orbit engine %s serving %s at %s (durability %s, replicas %d)\n", e.Info().Engine, root, e.Log().ClientURL(), e.Log().Durability(), e.Log().Replicas())
				if consoleURL != "" {
					a.errorf("console at %s\n", consoleURL)
					if loginURL != "" {
						a.errorf("console login (once per browser; the token is in %s): %s\n", consoleTokenFile(root), loginURL)
					} else {
						a.errorf("console login: %s/?token=<the --http-token>, or Authorization: Bearer <the --http-token>\n", consoleURL)
					}
				}
			}
			return e.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address the embedded NATS server accepts clients on (default 127.0.0.1:4222)")
	cmd.Flags().StringVar(&httpAddr, "http", "", "address the web console and /metrics listen on (default none; serve.http in the config)")
	cmd.Flags().StringVar(&httpToken, "http-token", os.Getenv("ORBIT_HTTP_TOKEN"), "token the console asks of every request instead of .orbit/state/console.token's; needed beyond loopback (env ORBIT_HTTP_TOKEN)")
	cmd.Flags().DurationVar(&idleTimeout, "idle-timeout", 0, "stop after this long with no run and no request (0: never)")
	cmd.Flags().BoolVar(&background, "background", false, "started on demand by another orbit command")
	cmd.Flags().IntVar(&replicas, "replicas", 0, "replicas of every stream on the NATS cluster (default nats.replicas, else 3 on a cluster of three or more servers, else 1)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log debug messages")
	_ = cmd.Flags().MarkHidden("background")
	return cmd
}

// consoleTokenFile is where the console's owner token is kept.
func consoleTokenFile(root string) string {
	return filepath.Join(engine.StateDir(root), "console.token")
}

// consoleToken is the console's owner token, made the first time.
func consoleToken(root string) (string, error) {
	if err := os.MkdirAll(engine.StateDir(root), 0o700); err != nil {
		return "", err
	}
	token, err := console.OwnerToken(consoleTokenFile(root))
	if errors.Is(err, console.ErrToken) {
		return "", usageErr("%w", err)
	}
	return token, err
}

// hostname names this machine for the record, "unknown" when it cannot.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// loopback reports whether a listen address is on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
