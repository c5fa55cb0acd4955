// Package engine assembles Orbit's parts into one running engine: the event
// log (embedded or external NATS), the projector and its views, the
// orchestrator, the workers, and the query API. It is the wiring shared by
// `orbit serve`, auto-started background engines and end-to-end tests.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/retention"
	"github.com/orbitrun/orbit/routine"
	"github.com/orbitrun/orbit/shipping"
)

// Version is reported by the API and `orbit version`.
var Version = "0.1.0"

// Config configures an Engine.
type Config struct {
	// Root is the project directory; state lives in Root/.orbit/state.
	Root string
	// NATSURL points at an external NATS server instead of the embedded one.
	NATSURL string
	// Replicas of every stream, bucket and object store on the NATS
	// cluster at NATSURL; 0 chooses by the cluster's size (see
	// events.Config.Replicas).
	Replicas int
	// Listen is the embedded server's client address (default
	// 127.0.0.1:4222; port 0 picks a free port).
	Listen string
	// ListenTLS, when set, makes the embedded server's listener speak TLS
	// only (serve.tls; see events.TLSFiles).
	ListenTLS *events.TLSFiles
	// TLS is the TLS of the engine's connection to an external server
	// (NATSURL) and of the clients it starts (a CLI agent's orbit mcp,
	// whose CA defaults to ListenTLS's): the CA they trust and the
	// certificate they show.
	TLS *events.TLSFiles
	// Token is sent to an external server (NATSURL) that requires one. The
	// embedded server admits only nkeys: a token without NATSURL is refused.
	Token string
	// NKeySeedFile names an nkey user seed. The embedded server admits
	// clients that sign with it (with the client identity's permissions),
	// besides the project's identities; on an external server the engine
	// signs with it instead of the project's engine identity.
	NKeySeedFile string
	// LogKeyFile names the key that signs the log (made there when
	// missing). Default on the embedded server: the root's
	// .orbit/state/creds/log.key; on an external server there is no
	// default, and the log is not signed without one.
	LogKeyFile string
	// Durability is events.DurabilityStrict (default) or DurabilityRelaxed.
	Durability string
	// MaxPayload is the embedded server's largest message (zero:
	// events.DefaultMaxPayload).
	MaxPayload int32
	// IdleTimeout, when positive, stops the engine after it has had no run
	// and no request for that long.
	IdleTimeout time.Duration
	// Redactor removes secrets from what the engine publishes; the seeds of
	// the project's identities and the log key are added to it, so a logger
	// that redacts with it never shows them either. Nil means one built
	// from the process environment.
	Redactor *events.Redactor
	// Background marks an engine started on demand by a CLI command.
	Background bool
	// Logger receives operational messages (nil discards them).
	Logger *slog.Logger
	// Beside, when set, runs beside the API once the engine serves (the
	// web console), on the engine's own log connection; its failure stops
	// the engine.
	Beside func(ctx context.Context, log *events.Log) error
	// RefusalWindow is how long a task's refused verbs are counted before
	// they are recorded as one event (zero: 10 s; see refusals).
	RefusalWindow time.Duration
	// Console, when set, is where Beside serves the web console: recorded
	// in engine.json and the engine's info for orbit console.
	Console *ConsoleInfo
}

// Engine is a running Orbit engine on one project root.
type Engine struct {
	cfg    Config
	id     string
	log    *events.Log
	proj   *projector.Projector
	orch   *executor.Orchestrator
	worker *activity.Worker
	logger *slog.Logger

	lastActivity atomic.Int64 // unix nanos of the last request or busy moment
	info         Info
	created      time.Time // of the events stream, as checkLog found it
	catalog      *catalogCache
	attempts     *groundhog.Attempts
	ship         *shipping.Service
	refusals     *refusals
	collector    *retention.Collector
	clockShift   time.Duration // added to the clock engine.status reports

	// config is the project's configuration, reloaded when the file
	// changes; what of it the engine applies while it runs is kept here as
	// applyConfig last made it.
	config       *projectConfig
	settings     atomic.Pointer[activity.Settings]
	provSettings atomic.Pointer[[]Setting] // Info.Settings, for the providers configured now
	idleTimeout  atomic.Int64              // a time.Duration; see Config.IdleTimeout

	stopMu sync.Mutex
	stop   context.CancelCauseFunc // ends Run; nil until Run starts
}

