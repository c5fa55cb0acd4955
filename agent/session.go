package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/orbitrun/orbit/events"
)

// Errors that end a session without a model's final answer.
var (
	// ErrTurnLimit: the model was still calling tools when max_iterations
	// turns had been taken.
	ErrTurnLimit = errors.New("turn limit reached")
	// ErrTimeout: the session ran past its wall-clock limit.
	ErrTimeout = errors.New("wall-clock limit reached")
)

// On-denial policies.
const (
	OnDenialTerminate = "terminate"
	OnDenialContinue  = "continue"
)

// Stop reasons of an Outcome beyond the provider's own.
const (
	StopTurnLimit    = "max_iterations"
	StopTimeout      = "timeout"
	StopTerminalTool = "terminal_tool"
	StopDenied       = "denied"
)

// textCap bounds the text an agent.turn event carries inline; blobCap is
// the size above which a turn's response or a tool's result goes to a blob.
const (
	textCap = 2 << 10
	blobCap = 4 << 10
)

// Emitter records what a session does. The executor records into the run's
// events; Groundhog into its task's.
type Emitter interface {
	Emit(ctx context.Context, typ string, payload any) error
	PutBlob(ctx context.Context, data []byte) (events.BlobRef, error)
}

// Config is one session: who answers, what it may do, and its limits.
type Config struct {
	Provider Provider
	Model    string
	System   string
	// Tools are the tools the model is offered; a call to any other name is
	// denied.
	Tools    []Tool
	ToolCtx  *ToolContext
	OnDenial string // OnDenialTerminate (default) or OnDenialContinue
	// MaxTurns bounds model turns (default 25).
	MaxTurns int
	// WallClock bounds the whole session (0: no limit but ctx's).
	WallClock time.Duration
	// MaxTokens bounds each turn's output (0: the provider's default).
	MaxTokens int
	// History is the conversation so far (a named session's transcript).
	History []Message
	// Budget, when set, is checked before every turn (ErrBudgetExhausted).
	Budget *Budget
	// Session and Attempt label the events.
	Session string
	Attempt int
	Emitter Emitter
}

// Call is a tool call a model made.
type Call struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Outcome is how a session ended.
type Outcome struct {
	FinalMessage string `json:"final_message"`
	StopReason   string `json:"stop_reason"`
	Turns        int    `json:"turns"`
	ToolCalls    int    `json:"tool_calls"`
	Usage        Usage  `json:"usage"`
	Model        string `json:"model,omitempty"`
	// CostUSD is what the session cost by the agent's own account (a CLI
	// agent that reports it); 0 when unknown.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// UsageInTurns: the agent.turn events recorded for the session carry
	// its usage (see events.CLIInvocationFinishedData).
	UsageInTurns bool `json:"-"`
	// Transcript is History followed by this session's messages.
	Transcript []Message `json:"-"`
	// TerminalCall is the terminal tool call that ended the session.
	TerminalCall *Call `json:"-"`
	// CLISession is the CLI agent's own session (Claude Code's session id,
	// Codex's thread id) when it kept one on disk (CLIConfig.Persist).
	CLISession string `json:"-"`
	// Response is the agent's structured answer (Claude Code's
	// structured_output, asked for with CLIConfig.ResponseSchema).
	Response map[string]any `json:"-"`
}

// Positioner is implemented by providers that read from a script (replay),
// to label turns with where in the script they came from.
type Positioner interface {
	Position() (fixture string, next int)
}

