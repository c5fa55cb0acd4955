package chaos_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
)

// trialSpec is what a trial does: run a job and kill the engine at a point.
type trialSpec struct {
	job   *job
	point point
}

// trial is one trial: its spec, its random source (derived from the
// suite's seed and the trial's number, so a seed repeats every trial
// whatever the order they run in) and what came of it.
type trial struct {
	trialSpec
	n   int
	rng *rand.Rand

	ran   bool // selected by -run, and run
	runID string
	// signalAt is when a gate job's signal is due: a random moment after
	// the submission, so that kills land in the wait; signalled once the
	// engine took it.
	signalAt  time.Time
	signalled bool
	kills     int
	reruns    int    // executions of shell step attempts beyond their first
	output    string // canonical JSON of the run's output
	failed    []failure
	story     string // the engines' lives, for a failure report
	elapsed   time.Duration
}

// failure is a check that did not hold, with its evidence.
type failure struct {
	check string
	err   error
}

func (f *failure) Error() string { return f.check + ": " + f.err.Error() }

// in names the check a phase of the trial stands for: the submission,
// the kills and restarts, the run's end.
func in(check string, err error) error {
	if err == nil {
		return nil
	}
	return &failure{check: check, err: err}
}

// Timeouts of a trial's phases.
const (
	failpointTimeout = 60 * time.Second // for the engine to reach the point
	finishTimeout    = 90 * time.Second // for the run to end once nothing kills it
	// pointGrace is how long a failpoint may still fire after the run
	// finished (the last step's ack, the projection of the last events).
	pointGrace = 2 * time.Second
	pollEvery  = 200 * time.Millisecond
)

func (tr *trial) name() string {
	return fmt.Sprintf("%02d-%s-%s", tr.n, tr.job.name, strings.ReplaceAll(tr.point.String(), " ", "_"))
}

// fail records a check that did not hold.
func (tr *trial) fail(check string, err error) {
	tr.failed = append(tr.failed, failure{check: check, err: err})
}

// outcome is the table's verdict: ok, or the first failed check.
func (tr *trial) outcome() string {
	if len(tr.failed) == 0 {
		return "ok"
	}
	msg := tr.failed[0].err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if r := []rune(msg); len(r) > 70 {
		msg = string(r[:67]) + "..."
	}
	out := "FAIL " + tr.failed[0].check + ": " + msg
	if len(tr.failed) > 1 {
		out += fmt.Sprintf(" (+%d)", len(tr.failed)-1)
	}
	return out
}

// run executes the trial on a fresh rig: start the engine (with the
// failpoint), submit the job, kill, restart, let the run finish, check.
// want is the reference output ("" for a reference trial).
func (tr *trial) run(t *testing.T, want string) {
	r := newRig(t, tr.job)
	defer func() { tr.story = r.story() }()
	if err := tr.drive(r); err != nil {
		var f *failure
		if !errors.As(err, &f) {
			f = &failure{check: "run", err: err}
		}
		tr.failed = append(tr.failed, *f)
		return
	}
	tr.check(r, want)
}

// drive brings the trial's run to its end, killing the engine on the way.
func (tr *trial) drive(r *rig) error {
	if err := tr.submit(r); err != nil {
		return in("submit", err)
	}
	var err error
	switch {
	case tr.point.failpoint != "":
		err = tr.awaitFailpoint(r)
	case tr.point.random > 0:
		err = tr.killRandomly(r)
	}
	if err != nil {
		return in("kill", err)
	}
	return in("finish", tr.awaitFinish(r))
}

// submit starts the first engine (with the trial's failpoint), creates
// the Groundhog task if the job needs one, and requests the run.
func (tr *trial) submit(r *rig) error {
	if err := r.start(tr.point.env()); err != nil {
		return err
	}
	if tr.job.groundhog || tr.job.ship != "" {
		if err := r.createTask(); err != nil {
			return err
		}
	}
	runID, err := r.submit()
	if err != nil {
		// A failpoint may have ended the engine before the command
		// returned: the run may still have been requested.
		if !r.eng.diesWithin(time.Second) {
			return err
		}
		if err := tr.restart(r); err != nil {
			return err
		}
		if runID, err = r.latestRun(); err != nil || runID == "" {
			return fmt.Errorf("the submission failed and no run exists (%v)", err)
		}
	}
	tr.runID = runID
	tr.signalAt = time.Now().Add(time.Duration(1000+tr.rng.IntN(1500)) * time.Millisecond)
	return nil
}

// signal sends a gate job's signal once it is due, and again on every
// poll until the engine takes it: a run that is not waiting yet refuses
// it (exit 2), a dead engine cannot answer.
func (tr *trial) signal(r *rig) {
	if !tr.job.gate || tr.signalled || time.Now().Before(tr.signalAt) {
		return
	}
	res, err := r.orbit("run", "signal", tr.runID, "go", "--data", `{"by":"chaos"}`)
	tr.signalled = err == nil && res.Code == 0
}

