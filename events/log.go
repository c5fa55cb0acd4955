package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/internal/failpoint"
)

// Names of the streams, buckets and object store Orbit keeps in JetStream.
const (
	EventsStream   = "ORBIT_EVENTS"
	CommandsStream = "ORBIT_COMMANDS"
	StepsStream    = "ORBIT_STEPS"
	LeasesBucket   = "orbit_leases"
	LocksBucket    = "orbit_locks"
	BlobsStore     = "orbit_blobs"
	RepliesStore   = "orbit_replies"
)

// Log is a connection to Orbit's event log: the streams, buckets and object
// store of DESIGN §2, on an embedded server or an external one. A Log is safe
// for concurrent use.
type Log struct {
	cfg    Config
	srv    *server.Server // nil when connected to an external server
	nc     *nats.Conn
	js     jetstream.JetStream
	events jetstream.Stream
	cmds   jetstream.Stream
	// steps holds the step commands (StepsStream); stepsAsync says it
	// persists asynchronously (see stepsConfig).
	steps      jetstream.Stream
	stepsAsync bool
	leases     jetstream.KeyValue
	locks      jetstream.KeyValue
	blobs      jetstream.ObjectStore
	// blobsStream is the object store's stream (blobread.go), blobCache
	// the blobs read last.
	blobsMu sync.Mutex
	// blobGC orders PutBlob (read-locked) and DeleteBlob (locked): see
	// blobgc.go.
	blobGC      sync.RWMutex
	blobsStream jetstream.Stream
	blobCache   blobCache
	// replies holds API answers too large for one message, for the
	// requester to fetch, for repliesTTL. A client looks it up when it
	// first needs it (repliesMu).
	replies       jetstream.ObjectStore
	repliesStream jetstream.Stream
	repliesMu     sync.Mutex
	route         apiRoute // the engine API requests go to (see Request)
	refusals      publishRefusals
	space         *spaceGuard // nil: no reserve (an external server manages its own disk)
	log           *slog.Logger

	key     *logKey // nil: no signing or verification
	keyFile string  // where key was read from
	engine  bool    // opened by Open (an engine), not Dial: records integrity.rejected
	// accounts says the server keeps the engine in an account of its own
	// (AccountsBlock), so that a request without an import is an
	// engine's; selfKey is the public key this connection signed in with.
	accounts bool
	selfKey  string
	gate     *consumerGate // an engine's consumer gate (consumer_gate.go)
	rejected sync.Map      // "stream/seq" of messages rejected (see reject)
	// places holds placeBefore's answers: event sequence → the sequence of
	// the message stored before it under its id (0: none).
	places sync.Map
	// eventsOrigin and cmdsOrigin cache originalStream.
	eventsOrigin, cmdsOrigin originCheck
	// maxLag replaces the constant of the same name when set (tests), and
	// blobTouch blobTouchAge.
	blobTouch time.Duration
	maxLag    time.Duration
	// failpoints says ORBIT_FAILPOINT named points when the Log was made
	// (see stalled): asked once, not at every append.
	failpoints bool

	commitOnce sync.Once
	// Strict mode's group commits of events and of commands, started on
	// first use.
	commits, cmdCommits, stepCommits *groupCommit
	// sent and stepsSent count the commands sent to each queue, for its
	// keeper (keeper.go).
	sent, stepsSent atomic.Uint64
	// reconnected tells the shared consumers' pulls that their server
	// changed (consume_slots.go).
	reconnected reconnects
}

// Open starts the embedded server (unless cfg.URL names an external one),
// connects, and creates or corrects the streams, buckets and object store.
// It is what an engine calls; clients call Dial.
//
// On an external server Open waits, until ctx ends, for what waiting can
// fix: servers that do not answer yet, a cluster still electing its
// JetStream leader, another engine provisioning the same streams (see
// openWaiting). It fails at once on what it cannot: credentials refused, a
// configuration the cluster does not fit.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.URL != "" {
		return openWaiting(ctx, cfg)
	}
	return open(ctx, cfg)
}

