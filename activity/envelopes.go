package activity

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// The upstream system's agent envelopes (require_completion_envelope,
// require_response_envelope), as docs/architecture/agents.md decides them
// for Orbit's agent output {final_message, stop_reason, turns, tool_calls,
// usage}.

// incomplete is the failure of an agent step whose agent ended without its
// completion record. Another attempt would run the same agent on the same
// prompt, and a recovery activity cannot supply the record, so it is
// neither retried nor recovered.
func incomplete(format string, args ...any) *interpreter.Failure {
	return interpreter.Fail(events.KindIncomplete, false, "the agent ended without its completion record: "+format, args...)
}

// responseOutput is an agent step's output. With require_response_envelope
// the final message must be a JSON object (alone, or as the only fenced
// code block), and its fields are added as output.response, so a later
// step reads {{ steps.<id>.output.response.<field> }}. A final message
// that is not one fails the step; another attempt may answer properly.
func responseOutput(spec *assets.ActivitySpec, out *agent.Outcome) (any, error) {
	output := agentOutput(out)
	if !spec.RequireResponseEnvelope {
		return output, nil
	}
	env, ok := out.Response, out.Response != nil
	if !ok {
		env, ok = responseEnvelope(out.FinalMessage)
	}
	if !ok {
		return nil, interpreter.Fail(events.KindActivity, true,
			"require_response_envelope: the final message is not a JSON object: %q", capMessage(out.FinalMessage))
	}
	output["response"] = env
	return output, nil
}

// responseEnvelope parses a final message as a JSON object: the whole
// message, or the one code block it is wrapped in (```json … ```).
func responseEnvelope(msg string) (map[string]any, bool) {
	text := strings.TrimSpace(msg)
	if body, ok := strings.CutPrefix(text, "```"); ok {
		body, ok = strings.CutSuffix(body, "```")
		if !ok {
			return nil, false
		}
		// The fence's info string (json) runs to the end of its line.
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[i+1:]
		}
		text = strings.TrimSpace(body)
	}
	var env map[string]any
	if json.Unmarshal([]byte(text), &env) != nil || env == nil {
		return nil, false
	}
	return env, true
}

// capMessage cuts a final message quoted in an error to 200 bytes.
func capMessage(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
