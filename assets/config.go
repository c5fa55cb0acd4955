package assets

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Durability settings of the embedded log.
const (
	// DurabilityStrict makes the embedded server fsync before it
	// acknowledges a write, so an acknowledged event survives power loss.
	DurabilityStrict = "strict"
	// DurabilityRelaxed leaves fsync to the server's own schedule, trading
	// the last acknowledged writes on power loss for throughput.
	DurabilityRelaxed = "relaxed"
)

// Config defaults.
const (
	DefaultListen             = "127.0.0.1:4222"
	DefaultIdleTimeoutSeconds = 60
	defaultRuntimeBackend     = "http"
)

// Config is a project's .orbit/config.yaml. The zero value means every
// default; LoadConfig returns it with the defaults filled in.
type Config struct {
	// Durability is strict (the default) or relaxed.
	Durability string        `json:"durability"`
	Serve      ServeConfig   `json:"serve"`
	Engine     EngineConfig  `json:"engine"`
	Runtime    RuntimeConfig `json:"runtime"`
}

// ServeConfig configures orbit serve.
type ServeConfig struct {
	// Listen is the address orbit serve listens on by default, host:port.
	Listen string `json:"listen"`
}

// EngineConfig configures the engine.
type EngineConfig struct {
	// IdleTimeoutSeconds is how long an auto-started engine waits with
	// nothing to do before it exits.
	IdleTimeoutSeconds int `json:"idle_timeout_seconds"`
}

// RuntimeConfig configures how activities run.
type RuntimeConfig struct {
	// Backend is what an agent_loop with backend: auto runs on (http or
	// cli) when neither --backend nor ORBIT_BACKEND says otherwise.
	Backend string `json:"backend"`
}

// configKeys are the keys of config.yaml, by the path of their mapping.
var configKeys = map[string][]string{
	"":        {"durability", "serve", "engine", "runtime"},
	"serve":   {"listen"},
	"engine":  {"idle_timeout_seconds"},
	"runtime": {"backend"},
}

func (c *Config) setDefaults() {
	if c.Durability == "" {
		c.Durability = DurabilityStrict
	}
	if c.Serve.Listen == "" {
		c.Serve.Listen = DefaultListen
	}
	if c.Engine.IdleTimeoutSeconds == 0 {
		c.Engine.IdleTimeoutSeconds = DefaultIdleTimeoutSeconds
	}
	if c.Runtime.Backend == "" {
		c.Runtime.Backend = defaultRuntimeBackend
	}
}

// Validate checks the config as its defaults complete it, without changing
// it. The error is an *Error (matching ErrInvalid) whose problems have the
// YAML path of each bad setting.
func (c *Config) Validate() error {
	v := *c
	v.setDefaults()
	var ps problems
	if v.Durability != DurabilityStrict && v.Durability != DurabilityRelaxed {
		ps.add(0, "durability", fmt.Sprintf("%q is not one of strict, relaxed", v.Durability))
	}
	if reason := checkListen(v.Serve.Listen); reason != "" {
		ps.add(0, "serve.listen", reason)
	}
	if v.Engine.IdleTimeoutSeconds < 1 {
		ps.add(0, "engine.idle_timeout_seconds", "must be ≥ 1")
	}
	if v.Runtime.Backend != "http" && v.Runtime.Backend != "cli" {
		ps.add(0, "runtime.backend", fmt.Sprintf("%q is not one of http, cli", v.Runtime.Backend))
	}
	return ps.err()
}

func checkListen(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not host:port", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Sprintf("%q has no valid port", addr)
	}
	return ""
}

// LoadConfig reads <root>/.orbit/config.yaml and returns it with defaults
// filled in. A missing or empty file gives the defaults. Problems (unknown
// keys, wrong types, bad values) are an *Error matching ErrInvalid that
// names the file, line and path of each; a file that cannot be read gives
// the I/O error.
func LoadConfig(root string) (*Config, error) {
	file := filepath.Join(root, ".orbit", "config.yaml")
	c := &Config{}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		c.setDefaults()
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	d := newDecoder(file)
	lines := map[string]int{}
	if n := d.parseDocument(data, true); n != nil {
		d.config(n, c, lines)
	}
	// Value checks live in Validate, for configs built in code too; here
	// they get the line of the setting they are about.
	var verr *Error
	if errors.As(c.Validate(), &verr) {
		for _, p := range verr.Problems {
			d.add(lines[p.Path], p.Path, p.Reason)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	c.setDefaults()
	return c, nil
}

// config decodes the config document into c, recording the line of every
// setting in lines.
func (d *decoder) config(n *yaml.Node, c *Config, lines map[string]int) {
	top := d.mapping(n, "")
	if top == nil {
		return
	}
	d.checkKeys(top, configKeys[""], nil)
	c.Durability = d.setting(top, "durability", lines)
	for _, section := range []string{"serve", "engine", "runtime"} {
		sn := top.get(section)
		if sn == nil {
			continue
		}
		m := d.mapping(sn, section)
		if m == nil {
			continue
		}
		d.checkKeys(m, configKeys[section], nil)
		switch section {
		case "serve":
			c.Serve.Listen = d.setting(m, "listen", lines)
		case "engine":
			if vn := m.get("idle_timeout_seconds"); vn != nil {
				lines[child(m.path, "idle_timeout_seconds")] = vn.Line
				c.Engine.IdleTimeoutSeconds, _ = d.scalarInt(vn, child(m.path, "idle_timeout_seconds"))
			}
		case "runtime":
			c.Runtime.Backend = d.setting(m, "backend", lines)
		}
	}
}

// setting reads an optional string setting and records its line.
func (d *decoder) setting(m *mapping, key string, lines map[string]int) string {
	lines[child(m.path, key)] = m.line(key)
	return d.str(m, key)
}

// scaffoldFS holds the files orbit init writes, laid out as under .orbit/.
//
//go:embed scaffold
var scaffoldFS embed.FS

// gitignore keeps the runtime state out of version control. It is not a file
// of scaffoldFS because a .gitignore there would apply to this repository.
const gitignore = "# Orbit's runtime state: the event log and its views.\nstate/\n"

// Scaffold returns the files orbit init writes, keyed by their slash-separated
// path relative to .orbit/: config.yaml (the defaults, commented),
// .gitignore (ignoring state/), jobs/example.yaml and
// activities/example_shell.yaml. The files load without problems. Each call
// returns a new map.
func Scaffold() map[string][]byte {
	files := map[string][]byte{".gitignore": []byte(gitignore)}
	sub, err := fs.Sub(scaffoldFS, "scaffold")
	if err == nil {
		err = fs.WalkDir(sub, ".", func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			data, err := fs.ReadFile(sub, path)
			files[path] = data
			return err
		})
	}
	if err != nil {
		// The files are compiled in; reading them cannot fail.
		panic(err)
	}
	return files
}