// Run runs a session from prompt to a stop and returns its outcome. It
// returns an error, with the outcome so far, when the session ends without
// a final answer: a denied tool under on_denial terminate (*DeniedError),
// a provider failure (*ProviderError), the turn limit (ErrTurnLimit), or
// the wall clock (ErrTimeout).
func Run(ctx context.Context, cfg Config, prompt string) (*Outcome, error) {
	s := &session{cfg: cfg, tools: map[string]Tool{}}
	if s.cfg.MaxTurns <= 0 {
		s.cfg.MaxTurns = 25
	}
	if s.cfg.OnDenial == "" {
		s.cfg.OnDenial = OnDenialTerminate
	}
	for _, t := range cfg.Tools {
		spec := t.Spec()
		s.tools[spec.Name] = t
		s.specs = append(s.specs, spec)
	}
	if cfg.WallClock > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, cfg.WallClock, ErrTimeout)
		defer cancel()
	}
	s.out.Transcript = append(append([]Message(nil), cfg.History...), Message{Role: RoleUser, Content: []Block{{Kind: BlockText, Text: prompt}}})
	err := s.loop(ctx)
	if err != nil && errors.Is(context.Cause(ctx), ErrTimeout) {
		s.out.StopReason = StopTimeout
		err = fmt.Errorf("%w after %s (%d turns)", ErrTimeout, cfg.WallClock, s.out.Turns)
	}
	return &s.out, err
}

type session struct {
	cfg   Config
	tools map[string]Tool
	specs []ToolSpec
	out   Outcome
}

func (s *session) loop(ctx context.Context) error {
	for {
		if s.out.Turns >= s.cfg.MaxTurns {
			s.out.StopReason = StopTurnLimit
			return fmt.Errorf("%w: %d turns (max_iterations) and the model had not finished", ErrTurnLimit, s.out.Turns)
		}
		if err := s.cfg.Budget.check(s.out.Usage, s.out.CostUSD); err != nil {
			s.out.StopReason = StopBudget
			return err
		}
		var fixture string
		var fixtureTurn int
		if p, ok := s.cfg.Provider.(Positioner); ok {
			fixture, fixtureTurn = p.Position()
		}
		resp, err := s.cfg.Provider.Complete(ctx, &Request{
			Model: s.cfg.Model, System: s.cfg.System, Messages: s.out.Transcript, Tools: s.specs, MaxTokens: s.cfg.MaxTokens,
		})
		if err != nil {
			return err
		}
		s.out.Turns++
		s.out.Usage = s.out.Usage.Add(resp.Usage)
		s.out.Model = resp.Model
		s.out.StopReason = resp.StopReason
		s.out.Transcript = append(s.out.Transcript, Message{Role: RoleAssistant, Content: resp.Content})
		if err := s.recordTurn(ctx, resp, fixture, fixtureTurn); err != nil {
			return err
		}
		var calls []Call
		var text []string
		for _, b := range resp.Content {
			switch b.Kind {
			case BlockText:
				text = append(text, b.Text)
			case BlockToolUse:
				calls = append(calls, Call{ID: b.ID, Name: b.Name, Input: b.Input})
			}
		}
		if t := strings.TrimSpace(strings.Join(text, "\n")); t != "" || len(calls) == 0 {
			s.out.FinalMessage = t
		}
		if len(calls) == 0 {
			return nil
		}
		results, stop, err := s.callTools(ctx, calls)
		s.out.Transcript = append(s.out.Transcript, Message{Role: RoleUser, Content: results})
		if err != nil || stop {
			return err
		}
	}
}

