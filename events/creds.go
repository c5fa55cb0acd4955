package events

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Identity is one of the NATS users a project's embedded server admits
// (DESIGN §2 "Access"). Each has an nkey seed in the creds directory and the
// permissions of Permissions.
type Identity string

// The project's identities.
const (
	// IdentityEngine is the engine's own connection: it alone writes the
	// log, the command queue, the buckets and the object stores.
	IdentityEngine Identity = "engine"
	// IdentityClient is the CLI's: it reads the log and the blobs and asks
	// the engine through the request/reply API, which validates every write.
	IdentityClient Identity = "client"
	// IdentityReader subscribes to and reads the log and the blobs, and
	// nothing else: for tailing with the nats CLI and for dashboards.
	IdentityReader Identity = "reader"
	// IdentityAgent is what a CLI agent's `orbit mcp` (and `orbit
	// groundhog success|failure|side-effect`) signs in as: it may call the
	// roll and the groundhog.verb endpoint, which takes a verb only with
	// an open attempt's token, and nothing else. Its seed is the one a CLI
	// agent's sandbox leaves readable, so it must be worth no more than
	// the verbs.
	IdentityAgent Identity = "agent"
)

// Identities lists the project's identities in a fixed order.
var Identities = []Identity{IdentityEngine, IdentityClient, IdentityReader, IdentityAgent}

// CredsFile is the seed file of id in the creds directory dir.
func CredsFile(dir string, id Identity) string {
	return filepath.Join(dir, string(id)+".nk")
}

// Creds are a project's identities: their public keys, and the directory
// their seeds are in.
type Creds struct {
	// Dir holds one <identity>.nk seed file per identity.
	Dir string
	// Public maps each identity to its public user key.
	Public map[Identity]string
}

// File is the seed file of id.
func (c *Creds) File(id Identity) string { return CredsFile(c.Dir, id) }

// EnsureCreds makes the creds directory dir (mode 0700) and a fresh seed
// for every identity that has none (mode 0600), and returns the identities.
// A directory or seed whose mode was widened is narrowed back: the seeds are
// what stands between the engine and every other user of the machine.
//
// IMPORTANT: an existing seed is never replaced, so clients and external
// servers configured with the public keys keep working.
func EnsureCreds(dir string) (*Creds, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("events: creds directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("events: creds directory: %w", err)
	}
	if err := narrow(dir, 0o700); err != nil {
		return nil, err
	}
	c := &Creds{Dir: dir, Public: map[Identity]string{}}
	for _, id := range Identities {
		path := c.File(id)
		public, err := nkeyPublic(path)
		if errors.Is(err, fs.ErrNotExist) {
			public, err = NewNKeySeed(path)
		}
		if err != nil {
			return nil, err
		}
		if err := narrow(path, 0o600); err != nil {
			return nil, err
		}
		c.Public[id] = public
	}
	return c, nil
}

// narrow removes every permission bit of path beyond want.
func narrow(path string, want fs.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	if fi.Mode().Perm()&^want == 0 {
		return nil
	}
	if err := os.Chmod(path, fi.Mode().Perm()&want); err != nil {
		return fmt.Errorf("events: narrowing the mode of %s: %w", path, err)
	}
	return nil
}

// Seed returns the seed in path, for the redactor: a seed must never reach
// the log, a blob or a log file.
func Seed(path string) (string, error) {
	kp, err := readSeed(path)
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("events: nkey seed %s: %w", path, err)
	}
	return string(seed), nil
}

// AddSeeds makes the seeds of the identities in dir (those that exist and
// are readable) secrets of r.
func (r *Redactor) AddSeeds(dir string) {
	for _, id := range Identities {
		if seed, err := Seed(CredsFile(dir, id)); err == nil {
			r.Add(seed)
		}
	}
}