// open is one try of Open.
func open(ctx context.Context, cfg Config) (*Log, error) {
	l := &Log{cfg: cfg, log: cfg.Logger.With("component", "events"), engine: true, failpoints: failpoint.Armed()}
	if cfg.URL == "" {
		srv, err := startEmbedded(cfg)
		if err != nil {
			return nil, err
		}
		l.srv = srv
		if cfg.MinFreeBytes > 0 {
			l.space = &spaceGuard{dir: cfg.StoreDir, min: uint64(cfg.MinFreeBytes), free: cfg.FreeSpace}
		}
	}
	if err := l.connect(); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.chooseReplicas(); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.tolerateElections(); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.provision(ctx); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.loadKey(ctx); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.moveStepCommands(ctx); err != nil {
		l.Close()
		return nil, err
	}
	l.accounts = l.srv != nil || l.separatesAccounts()
	if !l.accounts {
		l.log.Warn("the NATS server does not keep the engine in an account of its own, so the other identities can make it deliver into the engine's subjects and their requests are not attributed; configure it with the accounts of orbit nats-config", "url", l.cfg.URL)
	}
	gate, err := l.serveConsumerGate()
	if err != nil {
		l.Close()
		return nil, err
	}
	l.gate = gate
	if err := l.checkClock(ctx); err != nil {
		l.Close()
		return nil, err
	}
	// The keeper saves work, it guards nothing: without it the engine is
	// slower, not wrong, and the next keeper is stored keeperEvery
	// commands later.
	for _, stream := range []string{CommandsStream, StepsStream} {
		if err := l.keepQueue(ctx, stream); err != nil {
			l.log.Warn("the command queue's keeper was not stored", "stream", stream, "err", err)
		}
	}
	return l, nil
}