// callTools executes a turn's tool calls in order and returns their
// results. It stops early (stop true) after a terminal tool succeeds, and
// with an error when a tool is denied under on_denial terminate.
func (s *session) callTools(ctx context.Context, calls []Call) ([]Block, bool, error) {
	var results []Block
	for _, c := range calls {
		tool, ok := s.tools[c.Name]
		var out string
		var err error
		began := time.Now()
		if !ok {
			err = &DeniedError{Tool: c.Name, Reason: "not in this step's tools " + s.toolNames()}
		} else {
			out, err = tool.Call(ctx, s.cfg.ToolCtx, c.Input)
		}
		var denied *DeniedError
		if errors.As(err, &denied) {
			if rerr := s.cfg.Emitter.Emit(ctx, events.ToolDenied, events.ToolDeniedData{
				Attempt: s.cfg.Attempt, Turn: s.out.Turns, ToolUseID: c.ID, Name: c.Name,
				Reason: denied.Reason, Path: denied.Path, OnDenial: s.cfg.OnDenial,
			}); rerr != nil {
				return results, true, rerr
			}
			results = append(results, Block{Kind: BlockToolResult, ToolUseID: c.ID, IsError: true, Text: "denied: " + denied.Reason})
			if s.cfg.OnDenial == OnDenialTerminate {
				s.out.StopReason = StopDenied
				return s.answerRest(results, calls), true, denied
			}
			continue
		}
		s.out.ToolCalls++
		if rerr := s.recordCall(ctx, c, out, err, time.Since(began)); rerr != nil {
			return results, true, rerr
		}
		if err != nil {
			results = append(results, Block{Kind: BlockToolResult, ToolUseID: c.ID, IsError: true, Text: err.Error()})
			continue
		}
		results = append(results, Block{Kind: BlockToolResult, ToolUseID: c.ID, Text: out})
		if term, ok := tool.(Terminal); ok && term.Terminal() {
			s.out.StopReason = StopTerminalTool
			call := c
			s.out.TerminalCall = &call
			return s.answerRest(results, calls), true, nil
		}
	}
	return results, false, nil
}

// answerRest gives every call of the turn that was not executed a result
// saying so, so the transcript stays well formed for a later session.
func (s *session) answerRest(results []Block, calls []Call) []Block {
	for _, c := range calls[len(results):] {
		results = append(results, Block{Kind: BlockToolResult, ToolUseID: c.ID, IsError: true, Text: "not executed: the session ended"})
	}
	return results
}

func (s *session) toolNames() string {
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return "[" + strings.Join(names, ", ") + "]"
}

func (s *session) recordTurn(ctx context.Context, resp *Response, fixture string, fixtureTurn int) error {
	data := events.AgentTurnData{
		Attempt:    s.cfg.Attempt,
		Turn:       s.out.Turns,
		Session:    s.cfg.Session,
		Provider:   s.cfg.Provider.Name(),
		Model:      resp.Model,
		StopReason: resp.StopReason,
		Usage:      tokenUsage(resp.Usage),
	}
	if fixture != "" {
		data.Fixture, data.FixtureTurn = fixture, fixtureTurn+1
	}
	for _, b := range resp.Content {
		switch b.Kind {
		case BlockText:
			data.Text += b.Text
		case BlockToolUse:
			data.ToolUses = append(data.ToolUses, b.Name)
		}
	}
	full, err := json.Marshal(resp.Content)
	if err != nil {
		return err
	}
	if len(data.Text) > textCap || len(full) > blobCap {
		ref, err := s.cfg.Emitter.PutBlob(ctx, full)
		if err != nil {
			return err
		}
		data.Response = &ref
		data.Text = capText(data.Text, textCap)
	}
	return s.cfg.Emitter.Emit(ctx, events.AgentTurn, data)
}

func (s *session) recordCall(ctx context.Context, c Call, out string, callErr error, took time.Duration) error {
	sum := sha256.Sum256(c.Input)
	data := events.ToolCalledData{
		Attempt:     s.cfg.Attempt,
		Turn:        s.out.Turns,
		ToolUseID:   c.ID,
		Name:        c.Name,
		InputDigest: "sha256-" + hex.EncodeToString(sum[:]),
		InputSize:   len(c.Input),
		ResultSize:  len(out),
		DurationMS:  took.Milliseconds(),
	}
	if callErr != nil {
		data.Error = capText(callErr.Error(), textCap)
	}
	if len(out) > blobCap {
		ref, err := s.cfg.Emitter.PutBlob(ctx, []byte(out))
		if err != nil {
			return err
		}
		data.Result = &ref
	}
	return s.cfg.Emitter.Emit(ctx, events.ToolCalled, data)
}

func tokenUsage(u Usage) events.TokenUsage {
	return events.TokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
}

// capText keeps at most the first n bytes of s, cut on a character
// boundary, and marks a cut with an ellipsis.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeCut(s, n)] + "…"
}