// Errors of Open.
var (
	// ErrAlreadyRunning: another engine serves the root.
	ErrAlreadyRunning = errors.New("another engine is serving this root")
)

// Open takes the root: it opens the views file first — its lock makes a
// second engine on the same root fail here, before it could touch the NATS
// store — then starts or connects to NATS. Run records engine.json once the
// engine serves.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:4222"
	}
	if cfg.NATSURL == "" && cfg.Token != "" {
		return nil, fmt.Errorf("%w: --token (ORBIT_TOKEN) is sent to an external server given with --nats-url; the embedded server admits only the project's nkeys (%s) and --nkey seed files", events.ErrTokenEmbedded, CredsDir(cfg.Root))
	}
	if cfg.Redactor == nil {
		cfg.Redactor = events.RedactorFromEnv()
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	cfg.Root = root
	if err := EnsureStateDir(root); err != nil {
		return nil, err
	}
	creds, err := events.EnsureCreds(CredsDir(root))
	if err != nil {
		return nil, err
	}
	cfg.Redactor.AddSeeds(creds.Dir)
	logCfg := events.Config{
		StoreDir:   filepath.Join(StateDir(root), "nats"),
		CredsDir:   creds.Dir,
		URL:        cfg.NATSURL,
		Replicas:   cfg.Replicas,
		Listen:     cfg.Listen,
		ListenTLS:  cfg.ListenTLS,
		TLS:        cfg.TLS,
		Durability: cfg.Durability,
		MaxPayload: cfg.MaxPayload,
		Name:       "orbit-engine",
		Redactor:   cfg.Redactor,
		Logger:     cfg.Logger,
	}
	switch {
	case cfg.NATSURL == "" && cfg.NKeySeedFile != "":
		logCfg.ExtraClients = []string{cfg.NKeySeedFile}
	case cfg.NATSURL == "":
	case cfg.NKeySeedFile != "":
		logCfg.NKeySeedFile = cfg.NKeySeedFile
	case cfg.Token != "":
		logCfg.Token = cfg.Token
	default:
		logCfg.NKeySeedFile = creds.File(events.IdentityEngine)
	}
	e := &Engine{cfg: cfg, id: events.NewID(), logger: cfg.Logger.With("component", "engine"), attempts: groundhog.NewAttempts(cfg.Redactor.Add), clockShift: clockShift()}
	e.idleTimeout.Store(int64(cfg.IdleTimeout))
	// The configuration is read before anything is opened: a bad file
	// stops the engine from starting, saying why.
	if e.config, err = loadProjectConfig(root, e.logger, e.applyConfig); err != nil {
		return nil, err
	}
	e.catalog = newCatalogCache(root, e.config, e.logger)

	e.proj, err = projector.Open(ctx, projector.Config{
		Path:   filepath.Join(StateDir(root), "views.db"),
		Logger: cfg.Logger,
	})
	if errors.Is(err, projector.ErrLocked) {
		if other, ierr := ReadInfo(root); ierr == nil {
			return nil, fmt.Errorf("%w: engine %s (pid %d) at %s since %s", ErrAlreadyRunning,
				other.Engine, other.PID, other.URL, other.Started.Format(time.RFC3339))
		}
		return nil, fmt.Errorf("%w: %s is locked", ErrAlreadyRunning, filepath.Join(StateDir(root), "views.db"))
	}
	if err != nil {
		return nil, err
	}
	// Views that applied events need the log they were folded from: a
	// missing one is an error, not a fresh start (DESIGN §2).
	rec, err := e.proj.Recorded()
	if err != nil {
		e.proj.Close()
		return nil, err
	}
	logCfg.LogKeyFile, logCfg.MakeLogKey = logKeyFile(cfg), true
	logCfg.RequireLog = rec.LastSeq > 0
	e.log, err = events.Open(ctx, logCfg)
	if err != nil {
		e.proj.Close()
		return nil, e.openLogError(err, rec)
	}
	if cfg.NATSURL != "" {
		// Where the server is not ours, check that it keeps a reader a
		// reader.
		if err := e.log.CheckReader(ctx, creds.File(events.IdentityReader)); errors.Is(err, events.ErrMisconfigured) {
			e.logger.Warn(err.Error())
		} else if err != nil {
			e.logger.Debug("the reader's permissions were not checked", "err", err)
		}
		e.checkAgentAdmitted(ctx, creds)
	}
	e.proj.SetSource(e.log)
	e.refusals = newRefusals(e.log, cfg.RefusalWindow, e.logger)
	e.collector = e.newCollector()
	if err := e.checkLog(ctx); err != nil {
		e.Close()
		return nil, err
	}
	project := e.config.get()
	e.ship = e.newShipping()
	e.orch = executor.NewOrchestrator(executor.Config{
		Log:          e.log,
		Admission:    e.ship.Admission,
		ActiveRuns:   e.activeRuns,
		ViewsApplied: e.proj.Applied,
		Jobs:         e.job,
		Engine:       e.id,
		Root:         root,
		Settings:     e.currentSettings,
		Logger:       cfg.Logger,
	})
	agents := agentSandbox(cfg, creds, e.logger)
	cli := e.groundhogCLI(agentSeed(creds))
	cli.Sandbox = agents
	e.worker = activity.NewWorker(activity.WorkerConfig{
		Log:             e.log,
		Engine:          e.id,
		AckWait:         time.Duration(project.Engine.AckWaitSeconds) * time.Second,
		Settings:        e.currentSettings,
		Actions:         e.ship.Actions(),
		Tasks:           e.ship,
		GroundhogMemory: e.groundhogMemory,
		GroundhogCLI:    cli,
		TaskMCP:         e.taskMCP(agentSeed(creds)),
		AgentSandbox:    agents,
		Logger:          cfg.Logger,
	})
	e.info = Info{
		PID:        os.Getpid(),
		URL:        e.log.ClientURL(),
		Engine:     e.id,
		Root:       root,
		Durability: e.log.Durability(),
		Started:    time.Now().UTC(),
		Background: cfg.Background,
		Console:    cfg.Console,
	}
	return e, nil
}

