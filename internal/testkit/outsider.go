package testkit

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/orbitrun/orbit/events"
)

// Outsider is a plain NATS connection to an engine's server, made as any
// process on the machine could: with a seed file of its choosing, or none.
// It records the permission violations the server reports, so that a test
// can tell a refused request from an unanswered one.
type Outsider struct {
	NC *nats.Conn

	mu      sync.Mutex
	refused []string
	signal  chan struct{}
}

// DialOutsider connects to url, signing with the nkey seed in seed (and
// using its inbox prefix, events.SeedInboxPrefix) unless it is empty. The
// connection closes when the test ends.
func DialOutsider(t testing.TB, url, seed string) (*Outsider, error) {
	t.Helper()
	o := &Outsider{signal: make(chan struct{}, 1)}
	opts := []nats.Option{
		nats.Name("outsider"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			o.mu.Lock()
			o.refused = append(o.refused, err.Error())
			o.mu.Unlock()
			select {
			case o.signal <- struct{}{}:
			default:
			}
		}),
	}
	if seed != "" {
		opt, err := nats.NkeyOptionFromSeed(seed)
		if err != nil {
			return nil, err
		}
		// The inbox the server lets this key subscribe to, as Orbit's own
		// connections use it.
		inbox, err := events.SeedInboxPrefix(seed)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt, nats.CustomInboxPrefix(inbox))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	o.NC = nc
	return o, nil
}

// Ask publishes msg with a reply subject and waits up to two seconds for
// the answer. refused is true when the server reported a permissions
// violation naming msg's subject instead; reply is the answer, if any.
func (o *Outsider) Ask(msg *nats.Msg) (reply *nats.Msg, refused bool) {
	o.mu.Lock()
	o.refused = nil
	o.mu.Unlock()
	inbox := o.NC.NewInbox()
	sub, err := o.NC.SubscribeSync(inbox)
	if err != nil {
		return nil, false
	}
	defer sub.Unsubscribe()
	msg.Reply = inbox
	if err := o.NC.PublishMsg(msg); err != nil {
		return nil, false
	}
	_ = o.NC.Flush()
	deadline := time.After(2 * time.Second)
	for {
		if o.violated(msg.Subject) {
			return nil, true
		}
		if m, err := sub.NextMsg(20 * time.Millisecond); err == nil {
			return m, false
		}
		select {
		case <-deadline:
			return nil, o.violated(msg.Subject)
		case <-o.signal:
		default:
		}
	}
}

// SubscribeRefused reports whether the server refuses a subscription to
// subject.
func (o *Outsider) SubscribeRefused(subject string) bool {
	o.mu.Lock()
	o.refused = nil
	o.mu.Unlock()
	sub, err := o.NC.SubscribeSync(subject)
	if err != nil {
		return true
	}
	defer sub.Unsubscribe()
	_ = o.NC.Flush()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if o.violated(subject) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (o *Outsider) violated(subject string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.refused {
		if strings.Contains(e, "Permissions Violation") && strings.Contains(e, `"`+subject+`"`) {
			return true
		}
	}
	return false
}
