package assets

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ActionJobInvoke is the deterministic action that starts a child run of a
// catalog job (config.job names it).
const ActionJobInvoke = "job.invoke"

// invokeEdge is a job.invoke step that always runs when its job runs.
type invokeEdge struct {
	path string // the step's path in its job's file
	job  string // the job it invokes
}

// alwaysInvoked lists the job.invoke steps of steps that run whenever the
// steps do: no `when` on them or on a step around them, not inside a
// fan_out or a loop over items (which may have no items), and a literal
// config.job. A job reached only through conditional steps may end its
// own recursion; one reached through these cannot.
func alwaysInvoked(steps []Step, path string) []invokeEdge {
	var out []invokeEdge
	for i := range steps {
		st := &steps[i]
		p := fmt.Sprintf("%s[%d]", path, i)
		if st.When != "" {
			continue
		}
		switch {
		case st.Parallel != nil:
			out = append(out, alwaysInvoked(st.Parallel.Branches, p+".parallel.branches")...)
		case st.Loop != nil && !st.Loop.OverItems():
			out = append(out, alwaysInvoked(st.Loop.Steps, p+".loop.steps")...)
		case st.Activity != nil && st.Activity.Type == TypeDeterministic && st.Activity.Action == ActionJobInvoke:
			name, _ := st.Activity.Config["job"].(string)
			if name != "" && !strings.Contains(name, "{{") {
				out = append(out, invokeEdge{path: p, job: name})
			}
		}
	}
	return out
}

// invokeCycles reports every job that, through job.invoke steps that always
// run, starts a run of itself again: it could never finish, and would fill
// the engine with runs until the depth limit stops it. Each is reported, by
// job name, at the step of its file where the cycle starts, with the cycle.
func invokeCycles(jobs map[string]*Job) map[string]Problem {
	edges := make(map[string][]invokeEdge, len(jobs))
	for name, j := range jobs {
		edges[name] = alwaysInvoked(j.Spec.Steps, "spec.steps")
	}
	probs := map[string]Problem{}
	for _, name := range slices.Sorted(maps.Keys(jobs)) {
		cycle, first := shortestCycle(name, edges)
		if cycle == nil {
			continue
		}
		probs[name] = Problem{File: jobs[name].Source, Path: first.path,
			Reason: fmt.Sprintf("job.invoke of %q always runs and leads back to this job (%s): it could never finish; guard the step with `when`, or invoke another job",
				first.job, strings.Join(cycle, " → "))}
	}
	return probs
}

// shortestCycle finds the shortest chain of edges from start back to
// itself: the job names along it (start first and last) and its first edge.
func shortestCycle(start string, edges map[string][]invokeEdge) ([]string, invokeEdge) {
	type visit struct {
		from  string
		first invokeEdge
	}
	seen := map[string]visit{}
	queue := []string{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range edges[cur] {
			first := e
			if cur != start {
				first = seen[cur].first
			}
			if e.job == start {
				chain := []string{start}
				for at := cur; at != start; at = seen[at].from {
					chain = append(chain, at)
				}
				chain = append(chain, start)
				slices.Reverse(chain[1 : len(chain)-1])
				return chain, first
			}
			if _, ok := seen[e.job]; ok {
				continue
			}
			if _, ok := edges[e.job]; !ok {
				continue
			}
			seen[e.job] = visit{from: cur, first: first}
			queue = append(queue, e.job)
		}
	}
	return nil, invokeEdge{}
}
