package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// The consumer gate. A consumer lives in the account of the stream it
// reads, and a push consumer delivers, on that account's behalf, to the
// subject its creator named: made by a reader, one pushing to
// orbit.api.runs.retry calls the engine's API, one pushing into
// orbit.events writes the log. So another identity's request to create a
// consumer of the log ($JS.API.CONSUMER.CREATE.ORBIT_EVENTS…) is imported
// into the engine's account on consumerGateRoot (see exports), where the
// engine makes it only as a pull consumer: no deliver subject, no durable
// name, no acks, gone after at most gateMaxInactive idle. Its messages are
// then pulled by their requester and answered to its own account. What a
// client follows (Follow, Scan) is such a consumer; reading the blobs and
// the stored answers needs none (direct gets).
const (
	consumerGateRoot = "orbit.consumers.create"
	// gateMaxInactive bounds how long a consumer made through the gate
	// outlives its last pull.
	gateMaxInactive = 10 * time.Minute
	// gateTimeout bounds the engine's request to JetStream.
	gateTimeout = 10 * time.Second
)

// consumerGate serves the gate on l's connection until stop.
type consumerGate struct {
	log  *Log
	subs []*nats.Subscription
	wg   sync.WaitGroup
}

// serveConsumerGate subscribes the gate of the event stream. Every engine
// answers every request, in no queue group: the caller's request names no
// engine (the subject is JetStream's), and a stopped engine in a queue
// group would take its share of requests and answer none (see the roll
// call, api_route.go). Making a consumer by name is idempotent, so the
// engines that come second find the first's (a request that names none
// is named from its reply subject, the same at every engine); the
// caller's import takes the first answer.
func (l *Log) serveConsumerGate() (*consumerGate, error) {
	g := &consumerGate{log: l}
	for _, subject := range []string{gateSubject(EventsStream), gateSubject(EventsStream) + ".>"} {
		sub, err := l.nc.Subscribe(subject, func(m *nats.Msg) {
			g.wg.Add(1)
			go func() {
				defer g.wg.Done()
				g.answer(m)
			}()
		})
		if err != nil {
			g.stop()
			return nil, fmt.Errorf("events: serving the consumer gate: %w", err)
		}
		g.subs = append(g.subs, sub)
	}
	return g, nil
}

// stop ends the gate once the requests it took are answered.
func (g *consumerGate) stop() {
	for _, sub := range g.subs {
		_ = sub.Unsubscribe()
	}
	g.wg.Wait()
}

// answer makes the consumer m asks for, if the gate allows it, and answers
// with JetStream's own answer, or with a JetStream API error saying why
// not. A request that is not a caller's (see checkRequest) is dropped.
func (g *consumerGate) answer(m *nats.Msg) {
	if _, err := g.log.checkRequest(m.Header, m.Reply); err != nil {
		g.log.log.Warn("consumer request refused", "subject", m.Subject, "reply", m.Reply, "err", err)
		if answerable(m.Reply) {
			g.refuse(m, err.Error())
		}
		return
	}
	req, err := gateRequest(m.Data)
	if err != nil {
		g.refuse(m, err.Error())
		return
	}
	subject := "$JS.API.CONSUMER.CREATE." + strings.TrimPrefix(m.Subject, consumerGateRoot+".")
	if req.Config.Name == "" {
		// Every engine gets the request with the same reply subject, so
		// they all make the same consumer.
		sum := sha256.Sum256([]byte(m.Reply))
		req.Config.Name = "gate_" + hex.EncodeToString(sum[:10])
		subject = "$JS.API.CONSUMER.CREATE." + EventsStream + "." + req.Config.Name
	}
	data, err := json.Marshal(req)
	if err != nil {
		g.refuse(m, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), gateTimeout)
	defer cancel()
	answer, err := g.log.nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		g.refuse(m, "the engine could not reach JetStream: "+err.Error())
		return
	}
	_ = m.Respond(answer.Data)
}

// gateRequest decodes a request to create a consumer of the log as
// JetStream does (no unknown field) and returns it if the gate allows it:
// a pull consumer (no deliver subject or group), ephemeral (no durable
// name), without acks, idle for at most gateMaxInactive (JetStream gives
// an ephemeral consumer that names no threshold seconds).
func gateRequest(data []byte) (*server.CreateConsumerRequest, error) {
	var req server.CreateConsumerRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("orbit: a consumer request that does not decode: %v", err)
	}
	c := req.Config
	switch {
	case req.Stream != EventsStream:
		return nil, fmt.Errorf("orbit: a consumer of %s only", EventsStream)
	case c.DeliverSubject != "" || c.DeliverGroup != "":
		return nil, fmt.Errorf("orbit: only the engine may make a push consumer (deliver subject %q): make a pull consumer", c.DeliverSubject)
	case c.Durable != "":
		return nil, fmt.Errorf("orbit: only the engine may make a durable consumer (%q): make an ephemeral one", c.Durable)
	case c.AckPolicy != server.AckNone:
		return nil, fmt.Errorf("orbit: a consumer of the log takes no acks: ack policy none")
	case c.InactiveThreshold < 0 || c.InactiveThreshold > gateMaxInactive:
		return nil, fmt.Errorf("orbit: a consumer of the log goes after at most %s idle: inactive threshold %s", gateMaxInactive, c.InactiveThreshold)
	}
	return &req, nil
}

// refuse answers m with a JetStream API error, as nats.go and the nats CLI
// read one.
func (g *consumerGate) refuse(m *nats.Msg, why string) {
	data, err := json.Marshal(server.JSApiConsumerCreateResponse{ApiResponse: server.ApiResponse{
		Type: server.JSApiConsumerCreateResponseType, Error: &server.ApiError{Code: 403, Description: why}}})
	if err == nil {
		_ = m.Respond(data)
	}
}
