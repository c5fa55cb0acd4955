package activity

import (
	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
)

// Settings are what the project's configuration tells the orchestrator and
// the workers that may change while they run (the engine reloads
// .orbit/config.yaml when it changes). They are read when a step starts,
// a command is delivered, or a decision needs them, so a change applies
// from the next one: nothing already running is changed by it.
//
// The zero value of a field means its default.
type Settings struct {
	// FSProfiles are the named filesystem profiles of agent tools, the
	// seeded ones included ("default" when absent: the whole workspace).
	FSProfiles map[string]agent.FSProfile
	// Providers configure HTTP providers of agent loops by name.
	Providers map[string]ProviderSettings
	// MaxDeliver bounds how many times one step attempt is started
	// (default assets.DefaultMaxDeliveries); a command that reaches it is
	// dead-lettered.
	MaxDeliver int
	// MaxChildDepth bounds the depth of child runs (default
	// assets.DefaultMaxChildDepth): a job.invoke that would start a run
	// deeper fails.
	MaxChildDepth int
	// MaxDescendants bounds the live runs below one root run, at any depth
	// (default assets.DefaultMaxDescendants): a job.invoke that would
	// start one more fails. It holds across the engines of a NATS server
	// (see descendants.go).
	MaxDescendants int
}

// withDefaults returns s with its zero fields set to their defaults.
func (s Settings) withDefaults() Settings {
	if s.MaxDeliver == 0 {
		s.MaxDeliver = assets.DefaultMaxDeliveries
	}
	if s.MaxChildDepth == 0 {
		s.MaxChildDepth = assets.DefaultMaxChildDepth
	}
	if s.MaxDescendants == 0 {
		s.MaxDescendants = assets.DefaultMaxDescendants
	}
	return s
}

// CurrentSettings returns what get says now, with defaults; get nil means
// every default.
func CurrentSettings(get func() Settings) Settings {
	if get == nil {
		return Settings{}.withDefaults()
	}
	return get().withDefaults()
}
