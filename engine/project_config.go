package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orbitrun/orbit/assets"
)

// configPoll is how often the engine reads .orbit/config.yaml whole to see
// whether it changed (between polls, every step that reads the
// configuration looks at the file's size and times first).
const configPoll = time.Second

// ConfigStatus says which configuration an engine runs with: the file it
// loaded, and what of the file as it is now it does not apply.
type ConfigStatus struct {
	// File is the project's .orbit/config.yaml.
	File string `json:"file"`
	// Hash is "sha256-" and the hex SHA-256 of the content loaded (of
	// nothing when there is no file, which means every default).
	Hash string `json:"hash"`
	// Missing: there was no file; every setting is its default.
	Missing bool `json:"missing,omitempty"`
	// Modified is the file's modification time when it was loaded.
	Modified time.Time `json:"modified,omitzero"`
	// Loaded is when the engine loaded it.
	Loaded time.Time `json:"loaded"`
	// RestartNeeded are the settings the loaded file gives other values
	// than the engine started with, which it cannot change while it runs
	// (see assets.ConfigSettings): what a restart would apply.
	RestartNeeded []string `json:"restart_needed,omitempty"`
	// Error is why the file as it is now was not loaded; the engine keeps
	// the configuration it loaded before. Nil when the file is loaded.
	Error *ConfigProblem `json:"error,omitempty"`
}

// ConfigProblem is why a config file was not loaded: its first problem
// (file, line, YAML path, reason), how many more there are, and when it was
// found.
type ConfigProblem struct {
	assets.Problem
	More  int       `json:"more,omitempty"`
	Found time.Time `json:"found"`
}

// projectConfig is the project's .orbit/config.yaml as a running engine
// has it: loaded at start and loaded again whenever the file changes,
// validated first. A file that does not load (bad YAML, a bad value, an
// unreadable file) keeps the configuration loaded before, and says why in
// Status and the log.
//
// The engine polls the file (watch) rather than asking inotify: a poll
// works on every system and file system (network mounts, bind mounts into
// containers, editors that write a new file and rename it over the old
// one, the file deleted and made again) with no dependency, and one small
// read a second costs nothing. Besides the poll, get looks at the file's
// size, times and inode before it answers, so a step that starts after
// the file was written sees the new content, whenever the poll comes.
//
// It is safe for concurrent use.
type projectConfig struct {
	file   string
	logger *slog.Logger
	// apply is called, under the lock, with each configuration loaded.
	apply func(*assets.Config)

	mu      sync.Mutex
	started *assets.Config // as the engine started: what restart-needed settings are compared with
	cur     *assets.Config
	seen    string // the hash of the content last read, loaded or not
	stamp   string // the file's size, times and inode when last read
	status  ConfigStatus
}

// loadProjectConfig loads root's .orbit/config.yaml, which must load: an
// engine does not start on a bad one. apply (nil: none) is called with it,
// and with every configuration reloaded later.
func loadProjectConfig(root string, logger *slog.Logger, apply func(*assets.Config)) (*projectConfig, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if apply == nil {
		apply = func(*assets.Config) {}
	}
	c := &projectConfig{file: filepath.Join(root, ".orbit", "config.yaml"), logger: logger, apply: apply}
	stamp := fileStamp(c.file)
	data, missing, err := c.read()
	if err != nil {
		return nil, err
	}
	cfg, err := assets.ParseConfig(c.file, data)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started, c.stamp = cfg, stamp
	c.load(cfg, data, missing)
	return c, nil
}

// get returns the configuration the engine runs with, after loading the
// file again if its size, times or inode changed since it was last read.
func (c *projectConfig) get() *assets.Config {
	cfg, _ := c.current()
	return cfg
}

// current is get, and the hash of the content the configuration was
// loaded from.
func (c *projectConfig) current() (*assets.Config, string) {
	c.check(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur, c.status.Hash
}

// Status returns what the engine runs with, after looking at the file.
func (c *projectConfig) Status() ConfigStatus {
	c.check(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.status
	st.RestartNeeded = append([]string(nil), st.RestartNeeded...)
	return st
}

// watch reads the file whole every configPoll until ctx ends: a change
// that left its size and times as they were (written twice within the
// file system's time granularity) is found too.
func (c *projectConfig) watch(ctx context.Context) {
	tick := time.NewTicker(configPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.check(true)
		}
	}
}

// check loads the file again when it changed: when its stamp differs from
// the last one read, or (all) whenever its content does.
func (c *projectConfig) check(all bool) {
	stamp := fileStamp(c.file)
	c.mu.Lock()
	defer c.mu.Unlock()
	if stamp == c.stamp && !all {
		return
	}
	c.stamp = stamp
	data, missing, err := c.read()
	if err != nil {
		c.seen = "" // read again at the next poll, whatever it holds then
		c.refuse(err)
		return
	}
	if hashOf(data) == c.seen {
		return
	}
	cfg, err := assets.ParseConfig(c.file, data)
	if err != nil {
		c.seen = hashOf(data)
		c.refuse(err)
		return
	}
	live, _ := cfg.Changed(c.cur)
	wasBad, restart := c.status.Error != nil, c.status.RestartNeeded
	c.load(cfg, data, missing)
	if wasBad || len(live) > 0 || !slices.Equal(restart, c.status.RestartNeeded) {
		msg := "reloaded the project configuration"
		if wasBad {
			msg = "the project configuration loads again; reloaded it"
		}
		c.logger.Info(msg, "file", c.file, "applied", strings.Join(live, " "), "restart_needed", strings.Join(c.status.RestartNeeded, " "))
	}
}

// read returns the file's content, and whether there is none.
func (c *projectConfig) read() (data []byte, missing bool, err error) {
	data, err = os.ReadFile(c.file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading config: %w", err)
	}
	return data, false, nil
}

// load makes cfg, parsed from data, the configuration the engine runs
// with. The caller holds the lock.
func (c *projectConfig) load(cfg *assets.Config, data []byte, missing bool) {
	c.cur = cfg
	c.seen = hashOf(data)
	_, restart := cfg.Changed(c.started)
	c.status = ConfigStatus{File: c.file, Hash: c.seen, Missing: missing, Loaded: time.Now().UTC(), RestartNeeded: restart}
	if fi, err := os.Stat(c.file); err == nil {
		c.status.Modified = fi.ModTime().UTC()
	}
	c.apply(cfg)
}

// refuse records why the file was not loaded, and says so in the log once
// per content. The caller holds the lock.
func (c *projectConfig) refuse(err error) {
	p := ConfigProblem{Problem: assets.Problem{File: c.file, Reason: err.Error()}, Found: time.Now().UTC()}
	var aerr *assets.Error
	if errors.As(err, &aerr) && len(aerr.Problems) > 0 {
		p.Problem, p.More = aerr.Problems[0], len(aerr.Problems)-1
	}
	if prev := c.status.Error; prev != nil && prev.Problem == p.Problem && prev.More == p.More {
		return
	}
	c.status.Error = &p
	c.logger.Error("the project configuration does not load; the engine keeps the configuration it loaded", "file", c.file,
		"problem", p.Problem.String(), "more_problems", p.More, "loaded", c.status.Hash)
}

// hashOf is the hash ConfigStatus.Hash shows.
func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256-" + hex.EncodeToString(sum[:])
}

// fileStamp is what tells, without reading it, that a file changed: its
// size, times and inode as the catalog's listing has them (see listFile),
// or why it cannot be read.
func fileStamp(path string) string {
	var b strings.Builder
	if err := listFile(&b, path); err != nil {
		return err.Error()
	}
	return b.String()
}
