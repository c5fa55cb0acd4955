package events

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
)

// Durability modes of the embedded store (DESIGN §2).
const (
	// DurabilityStrict fsyncs every write before JetStream acknowledges it.
	DurabilityStrict = "strict"
	// DurabilityRelaxed lets the server fsync on its own schedule: faster,
	// but acknowledged writes can be lost on power loss (not on kill -9).
	DurabilityRelaxed = "relaxed"
)

// DefaultMaxPayload is an embedded server's largest message: big enough
// that an API request carrying a 16 MiB --input fits one message.
const DefaultMaxPayload = 24 << 20

// Config says where the log lives and how to reach it. The zero value is not
// usable: set StoreDir for an embedded server or URL for an external one.
type Config struct {
	// StoreDir is the embedded JetStream store directory. Ignored when URL
	// is set.
	StoreDir string
	// URL points at an existing NATS server or cluster instead of starting
	// an embedded one.
	URL string
	// Listen is the host:port the embedded server accepts clients on; port 0
	// picks a free port. Empty means in-process clients only.
	Listen string
	// CredsDir holds the project's identities (see EnsureCreds); an
	// embedded server admits only them (and ExtraClients), on every
	// listener and in process, and the engine's own connection signs as
	// IdentityEngine. Default: "creds" beside StoreDir. Ignored when URL is
	// set.
	CredsDir string
	// ListenTLS, when set, makes the embedded server's listener speak TLS
	// only (see TLSFiles). Ignored when URL is set.
	ListenTLS *TLSFiles
	// TLS is this connection's TLS to a server that asks for it or a
	// tls:// URL: the CA it trusts and the certificate it shows. Nil: the
	// system's roots, and no certificate.
	TLS *TLSFiles
	// ExtraClients are nkey seed files whose public keys an embedded server
	// also admits, with the client's permissions (serve --nkey).
	ExtraClients []string
	// Token is sent to an external server that requires one. An embedded
	// server cannot combine a token with its nkey users: Validate refuses a
	// token without URL.
	Token string
	// NKeySeedFile, when set, names a file holding the nkey user seed this
	// connection signs the server's challenge with (an external server, or
	// Dial). Unlike a token, the secret never crosses the wire. Not with
	// Token.
	NKeySeedFile string
	// LogKeyFile names the log key (see MakeLogKey): everything this Log
	// publishes is signed with it, and everything it reads is verified.
	// Empty: no signing and no verification. A Dial'd Log whose file does
	// not exist, or that may not read it, signs nothing either.
	LogKeyFile string
	// MakeLogKey makes the key at LogKeyFile when there is none, signing
	// from the streams' next sequences on (what an engine does).
	MakeLogKey bool
	// MaxPayload is an embedded server's largest message (default
	// DefaultMaxPayload).
	MaxPayload int32
	// Durability is DurabilityStrict (default) or DurabilityRelaxed.
	Durability string
	// Replicas is the replica count of every stream, bucket and object
	// store on an external server or cluster. 0 means 3 when the cluster
	// has three or more servers, else 1 (see ClusterSize). An embedded
	// server is one server: 0 or 1 only.
	Replicas int
	// DuplicateWindow is the streams' deduplication window (default 2m).
	DuplicateWindow time.Duration
	// RequireLog makes Open fail with ErrLogMissing, instead of creating
	// it, when the events stream does not exist: an engine sets it when
	// its views were folded from that stream, so that a deleted log is an
	// error rather than a fresh start.
	RequireLog bool
	// Name identifies the connection in server monitoring.
	Name string
	// MinFreeBytes is the free space an embedded store's disk keeps in
	// reserve (default DefaultMinFreeBytes; negative: no reserve).
	MinFreeBytes int64
	// FreeSpace reports the free space of a directory's disk (default:
	// statfs). Tests replace it to simulate a full disk.
	FreeSpace func(dir string) (uint64, error)
	// Redactor removes secrets from everything published. Nil means one
	// built from the process environment.
	Redactor *Redactor
	// Logger receives operational messages. Nil discards them.
	Logger *slog.Logger
	// OnReject, when set, is told of each message a read of this Log left
	// out because it failed verification by the log key, once per
	// message: a client says so to its user, where an engine also records
	// integrity.rejected. It is called from the reading goroutine and must
	// not block.
	OnReject func(Rejection)
}

func (c *Config) setDefaults() {
	if c.Durability == "" {
		c.Durability = DurabilityStrict
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.URL == "" && c.CredsDir == "" && c.StoreDir != "" {
		c.CredsDir = filepath.Join(filepath.Dir(c.StoreDir), "creds")
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.Name == "" {
		c.Name = "orbit"
	}
	if c.MinFreeBytes == 0 {
		c.MinFreeBytes = DefaultMinFreeBytes
	}
	if c.FreeSpace == nil {
		c.FreeSpace = statfsFree
	}
	if c.Redactor == nil {
		c.Redactor = RedactorFromEnv()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	if c.URL == "" && c.StoreDir == "" {
		return fmt.Errorf("events: either a store directory or a NATS URL is required")
	}
	switch c.Durability {
	case DurabilityStrict, DurabilityRelaxed:
	default:
		return fmt.Errorf("events: durability %q: want %q or %q", c.Durability, DurabilityStrict, DurabilityRelaxed)
	}
	if c.DuplicateWindow < 2*time.Minute {
		return fmt.Errorf("events: duplicate window %s is shorter than the 2m the design requires", c.DuplicateWindow)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		return fmt.Errorf("events: replicas %d: want 1 to 5", c.Replicas)
	}
	if c.URL == "" && c.Replicas > 1 {
		return fmt.Errorf("%w: replicas %d need a NATS cluster (a NATS URL); the embedded server is one server", ErrTooFewServers, c.Replicas)
	}
	if c.URL == "" && c.Token != "" {
		return fmt.Errorf("%w: a token works only with an external server (a NATS URL); the embedded server admits the project's nkeys", ErrTokenEmbedded)
	}
	if c.Token != "" && c.NKeySeedFile != "" {
		return fmt.Errorf("events: a token and an nkey seed: want one of them")
	}
	return nil
}
