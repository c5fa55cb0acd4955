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
	// BoundEventsFrom and BoundCommandsFrom are the first sequences whose
	// messages must carry a format-2 MAC (see mac2Prefix): those a key is
	// made at, or for a key made before format 2 the next sequences when
	// an engine that writes it first opened the key (upgradeLogKey).
	// Absent: messages in format 1 are accepted throughout.
	BoundEventsFrom   uint64 `json:"bound_events_from,omitempty"`
	BoundCommandsFrom uint64 `json:"bound_commands_from,omitempty"`
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
	if f.BoundEventsFrom != 0 && f.BoundEventsFrom < f.EventsFrom {
		return nil, fmt.Errorf("%w: bound_events_from: want a sequence ≥ events_from (%d)", ErrInvalidLogKey, f.EventsFrom)
	}
	if f.BoundCommandsFrom != 0 && f.BoundCommandsFrom < f.CommandsFrom {
		return nil, fmt.Errorf("%w: bound_commands_from: want a sequence ≥ commands_from (%d)", ErrInvalidLogKey, f.CommandsFrom)
	}
	return &logKey{key: key, hexKey: f.Key, eventsFrom: f.EventsFrom, commandsFrom: f.CommandsFrom,
		boundEventsFrom: f.BoundEventsFrom, boundCommandsFrom: f.BoundCommandsFrom,
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
	at.BoundEventsFrom, at.BoundCommandsFrom = at.EventsFrom, at.CommandsFrom
	at.Created = time.Now().UTC()
	// Linked into place, so that of engines racing here the first wins.
	err := writeLogKey(path, at, func(tmp string) error {
		if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return readLogKey(path)
}

// writeLogKey writes f to a private temporary file beside path and hands
// its name to place, which puts it at path: a reader never sees a
// half-written key.
func writeLogKey(path string, f logKeyFile, place func(tmp string) error) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".log.key-*")
	if err != nil {
		return fmt.Errorf("events: writing log key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(body, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("events: writing log key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("events: writing log key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("events: writing log key: %w", err)
	}
	if err := place(tmp.Name()); err != nil {
		return fmt.Errorf("events: writing log key %s: %w", path, err)
	}
	return nil
}

// upgradeLogKey records in the key file at path, made before format 2,
// that from the streams' next sequences on every message is in format 2:
// those this engine writes from now on. A copy of an earlier message
// stored again is then refused (ReasonUnbound). Engines sharing the file
// may each record their own start; any of them is right, since format 2
// is accepted everywhere and every such engine writes nothing else.
//
// IMPORTANT: an older engine still writing to the log from then on writes
// format 1, which readers refuse: a cluster's engines move together.
func (l *Log) upgradeLogKey(ctx context.Context, path string) (*logKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("events: log key %s: %w", path, err)
	}
	var f logKeyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("log key %s: %w: %v", path, ErrInvalidLogKey, err)
	}
	if f.BoundEventsFrom != 0 {
		return readLogKey(path)
	}
	at, err := l.keyStart(ctx)
	if err != nil {
		return nil, err
	}
	f.BoundEventsFrom, f.BoundCommandsFrom = max(at.EventsFrom, f.EventsFrom), max(at.CommandsFrom, f.CommandsFrom)
	if err := writeLogKey(path, f, func(tmp string) error { return os.Rename(tmp, path) }); err != nil {
		return nil, err
	}
	l.log.Info("the log key now requires format-2 MACs", "file", path, "events_from", f.BoundEventsFrom, "commands_from", f.BoundCommandsFrom)
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
	if l.engine && key.boundEventsFrom == 0 {
		upgraded, err := l.upgradeLogKey(ctx, path)
		if err != nil {
			// Still verifiable: format 2 is accepted everywhere; only
			// format-1 copies are not refused.
			l.log.Warn("the log key could not be moved to format 2; copies of earlier events are not refused", "file", path, "err", err)
		} else {
			key = upgraded
		}
	}
	l.cfg.Redactor.Add(key.hexKey)
	l.key, l.keyFile = key, path
	return nil
}

// KeyFile is the file of the key this Log signs and verifies with (empty
// when it has none).
func (l *Log) KeyFile() string {
	if l.key == nil {
		return ""
	}
	return l.keyFile
}

// UseKey makes this Log verify what it reads with the key an engine signs
// with, which id names (the engine's KeyID; empty when it signs nothing):
// the key it loaded if that is the one, else the first of files that
// holds it. Without it at hand the Log verifies nothing, rather than
// leave out every event the engine wrote. It returns the file of the key
// in use, empty for none. Call it before the Log reads anything.
func (l *Log) UseKey(id string, files ...string) string {
	if id == "" {
		l.key = nil
		return ""
	}
	if l.key != nil && l.key.id() == id {
		return l.keyFile
	}
	for _, f := range files {
		k, err := readLogKey(f)
		if err == nil && k.id() == id {
			l.cfg.Redactor.Add(k.hexKey)
			l.key, l.keyFile = k, f
			return f
		}
	}
	l.key = nil
	return ""
}

// KeyID names the key this Log signs and verifies with, without revealing
// it (empty when it has none). An engine announces it in engine.info, so
// that a client verifies with the same key or not at all (see UseKey).
func (l *Log) KeyID() string {
	if l.key == nil {
		return ""
	}
	return l.key.id()
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
