package chaos_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// loss is what a cluster trial takes away mid-run: the node leading
// ORBIT_EVENTS (killed, then restarted), the engine holding the run's
// lease (kill -9, not restarted: the other engine finishes the run), or
// both.
type loss int

const (
	lossNone loss = iota
	lossNode
	lossEngine
	lossBoth
)

func (l loss) String() string {
	return [...]string{"none (reference)", "leader node", "engine", "node+engine"}[l]
}

func (l loss) node() bool   { return l == lossNode || l == lossBoth }
func (l loss) engine() bool { return l == lossEngine || l == lossBoth }

// clusterJobs are the chaos jobs the cluster trials run.
var clusterJobs = []string{"sequential", "fan_out"}

// clusterTrial is one trial on a three-node cluster with two engines.
type clusterTrial struct {
	trial
	loss        loss
	nodeKills   int
	engineKills int
}

func (ct *clusterTrial) name() string {
	return fmt.Sprintf("%02d-%s-%s", ct.n, ct.job.name, strings.ReplaceAll(ct.loss.String(), " ", "_"))
}

// TestChaosCluster runs the chaos jobs on the cluster harness (three
// nats-servers in the test process, two `orbit serve --nats-url` engines)
// and takes the stream leader's node, the engine holding the run, or both
// away at random moments; the same checks as TestChaos hold, on the
// engine that survives. Only in full mode (make chaos): each trial starts
// a cluster of its own.
func TestChaosCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite kills real engines; skipped under -short")
	}
	if os.Getenv("CLUSTER_CHAOS") == "" {
		t.Skip("the cluster trials run under make cluster-chaos")
	}
	cfg := configure(t)
	s := &suite{cfg: cfg, sem: make(chan struct{}, cfg.parallel), began: time.Now()}
	s.say(t, fmt.Sprintf("chaos cluster: seed %d (CHAOS_SEED=%d repeats it)", cfg.seed, cfg.seed))
	testkit.Binary(t)

	byName := map[string]*job{}
	for _, j := range jobs {
		byName[j.name] = j
	}
	var refs, trials []*clusterTrial
	add := func(list *[]*clusterTrial, j *job, l loss) {
		n := len(refs) + len(trials) + 1
		ct := &clusterTrial{loss: l}
		ct.trialSpec = trialSpec{job: j, point: none}
		ct.n = n
		ct.rng = rand.New(rand.NewPCG(cfg.seed, uint64(1000+n)))
		*list = append(*list, ct)
	}
	for _, name := range clusterJobs {
		add(&refs, byName[name], lossNone)
	}
	for _, name := range clusterJobs {
		for _, l := range []loss{lossNode, lossEngine, lossBoth} {
			for range 2 {
				add(&trials, byName[name], l)
			}
		}
	}

	s.runCluster(t, "reference", refs, nil)
	want := map[*job]string{}
	for _, ct := range refs {
		if len(ct.failed) == 0 {
			want[ct.job] = ct.output
		}
	}
	s.runCluster(t, "loss", trials, want)
	s.reportCluster(t, append(refs, trials...))
}

// runCluster runs cluster trials as parallel subtests of group.
func (s *suite) runCluster(t *testing.T, group string, trials []*clusterTrial, want map[*job]string) {
	t.Run(group, func(t *testing.T) {
		for _, ct := range trials {
			t.Run(ct.name(), func(t *testing.T) {
				t.Parallel()
				s.sem <- struct{}{}
				defer func() { <-s.sem }()
				ct.ran = true
				began := time.Now()
				defer func() {
					ct.elapsed = time.Since(began)
					if t.Failed() && len(ct.failed) == 0 {
						ct.fail("setup", fmt.Errorf("the trial stopped early; see the log above"))
					}
					if len(ct.failed) > 0 {
						t.Error(ct.report(s.cfg.seed))
					}
				}()
				ref := ""
				if want != nil {
					var ok bool
					if ref, ok = want[ct.job]; !ok {
						ct.fail("output", errNoReference)
					}
				}
				ct.run(t, ref)
			})
		}
	})
}

