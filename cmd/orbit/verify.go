package main

import (
	"context"
	"time"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

// followKeyTimeout bounds the question followKey asks: an identity that may
// not call the API (a reader's seed) reads on as it would have.
const followKeyTimeout = 2 * time.Second

// followKey makes l verify what it reads with the key the engine signs
// with, or not at all, as engine.info says: the root's key left over from an
// embedded engine, with an engine on an external server that signs with
// another key or none, would leave out every event it wrote, and a follower
// would wait for ever. A key given with --log-key that is not the engine's
// is said on stderr. A Log without a key asks nothing: it verifies nothing.
func (a *app) followKey(ctx context.Context, l *events.Log) {
	if !l.Signing() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, followKeyTimeout)
	defer cancel()
	var info engine.InfoReply
	if err := l.Request(ctx, engine.EndpointInfo, nil, &info); err != nil {
		return // what a read leaves out is said (rejected)
	}
	if info.Signing && info.LogKey == "" {
		return // an engine that does not say which key: the client's is all there is
	}
	if used := l.UseKey(info.LogKey, info.LogKeyFile); used == "" && a.logKey != "" {
		if info.LogKey == "" {
			a.errorf("orbit: the engine signs nothing: --log-key %s is not used, and what this command reads is not verified\n", a.logKey)
		} else {
			a.errorf("orbit: --log-key %s is not the key the engine signs with (%s): what this command reads is not verified\n", a.logKey, info.LogKey)
		}
	}
}

// rejected is every client Log's OnReject: a message a read leaves out is
// said on stderr, never dropped unseen, and told to the follower of its run
// (runFeed), which must not wait for ever for an event it left out.
func (a *app) rejected(r events.Rejection) {
	a.errorf("orbit: left out %s sequence %d (%s): %s; orbit audit lists what fails\n", r.Stream, r.Seq, r.Subject, r.Reason)
	select {
	case a.rejections() <- r:
	default: // no follower is taking them; the line above said it
	}
}

// rejections is where rejected tells followers what was left out.
func (a *app) rejections() chan events.Rejection {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	if a.rejects == nil {
		a.rejects = make(chan events.Rejection, 64)
	}
	return a.rejects
}
