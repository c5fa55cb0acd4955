package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
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
		a.errorf("hint: the background engine (pid %d) has the environment of the command that started it: orbit engine restart starts one with this shell's settings\n", info.PID)
	default:
		a.errorf("hint: the engine (orbit serve, pid %d) has the environment it was started in: restart orbit serve with these settings to use them\n", info.PID)
	}
}

// warnRestart says that .orbit/config.yaml changed settings the engine
// applies only when it starts: the run goes on with the ones it started
// with.
func (a *app) warnRestart(info *engine.InfoReply) {
	if len(info.RestartNeeded) == 0 {
		return
	}
	how := "orbit engine restart"
	if !info.Background {
		how = fmt.Sprintf("restart orbit serve (pid %d)", info.PID)
	}
	a.errorf("warning: the engine runs with the settings it started with; restart needed: %s (changed in .orbit/config.yaml since): %s\n",
		strings.Join(info.RestartNeeded, ", "), how)
}
