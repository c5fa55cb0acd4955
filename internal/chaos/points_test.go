package chaos_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// point is where a trial kills the engine: a failpoint the engine reaches
// (ORBIT_FAILPOINT, its at-th hit), or random SIGKILLs sent by the suite.
type point struct {
	failpoint string
	at        int
	// random is the number of SIGKILLs the suite sends (1–3), each after
	// a random delay; zero for a failpoint.
	random int
}

// none is the point of a reference trial: the engine is never killed.
var none = point{}

func fixed(name string, at int) point { return point{failpoint: name, at: at} }

// env is the value of ORBIT_FAILPOINT for the first engine of the trial.
func (p point) env() string {
	if p.failpoint == "" {
		return ""
	}
	return fmt.Sprintf("%s@%d", p.failpoint, p.at)
}

func (p point) String() string {
	switch {
	case p.failpoint != "":
		return p.env()
	case p.random > 0:
		return fmt.Sprintf("random×%d", p.random)
	}
	return "none (reference)"
}

// Failpoints of the executor, which every job reaches.
const (
	afterDispatch  = "orchestrator-after-dispatch"
	beforeActivity = "worker-before-activity"
	afterEffect    = "worker-after-side-effect"
	afterFinished  = "worker-after-finished"
	midBatch       = "projector-mid-batch"
	// A step command the server answered for and, on the embedded
	// store's asynchronous ORBIT_STEPS, may not have written; a command's
	// ack likewise.
	commandSent  = events.FailpointStepCommandSent
	commandAcked = events.FailpointStepCommandAcked
	// A step the orchestrator decides itself whose one event is sent and
	// may not be stored.
	decided = interpreter.FailpointDecided
)

// fixedPoints are every failpoint that applies to j, at hits that land
// mid-job.
func fixedPoints(j *job) []point {
	pts := []point{
		fixed(afterDispatch, j.mid),
		fixed(beforeActivity, j.mid),
		fixed(afterEffect, j.mid),
		fixed(afterFinished, j.mid),
		fixed(commandSent, j.mid),
		fixed(commandAcked, j.mid),
	}
	if j.batch > 0 {
		pts = append(pts, fixed(midBatch, j.batch))
	}
	if j.decided > 0 {
		pts = append(pts, fixed(decided, j.decided))
	}
	// A ship job is also killed at each of its steps with the step's
	// effect done and not recorded.
	for hit := 1; hit <= j.steps; hit++ {
		if hit != j.mid {
			pts = append(pts, fixed(afterEffect, hit))
		}
	}
	if j.groundhog {
		pts = append(pts,
			// greet's verification passed, its commit is not made.
			fixed("groundhog-after-verification", 1),
			// test's second attempt passed, its commit is not made.
			fixed("groundhog-after-verification", 2),
			// test's first attempt failed verification: recorded, not rewound.
			fixed("groundhog-before-rewind", 1),
			// rewound in git, groundhog.rewound not recorded.
			fixed("groundhog-after-rewind", 1),
		)
	}
	return pts
}

// defaultPlan is the quick suite: every distinct failpoint once, spread
// over the jobs, and three random trials on jobs the seed picks.
func defaultPlan(rng *rand.Rand) []trialSpec {
	byName := map[string]*job{}
	for _, j := range jobs {
		byName[j.name] = j
	}
	at := func(jobName, fp string, hit int) trialSpec {
		j := byName[jobName]
		if hit == 0 {
			hit = j.mid
		}
		return trialSpec{job: j, point: fixed(fp, hit)}
	}
	specs := []trialSpec{
		at("sequential", afterFinished, 0),
		at("parallel", afterDispatch, 0),
		at("fan_out", beforeActivity, 0),
		at("fan_out", midBatch, byName["fan_out"].batch),
		at("loop", afterEffect, 0),
		at("sequential", commandSent, 0),
		at("parallel", commandAcked, 0),
		at("groundhog", "groundhog-after-verification", 2),
		at("groundhog", "groundhog-before-rewind", 1),
		at("groundhog", "groundhog-after-rewind", 1),
		at("groundhog_held", "groundhog-after-verification", 2),
		at("gate", afterEffect, 0),
		at("decided", decided, byName["decided"].decided),
		at("ship_local", afterEffect, 0),
		at("ship_pr", afterEffect, 0),
	}
	for _, i := range rng.Perm(len(jobs))[:3] {
		specs = append(specs, trialSpec{job: jobs[i], point: point{random: 1 + rng.IntN(3)}})
	}
	return specs
}

// fullPlan is `make chaos`: every job at every failpoint that applies to
// it, and five random trials per job.
func fullPlan(rng *rand.Rand) []trialSpec {
	var specs []trialSpec
	for _, j := range jobs {
		for _, p := range fixedPoints(j) {
			specs = append(specs, trialSpec{job: j, point: p})
		}
		for range 5 {
			specs = append(specs, trialSpec{job: j, point: point{random: 1 + rng.IntN(3)}})
		}
	}
	return specs
}
