package main_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// tallyJob has four shell steps that each append their name and the run's
// id to tally.txt; the first waits for the file go.
const tallyJob = `
schemaVersion: 2
kind: Job
metadata: {name: tally}
spec:
  steps:
    - {id: a, spec: {type: shell, program: sh, args: ["-c", "while [ ! -f go ]; do sleep 0.05; done; echo a-$ORBIT_RUN_ID >> tally.txt"], allowed_programs: [sh]}}
    - {id: b, spec: {type: shell, program: sh, args: ["-c", "echo b-$ORBIT_RUN_ID >> tally.txt"], allowed_programs: [sh]}}
    - {id: c, spec: {type: shell, program: sh, args: ["-c", "echo c-$ORBIT_RUN_ID >> tally.txt"], allowed_programs: [sh]}}
    - {id: d, spec: {type: shell, program: sh, args: ["-c", "echo d-$ORBIT_RUN_ID >> tally.txt"], allowed_programs: [sh]}}
`

// TestStepCommandsLostWithTheEngineAreSentAgain kills the engine (SIGKILL,
// a real `orbit serve`) while three runs are under way: right after the
// server answered for a step command that ORBIT_STEPS, persisted
// asynchronously, has not written yet, and right after it confirmed a
// command's ack that it has not written yet. The engine started next
// sends the lost command again from its step.started, and takes a
// command whose ack was lost for done without running it: every run
// finishes once, each step once, no step runs again after its
// step.finished and every repeat is on record (a step another run had
// under way when the engine died runs again, as after any crash), and the
// log replays and audits clean.
func TestStepCommandsLostWithTheEngineAreSentAgain(t *testing.T) {
	t.Parallel()
	for _, point := range []string{events.FailpointStepCommandSent, events.FailpointStepCommandAcked} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			p := testkit.NewProject(t)
			p.WriteFile(".orbit/jobs/tally.yaml", tallyJob)
			died := serveToFailpoint(t, p, point+"@5")
			// The runs' first steps wait until all three are under way, so
			// that the fifth command, or ack, belongs to a second step.
			var runs []string
			for range 3 {
				r := p.Orbit("job", "run", "tally", "--detach")
				require.Equal(t, 0, r.Code, r.String())
				runs = append(runs, strings.TrimSpace(r.Stdout))
			}
			p.WriteFile("go", "")
			died()

			serve(t, p)
			for _, id := range runs {
				waitForLong(t, "run "+id+" to finish", func() bool { return terminal(p, id) })
			}
			tally := readLines(t, filepath.Join(p.Root, "tally.txt"))
			for _, id := range runs {
				assert.Equal(t, events.StateSuccess, runView(t, p, id).State, id)
				assert.Len(t, runEvents(t, p, id, "--type", events.RunFinished), 1, "%s finished once", id)
				for _, step := range []string{"a", "b", "c", "d"} {
					evs := runEvents(t, p, id, "--step", step)
					require.Equal(t, 1, countType(evs, events.StepFinished), "%s step %s finished once", id, step)
					var finished uint64
					for _, ev := range evs {
						if ev.Type == events.StepFinished {
							finished = ev.Seq
						}
					}
					for _, ev := range evs {
						if ev.Type == events.ActivityStarted {
							assert.Less(t, ev.Seq, finished, "%s step %s started again after it finished", id, step)
						}
					}
					ran := count(tally, fmt.Sprintf("%s-%s", step, id))
					assert.GreaterOrEqual(t, ran, 1, "%s step %s ran", id, step)
					// The first execution has no activity.started (step
					// protocol 5 on an embedded store), each repeat has one.
					assert.LessOrEqual(t, ran, countType(evs, events.ActivityStarted)+1, "%s step %s: every execution on record", id, step)
				}
			}
			r := p.Orbit("replay", "--verify")
			require.Equal(t, 0, r.Code, r.String())
			assert.Contains(t, r.Stdout, " 0 differences")
			r = p.Orbit("audit")
			assert.Equal(t, 0, r.Code, r.String())
		})
	}
}

func countType(evs []events.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}