// applyConfig makes what the engine applies while it runs of the project's
// configuration cfg (see assets.ConfigSettings) the engine's: the
// workers' and orchestrator's Settings, the provider settings it reports,
// and, for an engine started on demand, its idle timeout. It is called
// with the configuration loaded at start and with each one reloaded.
func (e *Engine) applyConfig(cfg *assets.Config) {
	e.settings.Store(&activity.Settings{
		FSProfiles:     fsProfiles(cfg),
		Providers:      providers(cfg),
		MaxDeliver:     cfg.Engine.MaxDeliveries,
		MaxChildDepth:  cfg.Engine.MaxChildDepth,
		MaxDescendants: cfg.Engine.MaxDescendants,
	})
	settings := ReadSettings(agent.Settings(keyEnvs(cfg)...), os.LookupEnv)
	e.provSettings.Store(&settings)
	if e.cfg.Background {
		e.idleTimeout.Store(int64(time.Duration(cfg.Engine.IdleTimeoutSeconds) * time.Second))
	}
}

// currentSettings returns the executor's Settings as the project's
// configuration has them now, after loading the file again if it changed.
func (e *Engine) currentSettings() activity.Settings {
	e.config.get()
	return *e.settings.Load()
}

// rootScope is the scope (see proc.WithScope) of every program an engine on
// root starts.
func rootScope(root string) string {
	sum := sha256.Sum256([]byte(root))
	return "root-" + hex.EncodeToString(sum[:8])
}

// Info describes the running engine.
func (e *Engine) Info() Info {
	info := e.info
	info.Settings = *e.provSettings.Load()
	return info
}

