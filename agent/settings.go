package agent

import "slices"

// Environment variables the providers read. They are settings of the engine
// whose workers build the providers, not of the command that requests a run:
// see Settings.
const (
	EnvAnthropicAPIKey     = "ANTHROPIC_API_KEY"
	EnvAnthropicBaseURL    = "ANTHROPIC_BASE_URL"
	EnvOpenAIAPIKey        = "OPENAI_API_KEY"
	EnvOpenAIBaseURL       = "OPENAI_BASE_URL"
	EnvOpenAIOrgID         = "OPENAI_ORG_ID"
	EnvOpenAIProjectID     = "OPENAI_PROJECT_ID"
	EnvOpenAICustomHeaders = "OPENAI_CUSTOM_HEADERS"
	EnvReplayFixture       = "ORBIT_REPLAY_FIXTURE"
	EnvReplayFixtureLegacy = "ORBIT_V2_REPLAY_FIXTURE"
)

const (
	purposeClaude    = "claude provider"
	purposeOpenAI    = "openai_compat provider"
	purposeReplay    = "switches every agent loop to the replay provider"
	purposeConfigKey = "API key named by providers: in .orbit/config.yaml"
)

// Setting is one environment variable that decides how an engine's agent
// steps reach their provider.
type Setting struct {
	// Name is the variable's name.
	Name string
	// Secret says the value must never be shown, logged or compared: only
	// whether it is set may leave the process.
	Secret bool
	// Purpose says, for people, what the variable decides.
	Purpose string
}

// settings is the one list of the variables the providers read (directly,
// or through the OpenAI SDK, which reads OPENAI_* whatever it is told).
//
// IMPORTANT: a provider that reads a new variable adds it here, so that
// engine.json, `orbit serve` and the warnings of `orbit job run` know it.
var settings = []Setting{
	{Name: EnvAnthropicAPIKey, Secret: true, Purpose: purposeClaude},
	{Name: EnvAnthropicBaseURL, Purpose: purposeClaude},
	{Name: EnvOpenAIAPIKey, Secret: true, Purpose: purposeOpenAI},
	{Name: EnvOpenAIBaseURL, Purpose: purposeOpenAI},
	{Name: EnvOpenAIOrgID, Purpose: purposeOpenAI},
	{Name: EnvOpenAIProjectID, Purpose: purposeOpenAI},
	{Name: EnvOpenAICustomHeaders, Secret: true, Purpose: purposeOpenAI},
	{Name: EnvReplayFixture, Purpose: purposeReplay},
	{Name: EnvReplayFixtureLegacy, Purpose: purposeReplay},
}

// Settings returns the environment variables an engine's providers read, in
// a fixed order, followed by keyEnvs (the variables a project's
// configuration names as holding API keys; always secret, even when the
// list has the name as another setting). The result is a new slice with
// each name once.
func Settings(keyEnvs ...string) []Setting {
	out := append([]Setting(nil), settings...)
	for _, name := range keyEnvs {
		if name == "" {
			continue
		}
		i := slices.IndexFunc(out, func(s Setting) bool { return s.Name == name })
		if i < 0 {
			out = append(out, Setting{Name: name, Secret: true, Purpose: purposeConfigKey})
			continue
		}
		out[i].Secret = true
	}
	return out
}
