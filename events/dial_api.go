package events

import (
	"context"
)

// DialAPI connects to the engines' request/reply API on the NATS server at
// url, as cfg's identity, and looks up nothing: no stream, no object store,
// no log key. It is how the agent identity (IdentityAgent), which may call
// the roll and AgentEndpoints only, reaches an engine: Dial would ask for
// the event stream's info, which that identity is refused.
//
// IMPORTANT: the Log it returns serves Request, RequestEngine and Close
// only; anything that reads or appends to the log needs Dial. An answer
// large enough to be stored as an object (see large.go) cannot be read
// either; the endpoints an agent calls answer a few lines.
func DialAPI(ctx context.Context, url string, cfg Config) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg.URL = url
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Log{cfg: cfg, log: cfg.Logger.With("component", "events")}
	if err := l.connect(); err != nil {
		return nil, err
	}
	return l, nil
}
