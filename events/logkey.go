package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// LogKeyFile is the name of the log key's file in a project's
// .orbit/state/creds directory.
const LogKeyFile = "log.key"

// logKeyLen is the length in bytes of the HMAC-SHA256 key.
const logKeyLen = 32

// logKeyFile is the stored form of a log key: the key, and where in each
// stream signing starts. Messages stored before the key was made (an older
// log, commands queued by an older engine) carry no signature and are
// accepted as they are; from these sequences on every message must verify.
type logKeyFile struct {
	Key          string `json:"key"` // hex
	EventsFrom   uint64 `json:"events_from"`
	CommandsFrom uint64 `json:"commands_from"`
	// EventsCreated and CommandsCreated are the creation times of the
	// streams the key was made beside: unsigned messages are accepted only
	// from those streams, never from one made again under the same name.
	EventsCreated   time.Time `json:"events_created"`
	CommandsCreated time.Time `json:"commands_created"`
	Created         time.Time `json:"created"`
}

// readLogKey loads the key stored at path. It returns an error wrapping
// fs.ErrNotExist when there is none.
func readLogKey(path string) (*logKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("events: log key %s: %w", path, err)
	}
	key, err := parseLogKey(b)
	if err != nil {
		return nil, fmt.Errorf("log key %s: %w", path, err)
	}
	return key, nil
}

// parseLogKey decodes a log key file. Every rejection wraps
// ErrInvalidLogKey and names the field.
func parseLogKey(b []byte) (*logKey, error) {
	var f logKeyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidLogKey, err)
	}
	key, err := hex.DecodeString(f.Key)
	if err != nil || len(key) != logKeyLen {
		return nil, fmt.Errorf("%w: key: want %d hex-encoded bytes", ErrInvalidLogKey, logKeyLen)
	}
	if f.EventsFrom == 0 {
		return nil, fmt.Errorf("%w: events_from: want a sequence ≥ 1", ErrInvalidLogKey)
	}
	if f.CommandsFrom == 0 {
		return nil, fmt.Errorf("%w: commands_from: want a sequence ≥ 1", ErrInvalidLogKey)
	}
	return &logKey{key: key, hexKey: f.Key, eventsFrom: f.EventsFrom, commandsFrom: f.CommandsFrom,
		eventsCreated: f.EventsCreated, commandsCreated: f.CommandsCreated}, nil
}

// createLogKey makes a new key at path, signing from the given sequences
// on, unless a key is already there: then that one is returned (engines
// sharing one file on an external server race here, and the first wins).
// The directory is made 0700 and the file 0600 when missing.
func createLogKey(path string, at logKeyFile) (*logKey, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("events: log key directory: %w", err)
	}
	key := make([]byte, logKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("events: making a log key: %w", err)
	}
	at.Key = hex.EncodeToString(key)
	at.EventsFrom, at.CommandsFrom = max(at.EventsFrom, 1), max(at.CommandsFrom, 1)
	at.Created = time.Now().UTC()
	body, err := json.Marshal(at)
	if err != nil {
		return nil, err
	}
	// Written to a private temporary file and linked into place, so that a
	// second engine never reads a half-written key.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".log.key-*")
	if err != nil {
		return nil, fmt.Errorf("events: writing log key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(body, '\n')); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("events: writing log key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("events: writing log key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("events: writing log key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("events: writing log key %s: %w", path, err)
	}
	return readLogKey(path)
}

// loadKey reads the key named by the configuration, making it first when
// MakeLogKey says so, and teaches the redactor its value.
func (l *Log) loadKey(ctx context.Context) error {
	path := l.cfg.LogKeyFile
	if path == "" {
		return nil
	}
	key, err := readLogKey(path)
	if errors.Is(err, fs.ErrNotExist) && l.cfg.MakeLogKey {
		var at logKeyFile
		if at, err = l.keyStart(ctx); err != nil {
			return err
		}
		key, err = createLogKey(path, at)
		if err == nil {
			l.log.Info("made the log key; signing from here on", "file", path, "events_from", key.eventsFrom, "commands_from", key.commandsFrom)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if errors.Is(err, fs.ErrPermission) && !l.cfg.MakeLogKey {
		// A client of another user's engine: it reads, and what it would
		// publish unsigned the engine refuses.
		l.log.Debug("log key not readable; not signing", "file", path)
		return nil
	}
	if err != nil {
		return err
	}
	l.cfg.Redactor.Add(key.hexKey)
	l.key = key
	return nil
}

// keyStart is where a key made now starts signing: the next sequence of
// each stream, and the streams' creation times.
func (l *Log) keyStart(ctx context.Context) (logKeyFile, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ev, err := leaderInfo(ctx, l.events)
	if err != nil {
		return logKeyFile{}, err
	}
	cmd, err := leaderInfo(ctx, l.cmds)
	if err != nil {
		return logKeyFile{}, err
	}
	return logKeyFile{
		EventsFrom: ev.State.LastSeq + 1, CommandsFrom: cmd.State.LastSeq + 1,
		EventsCreated: ev.Created.UTC(), CommandsCreated: cmd.Created.UTC(),
	}, nil
}
