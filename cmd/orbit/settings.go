package main

import (
	"os"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/internal/engine"
)

// warnSettings tells, one line per setting, where this command's
// environment has a provider setting (an API key, a base URL,
// ORBIT_REPLAY_FIXTURE) otherwise than the engine that will run job, and
// how to give the engine this shell's settings. Agent steps read those
// settings in the engine, so a shell's own are silently not used. Jobs
// without agent steps are not concerned; a secret is compared by whether it
// is set only.
func (a *app) warnSettings(info *engine.InfoReply, job *assets.Job) {
	if !job.RunsAgents() {
		return
	}
	diffs := engine.DiffSettings(info.Settings, os.LookupEnv)
	if len(diffs) == 0 {
		return
	}
	for _, d := range diffs {
		a.errorf("warning: %s; the job's agent steps use the engine's\n", d)
	}
	switch {
	case a.natsURL != "":
		a.errorf("hint: the engine at %s has the environment it was started with: restart it with these settings to use them\n", a.natsURL)
	case info.Background:
		a.errorf("hint: the background engine (pid %d) has the environment of the command that started it: stop it (kill %d) and run again, and a new one starts with this shell's settings\n", info.PID, info.PID)
	default:
		a.errorf("hint: the engine (orbit serve, pid %d) has the environment it was started in: restart orbit serve with these settings to use them\n", info.PID)
	}
}
