package groundhog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
)

// The builtin verbs an attempt's agent closes it with. They are always in
// its tool set, whatever the activity's tools say.
const (
	VerbSuccess    = "orbit.groundhog.checkpoint_success"
	VerbFailure    = "orbit.groundhog.checkpoint_failure"
	VerbSideEffect = "orbit.groundhog.side_effect"
)

// Side effect kinds an agent may declare.
var sideEffectKinds = []string{"file_write", "file_delete", "git_commit", "db_mutation", "other"}

// verdict is what an attempt's agent said about it.
type verdict struct {
	verb            string
	summary         string
	sideEffects     []events.SideEffect
	whatTried       string
	whatHappened    string
	nextAttemptPlan string
}

// verbTool is one builtin verb, bound to an attempt.
type verbTool struct {
	spec     agent.ToolSpec
	terminal bool
	call     func(ctx context.Context, input json.RawMessage) (string, error)
}

func (v *verbTool) Spec() agent.ToolSpec { return v.spec }
func (v *verbTool) Terminal() bool       { return v.terminal }
func (v *verbTool) Call(ctx context.Context, _ *agent.ToolContext, input json.RawMessage) (string, error) {
	return v.call(ctx, input)
}

var (
	_ agent.Tool     = (*verbTool)(nil)
	_ agent.Terminal = (*verbTool)(nil)
)

const sideEffectSchema = `{"type":"object","properties":{` +
	`"kind":{"type":"string","enum":["file_write","file_delete","git_commit","db_mutation","other"]},` +
	`"target":{"type":"string","description":"what was affected: a path, a table, a service"},` +
	`"reversible":{"type":"boolean"}},"required":["kind","target","reversible"],"additionalProperties":false}`

// The verbs' specs: their names, what the model is told and the JSON
// schemas of their inputs, the same for the HTTP loop and the MCP server.
var (
	successSpec = agent.ToolSpec{
		Name: VerbSuccess,
		Description: "Declare that the current checkpoint is done. The runtime then checks its criteria itself: " +
			"the checkpoint succeeds only if they hold. Ends this attempt.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"summary":{"type":"string","description":"what was done, for the commit message and for later checkpoints"},` +
			`"side_effects":{"type":"array","items":` + sideEffectSchema + `}},` +
			`"required":["summary"],"additionalProperties":false}`),
	}
	failureSpec = agent.ToolSpec{
		Name:        VerbFailure,
		Description: "Declare that you could not complete the current checkpoint. The workspace is rewound and a later attempt starts fresh, with your report. Ends this attempt.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"what_tried":{"type":"string"},"what_happened":{"type":"string"},"next_attempt_plan":{"type":"string"}},` +
			`"required":["what_happened"],"additionalProperties":false}`),
	}
	sideEffectSpec = agent.ToolSpec{
		Name:        VerbSideEffect,
		Description: "Declare a side effect of your work beyond the files you edit (a database change, a commit, a deleted file), as soon as you cause it.",
		InputSchema: json.RawMessage(sideEffectSchema),
	}
)

// VerbSpecs returns the specs of the three builtin verbs: success, failure
// and side effect, in that order. The caller may not change them.
func VerbSpecs() []agent.ToolSpec {
	return []agent.ToolSpec{successSpec, failureSpec, sideEffectSpec}
}

// verbs returns the three verbs of an attempt. Declared side effects are
// recorded at once; the terminal verbs record the verdict in v.
func (a *attempt) verbs() []agent.Tool {
	success := &verbTool{terminal: true, spec: successSpec}
	success.call = func(ctx context.Context, input json.RawMessage) (string, error) {
		var in struct {
			Summary     string              `json:"summary"`
			SideEffects []events.SideEffect `json:"side_effects"`
		}
		if err := strictDecode(input, &in); err != nil {
			return "", err
		}
		if strings.TrimSpace(in.Summary) == "" {
			return "", errors.New("summary must not be blank")
		}
		for i, se := range in.SideEffects {
			if err := checkSideEffect(se); err != nil {
				return "", fmt.Errorf("side_effects[%d]: %w", i, err)
			}
		}
		a.verdict = &verdict{verb: VerbSuccess, summary: strings.TrimSpace(in.Summary), sideEffects: in.SideEffects}
		return "Recorded. The runtime will now verify the checkpoint's criteria.", nil
	}
	failure := &verbTool{terminal: true, spec: failureSpec}
	failure.call = func(ctx context.Context, input json.RawMessage) (string, error) {
		var in struct {
			WhatTried       string `json:"what_tried"`
			WhatHappened    string `json:"what_happened"`
			NextAttemptPlan string `json:"next_attempt_plan"`
		}
		if err := strictDecode(input, &in); err != nil {
			return "", err
		}
		if strings.TrimSpace(in.WhatHappened) == "" {
			return "", errors.New("what_happened must not be blank")
		}
		a.verdict = &verdict{verb: VerbFailure, whatTried: in.WhatTried, whatHappened: in.WhatHappened, nextAttemptPlan: in.NextAttemptPlan}
		return "Recorded. This attempt will be rewound.", nil
	}
	sideEffect := &verbTool{spec: sideEffectSpec}
	sideEffect.call = func(ctx context.Context, input json.RawMessage) (string, error) {
		var se events.SideEffect
		if err := strictDecode(input, &se); err != nil {
			return "", err
		}
		if err := checkSideEffect(se); err != nil {
			return "", err
		}
		a.sideEffects = append(a.sideEffects, se)
		if err := record(ctx, a.r, events.GroundhogSideEffect, "", events.GroundhogSideEffectData{Attempt: a.id, SideEffect: se}); err != nil {
			return "", err
		}
		return "Recorded.", nil
	}
	return []agent.Tool{success, failure, sideEffect}
}

func checkSideEffect(se events.SideEffect) error {
	for _, k := range sideEffectKinds {
		if se.Kind == k {
			if strings.TrimSpace(se.Target) == "" {
				return errors.New("target must not be blank")
			}
			return nil
		}
	}
	return fmt.Errorf("kind %q is not one of %s", se.Kind, strings.Join(sideEffectKinds, ", "))
}

// strictDecode decodes a JSON object into v, refusing unknown fields.
func strictDecode(input json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	return nil
}
