package chaos_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/orbitrun/orbit/internal/testkit"
)

// config is the suite's configuration, from the environment.
type config struct {
	full     bool
	seed     uint64
	parallel int
}

func configure(t *testing.T) config {
	t.Helper()
	cfg := config{full: os.Getenv("CHAOS") == "full", seed: uint64(time.Now().UnixNano()), parallel: 2}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		cfg.seed = seed
	}
	if s := os.Getenv("CHAOS_PARALLEL"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_PARALLEL=%q: want a positive number", s)
		}
		cfg.parallel = n
	}
	return cfg
}

func (c config) mode() string {
	if c.full {
		return "full"
	}
	return "default"
}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite kills real engines; skipped under -short")
	}
	cfg := configure(t)
	s := &suite{cfg: cfg, sem: make(chan struct{}, cfg.parallel), began: time.Now()}
	s.say(t, fmt.Sprintf("chaos: %s mode, seed %d (CHAOS_SEED=%d repeats it)", cfg.mode(), cfg.seed, cfg.seed))
	testkit.Binary(t) // built once, before trials run in parallel

	rng := rand.New(rand.NewPCG(cfg.seed, 0))
	specs := defaultPlan(rng)
	if cfg.full {
		specs = fullPlan(rng)
	}
	refs := s.referenceTrials(specs)
	trials := s.trials(specs, len(refs))

	s.runAll(t, "reference", refs, nil)
	want := map[*job]string{}
	for _, tr := range refs {
		if len(tr.failed) == 0 {
			want[tr.job] = tr.output
		}
	}
	s.runAll(t, "kill", trials, want)
	s.report(t, append(refs, trials...))
}

// suite runs trials, a bounded number at a time.
type suite struct {
	cfg   config
	sem   chan struct{}
	began time.Time
}

// referenceTrials are one uninterrupted run of each job the plan uses.
func (s *suite) referenceTrials(specs []trialSpec) []*trial {
	var refs []*trial
	for _, j := range jobs {
		for _, sp := range specs {
			if sp.job == j {
				refs = append(refs, s.newTrial(trialSpec{job: j, point: none}, len(refs)+1))
				break
			}
		}
	}
	return refs
}

// trials numbers the plan's trials after the first references.
func (s *suite) trials(specs []trialSpec, first int) []*trial {
	trials := make([]*trial, len(specs))
	for i, sp := range specs {
		trials[i] = s.newTrial(sp, first+i+1)
	}
	return trials
}

func (s *suite) newTrial(sp trialSpec, n int) *trial {
	return &trial{trialSpec: sp, n: n, rng: rand.New(rand.NewPCG(s.cfg.seed, uint64(n)))}
}

// runAll runs trials as parallel subtests of group and returns when all
// are done. want holds the reference output of each job; nil means these
// are the reference trials.
func (s *suite) runAll(t *testing.T, group string, trials []*trial, want map[*job]string) {
	t.Run(group, func(t *testing.T) {
		for _, tr := range trials {
			t.Run(tr.name(), func(t *testing.T) {
				t.Parallel()
				s.sem <- struct{}{}
				defer func() { <-s.sem }()
				tr.ran = true
				began := time.Now()
				defer func() {
					tr.elapsed = time.Since(began)
					if t.Failed() && len(tr.failed) == 0 {
						tr.fail("setup", fmt.Errorf("the trial stopped early; see the log above"))
					}
					if len(tr.failed) > 0 {
						t.Error(tr.report(s.cfg.seed))
					}
				}()
				ref := ""
				if want != nil {
					var ok bool
					if ref, ok = want[tr.job]; !ok {
						tr.fail("output", errNoReference)
					}
				}
				tr.run(t, ref)
			})
		}
	})
}

// report prints the table of trials and the summary line.
func (s *suite) report(t *testing.T, trials []*trial) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "#\tjob\tpoint\tkills\treruns\toutcome\ttime")
	ran, failed := 0, 0
	for _, tr := range trials {
		if !tr.ran {
			continue // not selected by -run
		}
		ran++
		if len(tr.failed) > 0 {
			failed++
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", tr.n, tr.job.name, tr.point, tr.kills, tr.reruns, tr.outcome(), tr.elapsed.Round(100*time.Millisecond))
	}
	_ = w.Flush()
	fmt.Fprintf(&b, "chaos: %d trials, %d ok, %d failed in %s; %s mode, seed %d (CHAOS_SEED=%d repeats it)",
		ran, ran-failed, failed, time.Since(s.began).Round(time.Second), s.cfg.mode(), s.cfg.seed, s.cfg.seed)
	s.say(t, b.String())
}

// say logs text, and in full mode (make chaos) also prints it to stdout
// as it is, without the test log's indentation.
func (s *suite) say(t *testing.T, text string) {
	t.Helper()
	t.Log("\n" + text)
	if s.cfg.full {
		fmt.Println(text)
	}
}

var errNoReference = errors.New("no reference output: the job's uninterrupted run failed")
