// Command benchpeers runs Orbit beside the durable-workflow engines a user
// would compare it with on one machine — DBOS Transact Go on PostgreSQL
// and Temporal's dev server — on the same workloads, interleaved, and
// prints one table of medians and ratios (make bench-peers).
//
// Each system runs in a side process of its own, started once and kept
// for the whole run, so that no start-up is counted: Orbit's side is this
// program (benchpeers orbit), an engine with strict durability whose runs
// are submitted through its API; the peers' sides are programs of the
// separate module internal/bench/peers, which alone depends on their
// SDKs. The driver makes a PostgreSQL cluster of its own (fsync and
// synchronous_commit on) and starts Temporal's dev server on an SQLite
// file (synchronous=FULL), then runs rounds: in each, every workload on
// every system in turn, the systems' order rotated from round to round.
// Last, when strace is there, it counts the fsync-family calls each
// system makes over one W1 run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "orbit" {
		if err := orbitMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "benchpeers orbit:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchpeers:", err)
		os.Exit(2)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchpeers:", err)
		os.Exit(1)
	}
	cfg.orbit = []string{self, "orbit"}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchpeers:", err)
		os.Exit(1)
	}
}

// orbitMain is Orbit's side: benchpeers orbit -root <dir>.
func orbitMain(args []string) error {
	fs := flag.NewFlagSet("benchpeers orbit", flag.ContinueOnError)
	root := fs.String("root", "", "the project root of the engine (made when missing)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" {
		return errors.New("-root is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return orbitSide(ctx, *root, os.Stdin, os.Stdout)
}

// config is what a run measures and with what.
type config struct {
	rounds    int
	systems   []string
	workloads []string // W1, W2, W3
	variants  []bool   // fork or not
	steps     int      // W1
	items     int      // W2
	width     int      // W2
	runs      int      // W3
	warmup    bool
	strace    string // auto, on, off

	dbos           string   // the DBOS side's program
	temporal       string   // the Temporal side's program
	temporalServer string   // the Temporal CLI
	pragmas        []string // the dev server's --sqlite-pragma
	pgBin          string   // PostgreSQL's programs ("" finds them)
	keep           bool
	commit         string   // Orbit's commit, for the report
	orbit          []string // the command line of Orbit's side
	timeout        time.Duration
}

var allSystems = []string{"orbit", "dbos", "temporal"}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("benchpeers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{}
	fs.IntVar(&cfg.rounds, "rounds", 5, "interleaved rounds; the table gives each cell's median")
	systems := fs.String("systems", strings.Join(allSystems, ","), "the systems to run, of orbit, dbos, temporal")
	workloads := fs.String("workloads", "W1,W2,W3", "the workloads to run")
	variants := fs.String("variants", "trivial,fork", "the variants to run: trivial, fork (each step forks echo)")
	fs.IntVar(&cfg.steps, "steps", 200, "W1: sequential steps")
	fs.IntVar(&cfg.items, "items", 400, "W2: fan-out items")
	fs.IntVar(&cfg.width, "width", 64, "W2: items at once")
	fs.IntVar(&cfg.runs, "runs", 200, "W3: concurrent runs of three steps")
	fs.BoolVar(&cfg.warmup, "warmup", true, "run each workload once, smaller and untimed, before the rounds")
	fs.StringVar(&cfg.strace, "strace", "auto", "count fsync-family calls on W1 with strace: auto (when strace is there), on, off")
	fs.StringVar(&cfg.dbos, "dbos", "bin/bench-dbos", "the DBOS side (built from internal/bench/peers/dbos)")
	fs.StringVar(&cfg.temporal, "temporal", "bin/bench-temporal", "the Temporal side (built from internal/bench/peers/temporal)")
	fs.StringVar(&cfg.temporalServer, "temporal-server", "bin/temporal", "the Temporal CLI, whose server start-dev is run")
	pragmas := fs.String("temporal-pragmas", defaultPragmas, "the dev server's SQLite pragmas, comma-separated (journal_mode=WAL, …)")
	fs.StringVar(&cfg.pgBin, "pg-bin", "", "the directory of initdb, pg_ctl and postgres (default: found)")
	fs.StringVar(&cfg.commit, "orbit-commit", "", "the commit Orbit was built from, for the report (git describe --always --dirty)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the working directory (databases, logs) after the run")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "the longest one workload may take")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if cfg.systems, err = listOf("-systems", *systems, allSystems); err != nil {
		return nil, err
	}
	if cfg.workloads, err = listOf("-workloads", *workloads, []string{sequential, fanOut, runs}); err != nil {
		return nil, err
	}
	vs, err := listOf("-variants", *variants, []string{"trivial", "fork"})
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		cfg.variants = append(cfg.variants, v == "fork")
	}
	for _, p := range strings.Split(*pragmas, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.pragmas = append(cfg.pragmas, p)
		}
	}
	switch cfg.strace {
	case "auto", "on", "off":
	default:
		return nil, fmt.Errorf("-strace %q: want auto, on or off", cfg.strace)
	}
	for name, n := range map[string]int{"-rounds": cfg.rounds, "-steps": cfg.steps, "-items": cfg.items, "-width": cfg.width, "-runs": cfg.runs} {
		if n < 1 {
			return nil, fmt.Errorf("%s %d: want at least 1", name, n)
		}
	}
	return cfg, nil
}