// Dial connects to the log served at url without changing any stream
// configuration. It fails with ErrUnavailable when no server answers or
// when the engine has not provisioned the streams yet.
func Dial(ctx context.Context, url string, cfg Config) (*Log, error) {
	l, err := DialAPI(ctx, url, cfg)
	if err != nil {
		return nil, err
	}
	l.failpoints = failpoint.Armed()
	if err := l.bind(ctx); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.loadKey(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) connect() error {
	opts := []nats.Option{
		nats.Name(l.cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { l.reconnected.happened() }),
		// The default handler prints to stderr; a refused publish or
		// subscription fails the call that made it, which says so.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			l.log.Debug("NATS error", "subject", subject, "err", err)
			l.refusals.refused(err)
		}),
	}
	if l.cfg.Token != "" {
		opts = append(opts, nats.Token(l.cfg.Token))
	}
	seed := l.cfg.NKeySeedFile
	if l.srv != nil {
		seed = CredsFile(l.cfg.CredsDir, IdentityEngine)
	}
	plain := slices.Clone(opts)
	if seed != "" {
		opt, err := nats.NkeyOptionFromSeed(seed)
		if err != nil {
			return fmt.Errorf("events: nkey seed %s: %w", seed, err)
		}
		opts = append(opts, opt)
		if l.selfKey, err = nkeyPublic(seed); err != nil {
			return err
		}
	}
	inbox := engineInboxPrefix
	if !l.engine && seed != "" {
		// The only inbox the server lets this identity subscribe to.
		var err error
		if inbox, err = SeedInboxPrefix(seed); err != nil {
			return err
		}
	}
	if l.engine || seed != "" {
		plain = append(plain, nats.CustomInboxPrefix(inbox))
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	if l.cfg.TLS != nil && l.srv == nil {
		opt, err := clientTLS(l.cfg.TLS)
		if err != nil {
			return err
		}
		opts, plain = append(opts, opt), append(plain, opt)
	}
	url := l.cfg.URL
	if l.srv != nil {
		opts = append(opts, nats.InProcessServer(l.srv))
		url = ""
	} else {
		opts = append(opts, nats.RetryOnFailedConnect(false), nats.Timeout(2*time.Second))
		plain = append(plain, nats.RetryOnFailedConnect(false), nats.Timeout(2*time.Second))
	}
	nc, err := nats.Connect(url, opts...)
	if errors.Is(err, nats.ErrNkeysNotSupported) {
		// An external server that checks no credentials: the key was an
		// offer, and anyone who reaches that server can write the log.
		l.log.Warn("the NATS server admits anyone, so anyone who reaches it can write Orbit's log; configure it with the users of orbit nats-config", "url", url)
		l.selfKey = ""
		nc, err = nats.Connect(url, plain...)
	}
	if errors.Is(err, nats.ErrAuthorization) {
		return fmt.Errorf("%w (%w): connecting to %s: %v", ErrUnavailable, ErrUnauthorized, l.cfg.URL, err)
	}
	if tlsRefused(err) {
		return fmt.Errorf("%w (%w): connecting to %s: %v", ErrUnavailable, ErrTLS, l.cfg.URL, err)
	}
	if err != nil {
		return fmt.Errorf("%w: connecting to %s: %v", ErrUnavailable, l.cfg.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	l.nc, l.js = nc, js
	return nil
}

// bind looks up what an engine provisioned and a client reads, without
// creating anything: the log and the blobs. The store of large API answers
// is looked up when one arrives (a reader, which may not call the API, may
// not read it either); the command queue and the buckets are the engine's
// alone.
func (l *Log) bind(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	// A key that may not read the log (an agent's) is refused the
	// stream's info at once: say so instead of waiting out the timeout.
	info := "$JS.API.STREAM.INFO." + EventsStream
	wctx, stop := l.refusals.watch(ctx, info)
	defer stop()
	var err error
	if l.events, err = l.js.Stream(wctx, EventsStream); err != nil {
		if refusedBy(wctx) {
			return fmt.Errorf("%w read the log: the NATS server refused its request on %s", ErrNotPermitted, info)
		}
		return fmt.Errorf("%w: stream %s: %v", ErrUnavailable, EventsStream, err)
	}
	if l.blobs, err = l.js.ObjectStore(ctx, BlobsStore); err != nil {
		return fmt.Errorf("%w: object store %s: %v", ErrUnavailable, BlobsStore, err)
	}
	return nil
}

// Close drains the connection and shuts the embedded server down, if any.
// Everything acknowledged before Close is on disk.
func (l *Log) Close() error {
	if l.gate != nil {
		l.gate.stop()
	}
	l.stopCommits()
	if l.nc != nil {
		l.nc.Close()
	}
	if l.srv != nil {
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
	}
	return nil
}

// ClientURL is the URL other processes use to reach this log: the embedded
// server's listen address, or the external URL. Empty when the embedded
// server accepts in-process clients only.
func (l *Log) ClientURL() string {
	if l.srv == nil {
		return l.cfg.URL
	}
	if l.cfg.Listen == "" {
		return ""
	}
	return l.srv.ClientURL()
}

// CredsDir is the directory of the identities an embedded log admits (see
// EnsureCreds); empty for a log on an external server.
func (l *Log) CredsDir() string {
	if l.srv == nil {
		return ""
	}
	return l.cfg.CredsDir
}

// Embedded reports whether this Log runs its own server, and so is the only
// engine on its store.
func (l *Log) Embedded() bool { return l.srv != nil }

// Durability returns the durability mode in effect.
func (l *Log) Durability() string { return l.cfg.Durability }

// Redactor returns the redactor applied to everything this Log publishes.
func (l *Log) Redactor() *Redactor { return l.cfg.Redactor }

// LastSeq returns the sequence of the last event in the log (0 when empty),
// as the event stream's leader knows it: on a cluster, a replica's answer,
// which may be behind, is not taken (see leaderInfo).
func (l *Log) LastSeq(ctx context.Context) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	info, err := leaderInfo(ctx, l.events)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

// Consumers returns how many consumers the event stream has: the engine's
// own feeds and every client's that is following a run. It stays bounded
// because a feed deletes its consumer when it stops.
func (l *Log) Consumers(ctx context.Context) (int, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	info, err := l.events.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return info.State.Consumers, nil
}

// EventAt returns the event stored at seq, or ErrNotFound (ErrRemoved when
// a log.removed record names seq); ErrTampered when it fails verification
// by the log key.
func (l *Log) EventAt(ctx context.Context, seq uint64) (Event, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	raw, err := l.events.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// A direct get's replica may be behind the leader: a sequence
		// it does not hold is asked of the leader before it counts as
		// missing.
		raw, err = l.leaderMsg(ctx, seq)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		if removed, rerr := l.removed(ctx); rerr == nil && removed.has(seq) {
			return Event{}, fmt.Errorf("%w: event at sequence %d", ErrRemoved, seq)
		}
		return Event{}, fmt.Errorf("%w: event at sequence %d", ErrNotFound, seq)
	}
	if err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	ev, err := l.readMessage(ctx, raw.Sequence, raw.Subject, raw.Header, raw.Data, raw.Time)
	if err != nil {
		return Event{}, err
	}
	ev.Seq = raw.Sequence
	return ev, nil
}

// defaultTimeout bounds requests made with a context that has no deadline.
const defaultTimeout = 10 * time.Second

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultTimeout)
}

// leaderMsg returns the event stored at seq as the event stream's leader
// holds it ($JS.API.STREAM.MSG.GET, which only the leader answers), or
// jetstream.ErrMsgNotFound.
func (l *Log) leaderMsg(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	req, err := json.Marshal(struct {
		Seq uint64 `json:"seq"`
	}{seq})
	if err != nil {
		return nil, err
	}
	msg, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+EventsStream, req)
	if err != nil {
		return nil, err
	}
	var reply struct {
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, err
	}
	switch {
	case reply.Error != nil && reply.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrMsgNotFound
	case reply.Error != nil:
		return nil, reply.Error
	case reply.Message == nil:
		return nil, errors.New("an empty answer")
	}
	raw := &jetstream.RawStreamMsg{Subject: reply.Message.Subject, Sequence: reply.Message.Seq, Data: reply.Message.Data, Time: reply.Message.Time}
	if len(reply.Message.Header) > 0 {
		if raw.Header, err = nats.DecodeHeadersMsg(reply.Message.Header); err != nil {
			return nil, err
		}
	}
	return raw, nil
}
