package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

// app holds what every command shares: the global flags and the streams.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	rootFlag string
	natsURL  string
	token    string
	nkey     string
	logKey   string
	json     bool
	// tls is what --tls-ca, --tls-cert and --tls-key say: how a client
	// reaches an engine whose listener speaks TLS.
	tls events.TLSFiles
	// progress is --progress of the commands that follow a run.
	progress progressMode

	// errMu orders what goes to stderr: a feed's goroutine says there what
	// it left out (see rejected).
	errMu sync.Mutex
	// rejects tells the follower of a run what its reads left out.
	rejects chan events.Rejection
}

func (a *app) rootCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "orbit",
		Short: "Run jobs of shell commands, actions and coding agents on an event-sourced engine",
		Long: `Orbit runs jobs — YAML pipelines of shell commands, built-in actions and LLM
coding agents — as an event-sourced engine on an embedded NATS JetStream log.
Every transition is an event; views are rebuilt from the log; a crash loses
nothing and re-runs nothing that finished.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       engine.Version,
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v\nSee '%s --help'.", err, c.CommandPath())
	})
	pf := cmd.PersistentFlags()
	pf.StringVar(&a.rootFlag, "root", "", "project directory (default: nearest ancestor with .orbit/, else the current directory)")
	pf.StringVar(&a.natsURL, "nats-url", os.Getenv("ORBIT_NATS_URL"), "use the engine on this NATS server instead of the root's own (env ORBIT_NATS_URL)")
	pf.StringVar(&a.logKey, "log-key", os.Getenv("ORBIT_LOG_KEY"), "file of the key that signs the log: engines on an external server sign with it, clients verify what they read (env ORBIT_LOG_KEY)")
	pf.StringVar(&a.token, "token", os.Getenv("ORBIT_TOKEN"), "token for an external NATS server that requires one (env ORBIT_TOKEN); the embedded server takes nkeys only")
	pf.StringVar(&a.nkey, "nkey", os.Getenv("ORBIT_NKEY"), "nkey seed file to sign in with instead of the root's client identity (env ORBIT_NKEY); with serve, a further client key the embedded server admits")
	pf.StringVar(&a.tls.CA, "tls-ca", os.Getenv("ORBIT_TLS_CA"), "CA that signed the engine's TLS certificate (env ORBIT_TLS_CA; default for the root's own engine: serve.tls.ca, else serve.tls.cert)")
	pf.StringVar(&a.tls.Cert, "tls-cert", os.Getenv("ORBIT_TLS_CERT"), "client certificate to show an engine whose serve.tls has a ca (env ORBIT_TLS_CERT)")
	pf.StringVar(&a.tls.Key, "tls-key", os.Getenv("ORBIT_TLS_KEY"), "private key of --tls-cert (env ORBIT_TLS_KEY)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON")

	cmd.AddCommand(
		a.initCommand(),
		a.jobCommand(),
		a.activityCommand(),
		a.executorCommand(),
		a.runCommand(),
		a.serveCommand(),
		a.consoleCommand(),
		a.engineCommand(),
		a.replayCommand(),
		a.auditCommand(),
		a.logCommand(),
		a.metricsCommand(),
		a.taskCommand(),
		a.groundhogCommand(),
		a.nkeyCommand(),
		a.natsContextCommand(),
		a.natsConfigCommand(),
		a.blobCommand(),
		a.mcpCommand(),
		a.hookCommand(),
		a.gcCommand(),
		a.doctorCommand(),
		a.routineCommand(),
	)
	refuseUnknownSubcommands(cmd)
	return cmd
}

// refuseUnknownSubcommands makes every command that only groups others
// (orbit job, orbit task, …) fail with exit 2 on an argument that names
// none of them, instead of printing its help and exiting 0; without
// arguments it still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() || !cmd.HasParent() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return usageErr("unknown command %q for %q\nSee '%s --help'.", args[0], c.CommandPath(), c.CommandPath())
	}
}

// root returns the project directory: --root, else the nearest ancestor of
// the working directory that has a .orbit directory, else the working
// directory.
func (a *app) root() (string, error) {
	if a.rootFlag != "" {
		return filepath.Abs(a.rootFlag)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(filepath.Join(dir, ".orbit")); err == nil && fi.IsDir() {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return wd, nil
		}
	}
}

// project returns the root and insists that it has been initialised.
func (a *app) project() (string, error) {
	root, err := a.root()
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(filepath.Join(root, ".orbit")); err != nil || !fi.IsDir() {
		return "", usageErr("%s is not an Orbit project (no .orbit directory here or in any parent); run 'orbit init' first", root)
	}
	return root, nil
}

// config loads the project configuration.
func (a *app) config(root string) (*assets.Config, error) {
	return assets.LoadConfig(root)
}

// catalog opens the asset catalogs of root.
func (a *app) catalog(root string) (*assets.Catalog, error) {
	cfg, err := a.config(root)
	if err != nil {
		return nil, err
	}
	backend := os.Getenv("ORBIT_BACKEND")
	if backend == "" {
		backend = cfg.Runtime.Backend
	}
	return assets.OpenCatalog(root, assets.CatalogOptions{
		ActivityDir: os.Getenv("ORBIT_ACTIVITY_DIR"),
		JobDir:      os.Getenv("ORBIT_JOB_DIR"),
		ExecutorDir: os.Getenv("ORBIT_EXECUTOR_DIR"),
		Backend:     backend,
		FSProfiles:  cfg.FSProfileNames(),
	})
}

// projectCatalog opens the asset catalogs of the project, which must have
// been initialised.
func (a *app) projectCatalog() (*assets.Catalog, error) {
	root, err := a.project()
	if err != nil {
		return nil, err
	}
	return a.catalog(root)
}

// rootCatalog opens the asset catalogs of the root, initialised or not.
func (a *app) rootCatalog() (*assets.Catalog, error) {
	root, err := a.root()
	if err != nil {
		return nil, err
	}
	return a.catalog(root)
}

func (a *app) printf(format string, args ...any) { fmt.Fprintf(a.stdout, format, args...) }

func (a *app) errorf(format string, args ...any) {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	fmt.Fprintf(a.stderr, format, args...)
}
