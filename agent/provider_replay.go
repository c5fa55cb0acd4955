package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// replayProvider answers with the turns of a Fixture, one per call, in
// order. It is safe for concurrent use; the calls of one session are
// sequential anyway.
type replayProvider struct {
	fixture *Fixture
	start   int // the first turn this provider returns

	mu   sync.Mutex
	next int // index of the turn the next call returns
}

var (
	_ Provider   = (*replayProvider)(nil)
	_ Positioner = (*replayProvider)(nil)
)

// NewReplayProvider returns a provider that answers with fx's turns, from
// turn start on (the turns a resumed run has already consumed are
// skipped). It never reads the request's content, except to check that
// the tool calls of the turn it returned before have been answered. The
// turn before start belongs to another session (an earlier attempt, an
// earlier step), whose transcript this one does not carry: it is not
// checked.
func NewReplayProvider(fx *Fixture, start int) (Provider, error) {
	if fx == nil {
		return nil, &FixtureError{Reason: "no fixture"}
	}
	if start < 0 {
		return nil, &FixtureError{Reason: fmt.Sprintf("start turn %d is negative", start)}
	}
	return &replayProvider{fixture: fx, start: start, next: start}, nil
}

// newReplayFromOptions parses opts.FixtureData when it is set (named by
// opts.Fixture), else loads the file opts.Fixture, else
// ORBIT_REPLAY_FIXTURE, else ORBIT_V2_REPLAY_FIXTURE.
func newReplayFromOptions(opts ProviderOptions) (Provider, error) {
	if opts.FixtureData != nil {
		fx, err := ParseFixture(opts.FixtureData)
		if err != nil {
			if fe, ok := errors.AsType[*FixtureError](err); ok {
				fe.File = opts.Fixture
			}
			return nil, err
		}
		fx.Source = opts.Fixture
		return NewReplayProvider(fx, opts.Start)
	}
	path := firstNonEmpty(opts.Fixture, opts.getenv(EnvReplayFixture), opts.getenv(EnvReplayFixtureLegacy))
	if path == "" {
		return nil, &FixtureError{Reason: "replay needs a fixture file (set ORBIT_REPLAY_FIXTURE)"}
	}
	fx, err := LoadFixture(path)
	if err != nil {
		return nil, err
	}
	return NewReplayProvider(fx, opts.Start)
}

// Name implements Provider.
func (p *replayProvider) Name() string { return ProviderReplay }

// Position implements Positioner: the fixture's source and the index of the
// turn the next call returns.
func (p *replayProvider) Position() (string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fixture.Source, p.next
}

// Complete implements Provider: it returns the next turn, a copy the caller
// may keep. Errors wrap ErrFixture: the fixture has run out, or the request
// does not answer every tool call of the turn before (the script and the
// engine disagree). A failed call does not consume a turn.
func (p *replayProvider) Complete(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()

	turns := p.fixture.Turns
	if p.next >= len(turns) {
		return nil, p.errorf("turn %d was asked for, but the fixture has %d turns", p.next, len(turns))
	}
	if p.next > p.start {
		if err := p.checkAnswered(turns[p.next-1], req); err != nil {
			return nil, err
		}
	}
	resp := copyResponse(turns[p.next])
	p.next++
	return resp, nil
}

// checkAnswered requires a tool_result, after the last assistant message of
// the request, for every tool_use of prev.
func (p *replayProvider) checkAnswered(prev Response, req *Request) error {
	answered := map[string]bool{}
	if req != nil {
		tail := req.Messages
		for i := len(tail) - 1; i >= 0; i-- {
			if tail[i].Role == RoleAssistant {
				tail = tail[i+1:]
				break
			}
		}
		for _, m := range tail {
			for _, b := range m.Content {
				if b.Kind == BlockToolResult {
					answered[b.ToolUseID] = true
				}
			}
		}
	}
	for _, b := range prev.Content {
		if b.Kind == BlockToolUse && !answered[b.ID] {
			return p.errorf("turn %d: the request has no tool_result for turn %d's tool_use %s (%s)", p.next, p.next-1, b.ID, b.Name)
		}
	}
	return nil
}

func (p *replayProvider) errorf(format string, args ...any) error {
	return fmt.Errorf("replay: %w", &FixtureError{File: p.fixture.Source, Reason: fmt.Sprintf(format, args...)})
}

// copyResponse copies a turn so that callers cannot change the fixture.
func copyResponse(r Response) *Response {
	out := r
	out.Content = make([]Block, len(r.Content))
	for i, b := range r.Content {
		if b.Input != nil {
			b.Input = append(json.RawMessage(nil), b.Input...)
		}
		out.Content[i] = b
	}
	return &out
}
