package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// engineInboxPrefix is the inbox prefix of the engine's connection. No
// client or reader may subscribe to it: the engine's JetStream replies name
// its consumers, which a client must not learn, and carry commands.
const engineInboxPrefix = "_ORBIT_ENGINE"

// inboxRoot is the root of every other identity's inbox prefix (see
// InboxPrefix).
const inboxRoot = "_ORBIT_INBOX"

// InboxPrefix returns the inbox prefix of the nkey user public (a client,
// the reader, a key admitted with serve --nkey): its connection must use it
// (nats.CustomInboxPrefix; inbox_prefix in a nats CLI context), and it is
// the only inbox the server lets that user subscribe to. So no identity
// reads the replies of another: a client's API answers, or the JetStream
// answers that name its consumers. The shared _INBOX.> is no one's.
func InboxPrefix(public string) string { return inboxRoot + "." + public }

// SeedInboxPrefix is InboxPrefix for the user whose nkey seed is in path.
func SeedInboxPrefix(path string) (string, error) {
	public, err := nkeyPublic(path)
	if err != nil {
		return "", err
	}
	return InboxPrefix(public), nil
}

// readStreams are the streams a client or a reader may read: the log and
// the blobs; the client also the large API answers.
func readStreams(id Identity) []string {
	streams := []string{EventsStream, "OBJ_" + BlobsStore}
	if id == IdentityClient {
		streams = append(streams, "OBJ_"+RepliesStore)
	}
	return streams
}

// Permissions returns what id, signing in with the nkey public, may do on
// the server, as NATS enforces it within id's account (see AccountsBlock):
// nil (everything) for the engine; for the client and the reader, reading
// the log and the blobs through JetStream's read API (stream info, direct
// and stored-message gets; pull consumers of the log, made through the
// engine's gate, their info, their messages, their deletion) and
// subscribing to the events and to their own inbox (InboxPrefix(public));
// the client may also call the engine's API on orbit.api.>. Every write is
// denied explicitly: stream and consumer administration beyond their own
// feeds, publishing events or commands, key-value and object puts.
//
// IMPORTANT: the account is what keeps an identity from making the server
// act for it (a reply subject, a consumer's deliveries); these permissions
// say what it may ask, and say again what it may not, for a server whose
// accounts were configured by hand.
func Permissions(id Identity, public string) *server.Permissions {
	switch id {
	case IdentityEngine:
		return nil
	case IdentityAgent:
		return agentPermissions(public)
	}
	var pub []string
	for _, s := range readStreams(id) {
		pub = append(pub,
			"$JS.API.STREAM.INFO."+s,
			"$JS.API.STREAM.MSG.GET."+s,
			"$JS.API.DIRECT.GET."+s,
			"$JS.API.DIRECT.GET."+s+".>",
		)
	}
	pub = append(pub,
		"$JS.API.CONSUMER.CREATE."+EventsStream,
		"$JS.API.CONSUMER.CREATE."+EventsStream+".>",
		"$JS.API.CONSUMER.INFO."+EventsStream+".*",
		"$JS.API.CONSUMER.MSG.NEXT."+EventsStream+".*",
		"$JS.API.CONSUMER.DELETE."+EventsStream+".*",
	)
	if id == IdentityClient {
		pub = append(pub, APIRoot+".>")
	}
	return &server.Permissions{
		Publish: &server.SubjectPermission{
			Allow: pub,
			Deny: []string{
				"$JS.API.STREAM.CREATE.>",
				"$JS.API.STREAM.UPDATE.>",
				"$JS.API.STREAM.DELETE.>",
				"$JS.API.STREAM.PURGE.>",
				"$JS.API.STREAM.MSG.DELETE.>",
				"$JS.API.CONSUMER.DURABLE.CREATE.>",
				"$JS.API.CONSUMER.*." + CommandsStream + ".>",
				"$JS.API.CONSUMER.*." + StepsStream + ".>",
				EventsRoot + ".>",
				CommandsRoot + ".>",
				StepsRoot, StepsRoot + ".>",
				"$KV.>",
				"$O.>",
			},
		},
		Subscribe: &server.SubjectPermission{
			Allow: []string{InboxPrefix(public) + ".>", EventsRoot + ".>"},
			Deny:  []string{CommandsRoot + ".>", StepsRoot, StepsRoot + ".>", engineInboxPrefix + ".>"},
		},
	}
}