// listOf splits a comma-separated flag value, keeping only names of
// known, in their order there.
func listOf(flagName, value string, known []string) ([]string, error) {
	var got []string
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		found := false
		for _, k := range known {
			if strings.EqualFold(v, k) {
				got = append(got, k)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: unknown %q (want some of %s)", flagName, v, strings.Join(known, ", "))
		}
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("%s: none given", flagName)
	}
	return got, nil
}

// workload is one cell row of the table: a request and how to name it.
type workload struct {
	req   request
	label string
}

func (cfg *config) workloadList() []workload {
	var list []workload
	for _, w := range cfg.workloads {
		for _, fork := range cfg.variants {
			v := "trivial"
			if fork {
				v = "forking echo"
			}
			switch w {
			case sequential:
				list = append(list, workload{request{Workload: w, Fork: fork, N: cfg.steps},
					fmt.Sprintf("W1: %d sequential steps, %s", cfg.steps, v)})
			case fanOut:
				list = append(list, workload{request{Workload: w, Fork: fork, N: cfg.items, Width: cfg.width},
					fmt.Sprintf("W2: %d-item fan-out, %d at once, fan-in, %s", cfg.items, cfg.width, v)})
			case runs:
				list = append(list, workload{request{Workload: w, Fork: fork, N: cfg.runs},
					fmt.Sprintf("W3: %d concurrent runs of 3 steps, %s", cfg.runs, v)})
			}
		}
	}
	return list
}

// warm is req made small: enough to open connections and fill caches.
func warm(req request) request {
	req.N = max(1, min(req.N, 20))
	return req
}

// run starts the systems, runs the rounds and the strace count, and
// writes the report to out; progress goes to progress.
func run(ctx context.Context, cfg *config, out, progress io.Writer) error {
	dir, err := os.MkdirTemp("", "bench-peers-")
	if err != nil {
		return err
	}
	// The PostgreSQL server, run as another user under root, must reach
	// its directory inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintf(progress, "working directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rep := &report{cfg: cfg, started: time.Now(), loadStart: loadAverage()}
	sides, stop, err := startSystems(ctx, cfg, dir, progress)
	defer stop()
	if err != nil {
		return err
	}
	for _, s := range sides {
		rep.hellos = append(rep.hellos, s.hello)
	}
	list := cfg.workloadList()
	rep.workloads = list
	rep.times = map[string]map[string][]time.Duration{}
	rep.cpu = map[string]map[string][]time.Duration{}
	failed := map[string]error{}
	if cfg.warmup {
		fmt.Fprintln(progress, "warming up")
		for _, w := range list {
			for _, s := range sides {
				if _, err := s.run(ctx, warm(w.req), cfg.timeout); err != nil {
					return fmt.Errorf("warming up: %w", err)
				}
			}
		}
	}
	for r := range cfg.rounds {
		fmt.Fprintf(progress, "round %d of %d\n", r+1, cfg.rounds)
		for _, w := range list {
			for i := range sides {
				s := sides[(i+r)%len(sides)]
				if failed[s.name] != nil {
					continue
				}
				pids := s.pids()
				cpu := cpuTimes(pids)
				d, err := s.run(ctx, w.req, cfg.timeout)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err != nil {
					fmt.Fprintf(progress, "%s failed, left out from now on: %v\nthe end of its log:\n%s", s.name, err, tail(s.log, 20))
					failed[s.name] = err
					continue
				}
				used := cpuSince(cpu, s.pids())
				fmt.Fprintf(progress, "  %-8s %-55s %8.3f s  CPU %7.3f s\n", s.name, w.label, d.Seconds(), used.Seconds())
				rep.add(w.label, s.name, d, used)
			}
		}
	}
	rep.failed = failed
	rep.syncs, rep.straceErr = countSyncs(ctx, cfg, dir, sides, failed, progress)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rep.loadEnd = loadAverage()
	rep.write(out)
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d systems failed", len(failed), len(sides))
	}
	return rep.straceErr
}