// restart counts a death of the engine and starts it again, without any
// failpoint.
func (tr *trial) restart(r *rig) error {
	tr.kills++
	r.eng.forgetInfo(r.p)
	if err := r.start(""); err != nil {
		return fmt.Errorf("restarting after kill %d: %w", tr.kills, err)
	}
	return nil
}

// awaitFailpoint waits until the engine kills itself at the point, then
// restarts it. A run that finishes without the engine reaching its point
// is a failure of the trial: the point is not where the table says.
func (tr *trial) awaitFailpoint(r *rig) error {
	deadline := time.Now().Add(failpointTimeout)
	var finished time.Time
	for {
		select {
		case <-r.eng.exited:
			if !r.eng.killedBySIGKILL() {
				return fmt.Errorf("the engine exited (%v) instead of dying at %s:\n%s", r.eng.state, tr.point, r.eng.stderr)
			}
			return tr.restart(r)
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the engine did not reach %s within %s", tr.point, failpointTimeout)
		}
		tr.signal(r)
		if finished.IsZero() {
			if v, err := r.run(tr.runID); err == nil && events.Terminal(v.State) {
				finished = time.Now()
			}
		} else if time.Since(finished) > pointGrace {
			return fmt.Errorf("the run ended without the engine reaching %s", tr.point)
		}
	}
}

// killRandomly sends the trial's SIGKILLs, each a random 50–1500 ms after
// the run was submitted or the engine restarted.
func (tr *trial) killRandomly(r *rig) error {
	for range tr.point.random {
		time.Sleep(time.Duration(50+tr.rng.IntN(1451)) * time.Millisecond)
		if !r.eng.alive() {
			return fmt.Errorf("the engine died by itself (%v):\n%s", r.eng.state, r.eng.stderr)
		}
		r.eng.kill()
		if err := tr.restart(r); err != nil {
			return err
		}
	}
	return nil
}

// awaitFinish waits for the run to reach a terminal state on the current
// engine, which must not die.
func (tr *trial) awaitFinish(r *rig) error {
	deadline := time.Now().Add(finishTimeout)
	for {
		if !r.eng.alive() {
			return fmt.Errorf("the engine died by itself (%v):\n%s", r.eng.state, r.eng.stderr)
		}
		tr.signal(r)
		v, err := r.run(tr.runID)
		if err == nil && events.Terminal(v.State) {
			return nil
		}
		if time.Now().After(deadline) {
			state := "unknown"
			if v != nil {
				state = v.State
			}
			return fmt.Errorf("the run did not finish within %s (state %s, last error %v)", finishTimeout, state, err)
		}
		time.Sleep(pollEvery)
	}
}

// check runs every check on the finished run and records those that fail.
func (tr *trial) check(r *rig, want string) {
	v, err := r.run(tr.runID)
	if err != nil {
		tr.fail("run", err)
		return
	}
	evs, err := r.events(tr.runID)
	if err != nil {
		tr.fail("events", err)
		return
	}
	lines, err := readEffects(r.effects)
	if err != nil {
		tr.fail("effects", err)
		return
	}
	tr.output = canonical(v.Output)
	tr.reruns = len(lines) - len(distinct(lines))
	checks := []checkResult{{"state", checkSuccess(v)}}
	if tr.job.ship != "" {
		// A shipping run's output names its run (the worktree, the
		// branch) and commits that carry the run's id: the check of what
		// it shipped stands in for the comparison with the reference.
		checks = append(checks, checkResult{"shipped", checkShipped(r)})
	} else {
		checks = append(checks, checkResult{"output", checkOutput(tr.output, want)})
	}
	checks = append(checks,
		checkResult{"effects", checkEffects(evs, lines, r.shared)},
		checkResult{"protocol", checkStepEvents(evs)},
		checkResult{"replay", checkReplay(r)},
	)
	if tr.job.groundhog {
		checks = append(checks, checkResult{"groundhog", checkGroundhog(r)})
	}
	for _, c := range checks {
		if c.err != nil {
			tr.fail(c.name, c.err)
		}
	}
}

// checkResult is the result of one check of a finished run.
type checkResult struct {
	name string
	err  error
}

// report is the failure message of a trial: what it was, how to repeat
// it, every failed check with its evidence, and the engines' story.
func (tr *trial) report(seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trial %s: job %s, point %s, kills %d, run %s (CHAOS_SEED=%d repeats it)\n",
		tr.name(), tr.job.name, tr.point, tr.kills, tr.runID, seed)
	for _, f := range tr.failed {
		fmt.Fprintf(&b, "- %s: %v\n", f.check, f.err)
	}
	b.WriteString(tr.story)
	return b.String()
}