// AgentEndpoints are the API endpoints the agent identity may call: the
// one that takes a Groundhog verb with its attempt token, and the one that
// takes an execution summary with its step's task token. A new endpoint a
// CLI agent needs is added here, and only one that checks the token.
var AgentEndpoints = []string{"groundhog.verb", "tasks.summary"}

// agentPermissions is what the agent identity (public) may do: call the
// roll (orbit.api.engines and one engine's own, orbit.api.at.<engine>.engines,
// which is how a request finds an engine) and AgentEndpoints at one engine
// (orbit.api.at.<engine>.<endpoint>), and receive the answers in its own
// inbox. No stream, consumer, key-value or object API, no event or command
// subject, no other endpoint: the allow lists are the whole of it, the
// deny lists say so again for an external server configured by hand.
//
// IMPORTANT: the endpoints themselves must still check the attempt token:
// the identity's seed is readable by every CLI agent the engine starts.
func agentPermissions(public string) *server.Permissions {
	pub := []string{rollCallSubject, EngineSubject("*", "engines")}
	for _, e := range AgentEndpoints {
		pub = append(pub, EngineSubject("*", e))
	}
	return &server.Permissions{
		Publish: &server.SubjectPermission{
			Allow: pub,
			Deny:  []string{"$JS.>", "$KV.>", "$O.>", "$SRV.>", EventsRoot + ".>", CommandsRoot + ".>"},
		},
		Subscribe: &server.SubjectPermission{
			Allow: []string{InboxPrefix(public) + ".>"},
			Deny:  []string{EventsRoot + ".>", CommandsRoot + ".>", engineInboxPrefix + ".>", APIRoot + ".>"},
		},
	}
}

func writeSubjects(b *strings.Builder, name string, p *server.SubjectPermission) {
	quote := func(list []string) string {
		q := slices.Clone(list)
		for i, s := range q {
			q[i] = fmt.Sprintf("%q", s)
		}
		return strings.Join(q, ", ")
	}
	fmt.Fprintf(b, "          %s: {\n            allow: [%s]\n            deny: [%s]\n          }\n", name, quote(p.Allow), quote(p.Deny))
}

// CheckReader signs in to the log's server as the reader whose seed is in
// seed and asks it to update the event stream with the configuration it
// already has — a change of nothing, if it is let through. A server that
// lets it through is misconfigured: the reader could as well delete the
// log. It returns ErrMisconfigured then, nil when the server refuses, and
// nil without checking when the server admits anyone (Open has said so) or
// does not answer in time.
func (l *Log) CheckReader(ctx context.Context, seed string) error {
	key, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		return fmt.Errorf("events: nkey seed %s: %w", seed, err)
	}
	inbox, err := SeedInboxPrefix(seed)
	if err != nil {
		return err
	}
	refused := make(chan struct{}, 1)
	opts := []nats.Option{nats.Name("orbit-permission-check"), key, nats.CustomInboxPrefix(inbox), nats.Timeout(2 * time.Second),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				select {
				case refused <- struct{}{}:
				default:
				}
			}
		})}
	if l.srv != nil {
		opts = append(opts, nats.InProcessServer(l.srv))
	}
	nc, err := nats.Connect(l.cfg.URL, opts...)
	if errors.Is(err, nats.ErrNkeysNotSupported) {
		return nil
	}
	if errors.Is(err, nats.ErrAuthorization) {
		return fmt.Errorf("%w: the server does not admit the reader identity (%s): configure it with orbit nats-config", ErrMisconfigured, seed)
	}
	if err != nil {
		return fmt.Errorf("%w: checking the reader's permissions: %v", ErrUnavailable, err)
	}
	defer nc.Close()
	info := l.events.CachedInfo()
	if info == nil {
		return nil
	}
	data, err := json.Marshal(info.Config)
	if err != nil {
		return err
	}
	reply := nc.NewInbox()
	sub, err := nc.SubscribeSync(reply)
	if err != nil {
		return nil
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$JS.API.STREAM.UPDATE."+EventsStream, reply, data); err != nil {
		return nil
	}
	answered := make(chan struct{})
	go func() {
		if _, err := sub.NextMsg(3 * time.Second); err == nil {
			close(answered)
		}
	}()
	select {
	case <-refused:
		return nil
	case <-answered:
		return fmt.Errorf("%w: the reader identity may change stream %s on %s, so it could delete the log; configure the server with the users of orbit nats-config", ErrMisconfigured, EventsStream, l.cfg.URL)
	case <-time.After(3 * time.Second):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