// startSystems starts each system's servers and side. stop ends them all,
// whatever was started.
func startSystems(ctx context.Context, cfg *config, dir string, progress io.Writer) ([]*side, func(), error) {
	var sides []*side
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, name := range cfg.systems {
		fmt.Fprintf(progress, "starting %s\n", name)
		s, stopSystem, err := startSystem(ctx, cfg, name, dir)
		stops = append(stops, stopSystem)
		if err != nil {
			return nil, stop, fmt.Errorf("starting %s: %w", name, err)
		}
		stops = append(stops, s.close)
		sides = append(sides, s)
	}
	return sides, stop, nil
}

func startSystem(ctx context.Context, cfg *config, name, dir string) (*side, func(), error) {
	logPath := filepath.Join(dir, name+".log")
	const startTimeout = 3 * time.Minute
	switch name {
	case "orbit":
		argv := append(append([]string(nil), cfg.orbit...), "-root", filepath.Join(dir, "orbit"))
		s, err := startSide(ctx, name, argv, nil, logPath, startTimeout)
		if err == nil && cfg.commit != "" {
			s.hello.Versions["Orbit"] += " (" + cfg.commit + ")"
		}
		return s, func() {}, err
	case "dbos":
		bin, err := findPostgres(cfg.pgBin)
		if err != nil {
			return nil, func() {}, err
		}
		pg, err := startPostgres(ctx, bin, filepath.Join(dir, "postgres"))
		if err != nil {
			return nil, func() {}, err
		}
		settings, err := pg.settings(ctx)
		if err != nil {
			return nil, pg.stop, err
		}
		s, err := startSide(ctx, name, []string{cfg.dbos, "-database-url", pg.url(), "-postgres", pg.version}, nil, logPath, startTimeout)
		if err != nil {
			return nil, pg.stop, err
		}
		s.hello.Durability += "; the server runs with " + settings
		s.pids = func() []int { return append([]int{s.cmd.Process.Pid}, pg.pids()...) }
		return s, pg.stop, nil
	case "temporal":
		srv, err := startTemporal(ctx, cfg.temporalServer, filepath.Join(dir, "temporal.db"), filepath.Join(dir, "temporal-server.log"), cfg.pragmas)
		if err != nil {
			return nil, func() {}, err
		}
		s, err := startSide(ctx, name, []string{cfg.temporal, "-address", srv.address, "-server", srv.version, "-durability", srv.durability}, nil, logPath, startTimeout)
		if err != nil {
			return nil, srv.stop, err
		}
		s.pids = func() []int { return []int{s.cmd.Process.Pid, srv.cmd.Process.Pid} }
		return s, srv.stop, nil
	}
	return nil, func() {}, fmt.Errorf("no system %q", name)
}

// countSyncs runs W1 (trivial) once more on each system under strace. A
// count that could not be taken is an error beside the others' counts.
func countSyncs(ctx context.Context, cfg *config, dir string, sides []*side, failed map[string]error, progress io.Writer) (map[string]syncCount, error) {
	if cfg.strace == "off" || !slices.Contains(cfg.workloads, sequential) {
		return nil, nil
	}
	if _, err := exec.LookPath("strace"); err != nil {
		if cfg.strace == "on" {
			return nil, errors.New("-strace on: strace is not on PATH")
		}
		fmt.Fprintln(progress, "strace is not on PATH: no fsync counts")
		return nil, nil
	}
	var errs []error
	counts := map[string]syncCount{}
	req := request{Workload: sequential, N: cfg.steps}
	for _, s := range sides {
		if failed[s.name] != nil {
			continue
		}
		fmt.Fprintf(progress, "counting %s's fsyncs over W1 under strace\n", s.name)
		var wall time.Duration
		calls, inSyncs, err := traceSyncs(ctx, dir, s.pids(), func() error {
			var err error
			wall, err = s.run(ctx, req, cfg.timeout)
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s under strace: %w", s.name, err))
			continue
		}
		counts[s.name] = syncCount{calls: calls, seconds: inSyncs, wall: wall, steps: cfg.steps}
	}
	return counts, errors.Join(errs...)
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error() + "\n"
	}
	lines := strings.SplitAfter(string(data), "\n")
	return strings.Join(lines[max(0, len(lines)-n-1):], "")
}
