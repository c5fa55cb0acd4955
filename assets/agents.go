package assets

// RunsAgents reports whether a step of the job runs an agent (an agent_loop
// or groundhog activity) in the engine: a step, a parallel branch, a
// fan-out worker, a loop body, or a recovery activity. Child jobs that a
// job.invoke step names are not looked into: the engine resolves them when
// the step runs.
func (j *Job) RunsAgents() bool {
	if r := j.Spec.RecoveryActivity; r != nil && r.Spec.isAgent() {
		return true
	}
	return stepsRunAgents(j.Spec.Steps)
}

func stepsRunAgents(steps []Step) bool {
	for i := range steps {
		if steps[i].runsAgents() {
			return true
		}
	}
	return false
}

func (st *Step) runsAgents() bool {
	if r := st.RecoveryActivity; r != nil && r.Spec.isAgent() {
		return true
	}
	switch {
	case st.Activity != nil:
		return st.Activity.isAgent()
	case st.Parallel != nil:
		return stepsRunAgents(st.Parallel.Branches)
	case st.FanOut != nil:
		return st.FanOut.Worker.runsAgents()
	case st.Loop != nil:
		return stepsRunAgents(st.Loop.Steps)
	}
	return false
}

func (s *ActivitySpec) isAgent() bool {
	return s.Type == TypeAgentLoop || s.Type == TypeGroundhog
}