// Log returns the engine's event log.
func (e *Engine) Log() *events.Log { return e.log }

// Run starts the projector, waits until the views have caught up with the
// log, then starts the workers, the orchestrator (which resumes unfinished
// runs) and the API, and blocks until ctx ends, the engine has been idle for
// IdleTimeout, or a part fails.
func (e *Engine) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.stopMu.Lock()
	e.stop = cancel
	e.stopMu.Unlock()
	e.touch()

	var wg sync.WaitGroup
	start := func(name string, run func(context.Context) error) context.CancelFunc {
		pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(pctx); err != nil && pctx.Err() == nil {
				// A part that fails because the log was deleted under
				// it says so.
				if lost := e.logLost(ctx); lost != nil {
					err = lost
				}
				cancel(fmt.Errorf("%s: %w", name, err))
			}
		}()
		return stop
	}
	stopProj := start("projector", e.proj.Run)
	defer func() {
		stopProj()
		wg.Wait()
	}()
	last, err := e.log.LastSeq(ctx)
	if err != nil {
		return err
	}
	if err := e.proj.WaitFor(ctx, last); err != nil {
		return fmt.Errorf("catching up views: %w", context.Cause(ctx))
	}
	// Only one engine runs on a root, so a process marked with the root's
	// scope is one an earlier engine left: kill -9 takes a program's leader
	// (Pdeathsig) but not what it started. It goes before a redelivered
	// step could run beside it.
	scope := rootScope(e.cfg.Root)
	if killed, gone := proc.KillScope(scope, 5*time.Second); killed > 0 {
		e.logger.Warn("killed processes an earlier engine on this root left running", "count", killed, "all_gone", gone)
	}
	stopWorker := start("worker", func(ctx context.Context) error { return e.worker.Run(proc.WithScope(ctx, scope)) })
	defer stopWorker()
	stopOrch := start("orchestrator", e.orch.Run)
	defer stopOrch()
	traces, err := e.tracer(ctx)
	if err != nil {
		return err
	}
	if traces != nil {
		defer start("tracing", traces)()
	}
	// Once the API has stopped, no verb is refused any more: what the
	// open windows counted is recorded.
	defer e.refusals.stop()
	api, err := e.serveAPI()
	if err != nil {
		return err
	}
	defer api.Stop()
	// Every engine schedules the project's routines; the routines' keys
	// make them decide each tick once.
	defer start("routines", routine.NewScheduler(e.routineConfig()).Run)()
	// The retention policy, every retention.every (nothing when the
	// project has none).
	defer start("retention", func(ctx context.Context) error { e.collector.Run(ctx); return nil })()
	if e.cfg.Beside != nil {
		defer start("beside", func(ctx context.Context) error { return e.cfg.Beside(ctx, e.log) })()
	}
	info := e.Info()
	if err := writeInfo(e.cfg.Root, &info); err != nil {
		return err
	}
	e.logger.Info("engine running", "engine", e.id, "root", e.cfg.Root, "url", info.URL)
	set := "none"
	if names := SetNames(info.Settings); len(names) > 0 {
		set = strings.Join(names, " ")
	}
	e.logger.Info("provider settings from the engine's environment", "set", set)

	if e.cfg.IdleTimeout > 0 {
		go e.watchIdle(ctx, cancel)
	}
	// .orbit/config.yaml edited: what can change while the engine runs
	// does, from the next step; the rest is reported as needing a restart.
	go e.config.watch(ctx)
	// The state directory removed (rm -rf of the project's state, a demo
	// directory made again): the log and views this engine writes are
	// gone, and the next command would start a second engine on the root.
	go e.watch(ctx, cancel, e.stateRemoved)
	// The events stream deleted or replaced under the engine: the log every
	// view and run rests on is gone, and going on would write a new history
	// into a stream nobody provisioned.
	go e.watch(ctx, cancel, e.logLost)
	<-ctx.Done()
	if !e.log.Reachable() {
		// Whatever stops now would wait for a server that is gone, each
		// call for its own timeout: give up on it (DESIGN §9).
		e.logger.Warn("stopping while no NATS server answers; what is in flight resumes on another engine or at the next start")
		e.log.Abandon()
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, errIdle) && !errors.Is(err, errStopped) {
		return err
	}
	return nil
}

