// Package doctor checks an Orbit installation's set-up: the engine and the
// environment it was started from, the configuration it runs with, the
// credentials, the NATS server, git, the CLI agents and their sandbox, the provider keys and
// the engines' clocks. Each finding says what is wrong and how to fix it.
//
// The checks read what they are given (Facts), gathered by `orbit doctor`
// from the engine's API and the machine; they change nothing.
package doctor

import (
	"context"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

// Level is how a finding bears on the installation.
type Level string

const (
	// OK: the check passed.
	OK Level = "ok"
	// Warn: worth knowing, but nothing fails because of it.
	Warn Level = "warn"
	// Fail: something is wrong; orbit doctor exits 1.
	Fail Level = "fail"
	// Skip: the check could not be made (what it needs is missing, and
	// another finding says why).
	Skip Level = "skip"
)

// Finding is one check's result.
type Finding struct {
	// Check names the check: engine, environment, config, credentials,
	// nats, jetstream, replicas, retention, fsync, disk, git, agent:<name>,
	// sandbox, provider_keys, clock.
	Check  string `json:"check"`
	Level  Level  `json:"level"`
	Detail string `json:"detail"`
	// Fix says what to do; empty when the level is ok.
	Fix string `json:"fix,omitempty"`
}

// Report is every finding, in the order the checks ran.
type Report struct {
	Findings []Finding `json:"findings"`
	// Healthy is false when a finding fails.
	Healthy bool `json:"healthy"`
}

// EngineClock is what an engine said its clock read, and when this
// process asked and was answered.
type EngineClock struct {
	Engine    string
	Asked     time.Time
	Answered  time.Time
	EngineNow time.Time
}

// Facts is what the checks read.
type Facts struct {
	// Root is the project directory.
	Root string
	// Config is the project's configuration as this process loads it;
	// ConfigErr why it does not load.
	Config    *assets.Config
	ConfigErr error
	// Catalog lists the executors (CLI agents); nil when it does not load.
	Catalog *assets.Catalog
	// Log is a connection to the engine's NATS server; nil when none could
	// be made (ConnectErr says why).
	Log        *events.Log
	ConnectErr error
	// ExternalURL: the engine runs on a NATS server Orbit did not start
	// (--nats-url, ORBIT_NATS_URL or nats.url).
	ExternalURL bool
	// Status is the engine's answer to engine.status; nil when it gave
	// none (StatusErr says why).
	Status    *engine.Status
	StatusErr error
	// Lookup reads this process's environment.
	Lookup func(string) (string, bool)
	// Monitors are the URLs of the NATS servers' monitoring endpoints
	// (http://host:8222), for the fsync policy of servers Orbit did not
	// start: one for each server of a cluster; none when none was given.
	Monitors []string
	// Clocks are the engines' clocks; MaxSkew the difference that fails.
	Clocks  []EngineClock
	MaxSkew time.Duration
	// FreeSpace reads the free space of a directory's filesystem.
	FreeSpace func(dir string) (uint64, error)
}

// Run makes every check and returns the report.
func Run(ctx context.Context, f *Facts) Report {
	var out []Finding
	out = append(out, engineFindings(f)...)
	out = append(out, credentialFindings(f.Root)...)
	out = append(out, natsFindings(ctx, f)...)
	out = append(out, gitFinding(ctx))
	out = append(out, agentFindings(ctx, f)...)
	out = append(out, sandboxFinding(f))
	out = append(out, keyFinding(f))
	out = append(out, clockFinding(f))
	rep := Report{Findings: out, Healthy: true}
	for _, x := range out {
		if x.Level == Fail {
			rep.Healthy = false
		}
	}
	return rep
}