// reportCluster prints the table of cluster trials and the summary line.
func (s *suite) reportCluster(t *testing.T, trials []*clusterTrial) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "#\tjob\tloss\tnode kills\tengine kills\treruns\toutcome\ttime")
	ran, failed := 0, 0
	for _, ct := range trials {
		if !ct.ran {
			continue
		}
		ran++
		if len(ct.failed) > 0 {
			failed++
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", ct.n, ct.job.name, ct.loss, ct.nodeKills, ct.engineKills, ct.reruns, ct.outcome(), ct.elapsed.Round(100*time.Millisecond))
	}
	_ = w.Flush()
	fmt.Fprintf(&b, "chaos cluster: %d trials, %d ok, %d failed in %s; seed %d (CHAOS_SEED=%d repeats it)",
		ran, ran-failed, failed, time.Since(s.began).Round(time.Second), s.cfg.seed, s.cfg.seed)
	s.say(t, b.String())
}

// clusterRig is a cluster and two rigs on it, one per engine: each its
// own project root with the cluster's identities and one log key, and one
// effects file for both.
type clusterRig struct {
	c    *testkit.Cluster
	rigs [2]*rig
}

func newClusterRig(t *testing.T, j *job) *clusterRig {
	t.Helper()
	cr := &clusterRig{c: testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))}
	key := filepath.Join(t.TempDir(), "log.key")
	effects := filepath.Join(t.TempDir(), "effects.txt")
	for i := range cr.rigs {
		r := &rig{t: t, job: j, p: testkit.ClusterProject(t, cr.c, key), effects: effects, shared: true}
		r.p.Env = append(r.p.Env, "CHAOS_EFFECTS="+effects)
		r.p.WriteFile(filepath.Join(".orbit", "jobs", j.jobName()+".yaml"), j.yaml(t))
		t.Cleanup(r.stop)
		cr.rigs[i] = r
	}
	return cr
}

// run executes the trial: both engines, the run submitted through the
// first, the losses, the run's end on a surviving engine, the checks.
func (ct *clusterTrial) run(t *testing.T, want string) {
	cr := newClusterRig(t, ct.job)
	defer func() {
		for i, r := range cr.rigs {
			ct.story += fmt.Sprintf("--- rig %d\n%s", i+1, r.story())
		}
	}()
	for _, r := range cr.rigs {
		if err := r.start(""); err != nil {
			ct.fail("submit", err)
			return
		}
	}
	runID, err := cr.rigs[0].submit()
	if err != nil {
		ct.fail("submit", err)
		return
	}
	ct.runID = runID
	if err := ct.takeAway(cr); err != nil {
		ct.fail("kill", err)
		return
	}
	r := cr.survivor()
	if err := ct.awaitFinish(r); err != nil {
		ct.fail("finish", err)
		return
	}
	ct.check(r, want)
	for _, o := range cr.rigs {
		if o != r && o.eng.alive() {
			if err := replayOn(o); err != nil {
				ct.fail("replay", fmt.Errorf("the other engine: %w", err))
			}
		}
	}
}

// replayOn is checkReplay through a rig, asked again (up to five times, a
// second apart) while the command finds no engine to answer it (exit 3):
// after a node's loss the engines' request subscriptions may take a moment
// to be routed again.
func replayOn(r *rig) error {
	var err error
	for range 5 {
		var res testkit.Result
		if res, err = r.orbit("replay", "--verify"); err == nil && res.Code == 0 {
			return nil
		} else if err == nil {
			err = fmt.Errorf("orbit replay --verify: %s", res)
			if res.Code != 3 {
				return err
			}
		}
		time.Sleep(time.Second)
	}
	return err
}

// survivor is a rig whose engine still runs.
func (cr *clusterRig) survivor() *rig {
	for _, r := range cr.rigs {
		if r.eng.alive() {
			return r
		}
	}
	return cr.rigs[0]
}