var (
	errIdle    = errors.New("idle")
	errStopped = errors.New("stopped on request")
)

// stateCheck is how often the engine checks that its state directory is
// still there.
const stateCheck = 2 * time.Second

// watch stops the engine with the error check returns, asking it every
// stateCheck. Run returns that error: orbit serve prints it and exits.
func (e *Engine) watch(ctx context.Context, stop context.CancelCauseFunc, check func(context.Context) error) {
	tick := time.NewTicker(stateCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := check(ctx); err != nil {
				stop(err)
				return
			}
		}
	}
}

// stateRemoved returns an error once the root's state directory, or the
// embedded server's store in it, is gone: the server keeps writing into
// files nobody can open again, so what it acknowledged would be lost.
func (e *Engine) stateRemoved(context.Context) error {
	dirs := []string{StateDir(e.cfg.Root)}
	if e.cfg.NATSURL == "" {
		dirs = append(dirs, filepath.Join(StateDir(e.cfg.Root), "nats"))
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			e.logger.Error("the engine's state was removed; stopping", "dir", dir)
			return fmt.Errorf("%s was removed: this engine's log and views are gone", dir)
		}
	}
	return nil
}

func (e *Engine) touch() { e.lastActivity.Store(time.Now().UnixNano()) }

// watchIdle stops the engine once nothing has happened for its idle
// timeout, a busy run or a routine that is not paused counting as
// something (the timeout, for an engine started on demand, follows the project's
// engine.idle_timeout_seconds as it is reloaded).
func (e *Engine) watchIdle(ctx context.Context, stop context.CancelCauseFunc) {
	tick := time.NewTicker(min(e.cfg.IdleTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if e.orch.Busy() > 0 || e.routinesActive(ctx) {
				e.touch()
				continue
			}
			idle := time.Duration(e.idleTimeout.Load())
			if time.Since(time.Unix(0, e.lastActivity.Load())) >= idle {
				e.logger.Info("engine idle; stopping", "idle_timeout", idle)
				stop(errIdle)
				return
			}
		}
	}
}

func (e *Engine) activeRuns(ctx context.Context) ([]string, error) {
	runs, err := e.proj.ActiveRuns(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids, nil
}

// fsProfiles converts the project's filesystem profiles, the seeded ones
// included, for agent tools.
func fsProfiles(cfg *assets.Config) map[string]agent.FSProfile {
	out := map[string]agent.FSProfile{}
	for name, p := range cfg.Profiles() {
		out[name] = agent.FSProfile{Name: name, Read: p.Read, Write: p.Write}
	}
	return out
}

// providers converts the project's provider settings.
func providers(cfg *assets.Config) map[string]activity.ProviderSettings {
	out := map[string]activity.ProviderSettings{}
	for name, p := range cfg.Providers {
		out[name] = activity.ProviderSettings{BaseURL: p.BaseURL, APIKeyEnv: p.APIKeyEnv}
	}
	return out
}

// keyEnvs returns the variables the project's providers: configuration
// names as holding API keys, sorted.
func keyEnvs(cfg *assets.Config) []string {
	var out []string
	for _, p := range cfg.Providers {
		if p.APIKeyEnv != "" {
			out = append(out, p.APIKeyEnv)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// job looks a job up in the project's catalogs as they are now (child jobs
// of job.invoke), with backend: auto resolved to backend ("": the config's).
func (e *Engine) job(name, backend string) (*assets.Job, error) {
	return e.catalog.job(name, backend)
}

// Close releases the root: NATS store, views file and engine.json.
func (e *Engine) Close() error {
	var errs []error
	if e.log != nil {
		errs = append(errs, e.log.Close())
	}
	if e.proj != nil {
		errs = append(errs, e.proj.Close())
	}
	removeInfo(e.cfg.Root)
	return errors.Join(errs...)
}