// takeAway does the trial's losses, each at a random moment 200–800 ms
// after the run started (both jobs take more than a second): the stream leader's node is killed and restarted
// 1–3 s later, the engine holding the run's lease is killed -9 (while the
// node is down, in a trial that does both, if its moment falls there).
func (ct *clusterTrial) takeAway(cr *clusterRig) error {
	if ct.loss == lossNone {
		return nil
	}
	// The moments count from the run's start (its lease taken): a run
	// may wait in the queue a while after its submission.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := leaseHolder(ctx, cr, ct.runID); err != nil {
		return fmt.Errorf("the run did not start: %w", err)
	}
	began := time.Now()
	nodeAt := time.Duration(200+ct.rng.IntN(601)) * time.Millisecond
	engineAt := time.Duration(200+ct.rng.IntN(601)) * time.Millisecond
	down := time.Duration(1000+ct.rng.IntN(2001)) * time.Millisecond
	type step struct {
		at time.Duration
		do func() error
	}
	var steps []step
	if ct.loss.node() {
		node := -1
		steps = append(steps,
			step{nodeAt, func() (err error) { node, err = ct.killLeader(cr); return err }},
			step{nodeAt + down, func() error { cr.c.Restart(node); return nil }})
	}
	if ct.loss.engine() {
		steps = append(steps, step{engineAt, func() error { return ct.killHolder(cr) }})
	}
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.at, b.at) })
	for _, s := range steps {
		time.Sleep(time.Until(began.Add(s.at)))
		if err := s.do(); err != nil {
			return err
		}
	}
	return nil
}

// killLeader kills the node leading ORBIT_EVENTS and returns its index.
func (ct *clusterTrial) killLeader(cr *clusterRig) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	i, err := cr.c.StreamLeader(ctx, events.EventsStream)
	if err != nil {
		return -1, err
	}
	cr.c.Kill(i)
	ct.nodeKills++
	return i, nil
}

// killHolder kills -9 the engine that holds the run's lease.
func (ct *clusterTrial) killHolder(cr *clusterRig) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	holder, err := leaseHolder(ctx, cr, ct.runID)
	if err != nil {
		if v, verr := cr.survivor().run(ct.runID); verr == nil && events.Terminal(v.State) {
			return fmt.Errorf("the run ended (%s) before the engine's loss: %w", v.State, err)
		}
		return err
	}
	cr.rigs[holder].eng.kill()
	cr.rigs[holder].eng.forgetInfo(cr.rigs[holder].p)
	ct.engineKills++
	ct.kills++
	return nil
}

// leaseHolder returns the index of the rig whose engine holds run id's
// lease, waiting (until ctx ends) while none does.
func leaseHolder(ctx context.Context, cr *clusterRig, id string) (int, error) {
	js, err := jetstream.New(cr.c.Connect())
	if err != nil {
		return -1, err
	}
	var last error
	for {
		if kv, err := js.KeyValue(ctx, events.LeasesBucket); err != nil {
			last = err
		} else if entry, err := kv.Get(ctx, "run."+events.Token(id)); err != nil {
			last = err
		} else {
			var rec struct{ Engine string }
			if err := json.Unmarshal(entry.Value(), &rec); err != nil {
				return -1, fmt.Errorf("the lease of run %s: %w", id, err)
			}
			for i, r := range cr.rigs {
				if r.eng.id == rec.Engine {
					return i, nil
				}
			}
			last = fmt.Errorf("held by %s, neither engine of the trial", rec.Engine)
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no engine holds run %s's lease: %w", id, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// report is the failure message of a cluster trial: what it was, how to
// repeat it, every failed check with its evidence, and both rigs' story.
func (ct *clusterTrial) report(seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trial %s: job %s, loss %s, %d node kill(s), %d engine kill(s), run %s (CHAOS_SEED=%d repeats it)\n",
		ct.name(), ct.job.name, ct.loss, ct.nodeKills, ct.engineKills, ct.runID, seed)
	for _, f := range ct.failed {
		fmt.Fprintf(&b, "- %s: %v\n", f.check, f.err)
	}
	b.WriteString(ct.story)
	return b.String()
}
