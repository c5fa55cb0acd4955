package assets

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
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
	// DefaultAckWaitSeconds is engine.ack_wait_seconds when not set.
	DefaultAckWaitSeconds = 30
	// DefaultMaxDeliveries is engine.max_deliveries when not set.
	DefaultMaxDeliveries = 5
	// DefaultMaxChildDepth is engine.max_child_depth when not set.
	DefaultMaxChildDepth = 16
	// DefaultMaxDescendants is engine.max_descendants when not set.
	DefaultMaxDescendants = 1000
	defaultRuntimeBackend = "http"
)

// Config is a project's .orbit/config.yaml. The zero value means every
// default; LoadConfig returns it with the defaults filled in.
type Config struct {
	// Durability is strict (the default) or relaxed.
	Durability string        `json:"durability"`
	Serve      ServeConfig   `json:"serve"`
	Engine     EngineConfig  `json:"engine"`
	Runtime    RuntimeConfig `json:"runtime"`
	// NATS points engines and clients at an existing NATS cluster.
	NATS NATSConfig `json:"nats"`
	// Tracing exports OpenTelemetry traces (DESIGN §15).
	Tracing TracingConfig `json:"tracing"`
	// FSProfiles are the named filesystem profiles an fsProfile may name,
	// besides the built-in default (the whole workspace), which a profile
	// named default redefines.
	FSProfiles map[string]FSProfileConfig `json:"fs_profiles,omitempty"`
	// Providers configure the HTTP providers by name: claude and
	// openai_compat.
	Providers map[string]ProviderConfig `json:"providers,omitempty"`
	// Forge is where task_pr_pipeline opens pull requests.
	Forge ForgeConfig `json:"forge,omitzero"`
	// Retention archives and removes finished work from the log (DESIGN
	// §15); absent, nothing is ever removed.
	Retention RetentionConfig `json:"retention,omitzero"`
}

// Forge kinds.
const (
	ForgeGitHub = "github"
	ForgeGitea  = "gitea"
)

// ForgeConfig says which forge's API opens the pull requests of a
// shipping run (task_pr_pipeline). The token itself is never in the file:
// TokenEnv names the engine's environment variable that holds it.
type ForgeConfig struct {
	// Kind is github (the default: GitHub or GitHub Enterprise) or gitea
	// (Gitea and Forgejo).
	Kind string `json:"kind,omitempty"`
	// BaseURL is the API's address: empty for github.com; GitHub
	// Enterprise's server (its /api/v3/ is added when missing); a Gitea
	// server's root. Required for gitea.
	BaseURL string `json:"base_url,omitempty"`
	// Repository is owner/name; empty reads it from the remote's URL.
	Repository string `json:"repository,omitempty"`
	// TokenEnv is the environment variable the token is read from; empty
	// means GITHUB_TOKEN (github) or GITEA_TOKEN (gitea).
	TokenEnv string `json:"token_env,omitempty"`
}

// Token is the environment variable a forge's token is read from.
func (f ForgeConfig) Token() string {
	switch {
	case f.TokenEnv != "":
		return f.TokenEnv
	case f.Kind == ForgeGitea:
		return "GITEA_TOKEN"
	}
	return "GITHUB_TOKEN"
}

// forgeKinds are the forges the forge section may name.
var forgeKinds = []string{ForgeGitHub, ForgeGitea}

// forgeRepository is what forge.repository looks like: owner/name.
var forgeRepository = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// FSProfileConfig says which paths the fs tools of an agent may read and
// write: doublestar globs relative to the workspace ("**" is everything,
// "docs/**" everything under docs/). A path matched by no glob is denied.
type FSProfileConfig struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// ProviderConfig configures an HTTP provider. The API key itself is never
// in the file: APIKeyEnv names the environment variable that holds it.
type ProviderConfig struct {
	// BaseURL overrides the provider's endpoint (an activity's base_url
	// overrides this in turn).
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv is the environment variable the key is read from; empty
	// means the provider's usual one (ANTHROPIC_API_KEY for claude).
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// configurableProviders are the providers the providers section may
// configure.
var configurableProviders = []string{"claude", "openai_compat"}

// ServeConfig configures orbit serve.
type ServeConfig struct {
	// Listen is the address orbit serve listens on by default, host:port.
	Listen string `json:"listen"`
	// HTTP is the address of the web console, host:port ("" serves none).
	HTTP string `json:"http,omitempty"`
	// HTTPHosts are host names the console answers to besides its own
	// address, localhost, 127.0.0.1 and [::1]: "name" (any port, or none
	// behind a proxy) or "name:port". A request for any other host is
	// refused (DNS rebinding).
	HTTPHosts []string `json:"http_hosts,omitempty"`
	// TLS, when set, makes the engine's listener speak TLS only.
	TLS *TLSConfig `json:"tls,omitempty"`
}

// TLSConfig is serve.tls: the PEM files of the engine's listener. A
// relative path is relative to the project root.
type TLSConfig struct {
	// Cert is the listener's certificate (chain), Key its private key.
	Cert string `json:"cert"`
	Key  string `json:"key"`
	// CA, when set, is the authority whose certificates clients must
	// show: a client without one it signed is refused.
	CA string `json:"ca,omitempty"`
}

// Resolve returns t with its relative paths made relative to root.
func (t TLSConfig) Resolve(root string) TLSConfig {
	for _, p := range []*string{&t.Cert, &t.Key, &t.CA} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(root, *p)
		}
	}
	return t
}

// EngineConfig configures the engine.
type EngineConfig struct {
	// IdleTimeoutSeconds is how long an auto-started engine waits with
	// nothing to do before it exits.
	IdleTimeoutSeconds int `json:"idle_timeout_seconds"`
	// AckWaitSeconds is how long a step may go without a sign of life from
	// the worker running it before it is given to another (default 30).
	AckWaitSeconds int `json:"ack_wait_seconds"`
	// MaxDeliveries bounds how many times one step attempt is started
	// (default 5): a command that keeps failing is then dead-lettered.
	MaxDeliveries int `json:"max_deliveries"`
	// MaxChildDepth bounds how deep job.invoke may nest runs (default 16): a
	// run started by a run started by … a root run is at depth n, and a
	// job.invoke that would start one deeper than this fails.
	MaxChildDepth int `json:"max_child_depth"`
	// MaxDescendants bounds the runs that one run someone requested may
	// have live below it at once, at any depth (default 1,000): a
	// job.invoke that would start one more fails.
	MaxDescendants int `json:"max_descendants"`
}

// MaxReplicas is the most replicas JetStream gives a stream.
const MaxReplicas = 5

// TracingConfig is tracing: where the engine exports its traces.
type TracingConfig struct {
	// Endpoint is the OTLP endpoint (http://host:4318 for http/protobuf);
	// OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT overrides it. Empty, and no
	// variable set: no traces.
	Endpoint string `json:"endpoint,omitempty"`
}

// NATSConfig says where an external NATS server or cluster is (DESIGN §9).
type NATSConfig struct {
	// URL is a comma-separated list of the cluster's client URLs; empty
	// means the engine's embedded server.
	URL string `json:"url"`
	// Replicas of every stream, bucket and object store on the cluster; 0
	// means 3 on a cluster of three or more servers, else 1.
	Replicas int `json:"replicas"`
}

// RuntimeConfig configures how activities run.
type RuntimeConfig struct {
	// Backend is what an agent_loop with backend: auto runs on (http or
	// cli) when neither --backend nor ORBIT_BACKEND says otherwise.
	Backend string `json:"backend"`
}

// configKeys are the keys of config.yaml, by the path of their mapping.
var configKeys = map[string][]string{
	"":                {"durability", "serve", "engine", "runtime", "fs_profiles", "providers", "nats", "forge", "tracing", "retention"},
	"retention":       {"runs", "tasks", "archive_dir", "every", "gc_grace"},
	"retention.runs":  {"older_than", "keep_per_job"},
	"retention.tasks": {"older_than"},
	"forge":           {"kind", "base_url", "repository", "token_env"},
	"nats":            {"url", "replicas"},
	"tracing":         {"endpoint"},
	"serve":           {"listen", "http", "http_hosts", "tls"},
	"serve.tls":       {"cert", "key", "ca"},
	"engine":          {"idle_timeout_seconds", "ack_wait_seconds", "max_deliveries", "max_child_depth", "max_descendants"},
	"runtime":         {"backend"},
	"fs_profiles":     {"read", "write"},           // of each profile
	"providers":       {"base_url", "api_key_env"}, // of each provider
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
	if c.Engine.AckWaitSeconds == 0 {
		c.Engine.AckWaitSeconds = DefaultAckWaitSeconds
	}
	if c.Engine.MaxDeliveries == 0 {
		c.Engine.MaxDeliveries = DefaultMaxDeliveries
	}
	if c.Engine.MaxChildDepth == 0 {
		c.Engine.MaxChildDepth = DefaultMaxChildDepth
	}
	if c.Engine.MaxDescendants == 0 {
		c.Engine.MaxDescendants = DefaultMaxDescendants
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
	if v.Serve.HTTP != "" {
		if reason := checkListen(v.Serve.HTTP); reason != "" {
			ps.add(0, "serve.http", reason)
		}
	}
	for i, h := range v.Serve.HTTPHosts {
		if reason := checkHTTPHost(h); reason != "" {
			ps.add(0, index("serve.http_hosts", i), reason)
		}
	}
	for _, s := range []struct {
		path string
		secs int
	}{
		{"engine.idle_timeout_seconds", v.Engine.IdleTimeoutSeconds},
		{"engine.ack_wait_seconds", v.Engine.AckWaitSeconds},
	} {
		switch {
		case s.secs < 1:
			ps.add(0, s.path, "must be ≥ 1")
		case int64(s.secs) > MaxDurationSeconds:
			ps.add(0, s.path, durationProblem(MaxDurationSeconds))
		}
	}
	if v.Engine.MaxDeliveries < 1 {
		ps.add(0, "engine.max_deliveries", "must be ≥ 1")
	}
	if v.Engine.MaxChildDepth < 1 {
		ps.add(0, "engine.max_child_depth", "must be ≥ 1")
	}
	if v.Engine.MaxDescendants < 1 {
		ps.add(0, "engine.max_descendants", "must be ≥ 1")
	}
	if t := v.Serve.TLS; t != nil {
		if t.Cert == "" {
			ps.add(0, "serve.tls.cert", "is required: the listener's certificate (a PEM file)")
		}
		if t.Key == "" {
			ps.add(0, "serve.tls.key", "is required: the private key of serve.tls.cert (a PEM file)")
		}
	}
	if v.NATS.Replicas < 0 || v.NATS.Replicas > MaxReplicas {
		ps.add(0, "nats.replicas", fmt.Sprintf("%d is not between 1 and %d (0 or absent: 3 on a cluster of three or more servers, else 1)", v.NATS.Replicas, MaxReplicas))
	}
	if v.NATS.URL != "" {
		if reason := checkNATSURLs(v.NATS.URL); reason != "" {
			ps.add(0, "nats.url", reason)
		}
	}
	if v.Runtime.Backend != "http" && v.Runtime.Backend != "cli" {
		ps.add(0, "runtime.backend", fmt.Sprintf("%q is not one of http, cli", v.Runtime.Backend))
	}
	for _, name := range slices.Sorted(maps.Keys(v.FSProfiles)) {
		path := child("fs_profiles", name)
		if p := nameProblem(name, assetName, assetNameForm); p != "" {
			ps.add(0, path, p)
		}
		p := v.FSProfiles[name]
		for _, list := range []struct {
			key   string
			globs []string
		}{{"read", p.Read}, {"write", p.Write}} {
			for i, g := range list.globs {
				if reason := checkGlob(g); reason != "" {
					ps.add(0, index(child(path, list.key), i), reason)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v.Providers)) {
		path := child("providers", name)
		if !slices.Contains(configurableProviders, name) {
			ps.add(0, path, fmt.Sprintf("provider %q cannot be configured (configurable: %s)", name, strings.Join(configurableProviders, ", ")))
			continue
		}
		p := v.Providers[name]
		if p.BaseURL != "" {
			if reason := checkBaseURL(p.BaseURL); reason != "" {
				ps.add(0, child(path, "base_url"), reason)
			}
		}
		if p.APIKeyEnv != "" && !envName.MatchString(p.APIKeyEnv) {
			ps.add(0, child(path, "api_key_env"), fmt.Sprintf("%q is not an environment variable name", p.APIKeyEnv))
		}
	}
	f := v.Forge
	if f.Kind != "" && !slices.Contains(forgeKinds, f.Kind) {
		ps.add(0, "forge.kind", fmt.Sprintf("%q is not a forge Orbit speaks to (%s)", f.Kind, strings.Join(forgeKinds, ", ")))
	}
	if f.BaseURL != "" {
		if reason := checkBaseURL(f.BaseURL); reason != "" {
			ps.add(0, "forge.base_url", reason)
		}
	} else if f.Kind == ForgeGitea {
		ps.add(0, "forge.base_url", "is required for gitea: the server's address, e.g. https://gitea.example.com")
	}
	if f.Repository != "" && !forgeRepository.MatchString(f.Repository) {
		ps.add(0, "forge.repository", fmt.Sprintf("%q is not owner/name", f.Repository))
	}
	if f.TokenEnv != "" && !envName.MatchString(f.TokenEnv) {
		ps.add(0, "forge.token_env", fmt.Sprintf("%q is not an environment variable name", f.TokenEnv))
	}
	return ps.err()
}

// FSProfileNames returns the names an fsProfile may have in this project,
// sorted: default, the seeded profiles and every profile of FSProfiles. It
// is what CatalogOptions.FSProfiles expects.
func (c *Config) FSProfileNames() []string {
	names := []string{defaultFSProfile}
	for name := range c.Profiles() {
		if name != defaultFSProfile {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// checkGlob says why g is not a glob of an fs profile, or "" when it is.
func checkGlob(g string) string {
	switch {
	case g == "":
		return "must not be empty"
	case !doublestar.ValidatePattern(g):
		return fmt.Sprintf("%q is not a valid glob", g)
	case strings.HasPrefix(g, "/"):
		return fmt.Sprintf("%q must be relative to the workspace", g)
	case g == ".." || strings.HasPrefix(g, "../") || strings.Contains(g, "/../") || strings.HasSuffix(g, "/.."):
		return fmt.Sprintf("%q must not leave the workspace", g)
	}
	return ""
}

// checkNATSURLs says why list is not a comma-separated list of NATS URLs,
// or "" when it is.
func checkNATSURLs(list string) string {
	for _, u := range strings.Split(list, ",") {
		u = strings.TrimSpace(u)
		parsed, err := url.Parse(u)
		if u == "" || err != nil || parsed.Host == "" {
			return fmt.Sprintf("%q is not a URL like nats://host:4222", u)
		}
		switch parsed.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Sprintf("%q: scheme %q is not one of nats, tls, ws, wss", u, parsed.Scheme)
		}
	}
	return ""
}

// hostLabel is one label of a DNS name.
var hostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// checkHTTPHost says why h is not a host the console may answer to (a DNS
// name or an IP address, with a port or without), or "" when it is.
func checkHTTPHost(h string) string {
	want := fmt.Sprintf("%q is not a host name or address, with or without a port (like orbit.example.com or orbit.example.com:443)", h)
	host := h
	if hp, port, err := net.SplitHostPort(h); err == nil {
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return want
		}
		host = hp
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		host = h[1 : len(h)-1]
	}
	if net.ParseIP(host) != nil {
		if strings.Contains(host, ":") && host == h {
			return fmt.Sprintf("%q: write an IPv6 address in brackets, [%s]", h, h)
		}
		return ""
	}
	if host == "" || len(host) > 253 {
		return want
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if !hostLabel.MatchString(label) {
			return want
		}
	}
	return ""
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
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		c := &Config{}
		c.setDefaults()
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseConfig(file, data)
}

// ParseConfig reads a config file's content; file is used only to locate
// problems. It is LoadConfig without the file system: empty data gives the
// defaults, and problems are an *Error matching ErrInvalid.
//
// IMPORTANT: a provider's api_key is refused, and its value never appears
// in a problem: keys belong in the environment (api_key_env names where).
func ParseConfig(file string, data []byte) (*Config, error) {
	c := &Config{}
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
	for _, section := range configKeys[""][1:] {
		sn := top.get(section)
		if sn == nil {
			continue
		}
		m := d.mapping(sn, section)
		if m == nil {
			continue
		}
		switch section {
		case "serve":
			d.checkKeys(m, configKeys[section], nil)
			c.Serve.Listen = d.setting(m, "listen", lines)
			c.Serve.HTTP = d.setting(m, "http", lines)
			if ln := m.get("http_hosts"); ln != nil {
				path := child(m.path, "http_hosts")
				lines[path] = ln.Line
				c.Serve.HTTPHosts, _ = d.stringList(ln, path)
				for i := range c.Serve.HTTPHosts {
					lines[index(path, i)] = resolve(ln).Content[i].Line
				}
			}
			if tn := m.get("tls"); tn != nil {
				lines[child(m.path, "tls")] = m.line("tls")
				if tm := d.mapping(tn, child(m.path, "tls")); tm != nil {
					d.checkKeys(tm, configKeys["serve.tls"], nil)
					c.Serve.TLS = &TLSConfig{
						Cert: d.setting(tm, "cert", lines),
						Key:  d.setting(tm, "key", lines),
						CA:   d.setting(tm, "ca", lines),
					}
					for _, key := range []string{"cert", "key"} {
						if tm.get(key) == nil { // a missing file is reported at tls:
							lines[child(tm.path, key)] = m.line("tls")
						}
					}
				}
			}
		case "engine":
			d.checkKeys(m, configKeys[section], nil)
			for key, dst := range map[string]*int{
				"idle_timeout_seconds": &c.Engine.IdleTimeoutSeconds,
				"ack_wait_seconds":     &c.Engine.AckWaitSeconds,
				"max_deliveries":       &c.Engine.MaxDeliveries,
				"max_child_depth":      &c.Engine.MaxChildDepth,
				"max_descendants":      &c.Engine.MaxDescendants,
			} {
				if vn := m.get(key); vn != nil {
					lines[child(m.path, key)] = vn.Line
					if strings.HasSuffix(key, "_seconds") && d.overflows(vn, child(m.path, key), 1, MaxDurationSeconds) {
						continue
					}
					*dst, _ = d.scalarInt(vn, child(m.path, key))
				}
			}
		case "nats":
			d.checkKeys(m, configKeys[section], nil)
			c.NATS.URL = d.setting(m, "url", lines)
			if vn := m.get("replicas"); vn != nil {
				lines[child(m.path, "replicas")] = vn.Line
				c.NATS.Replicas, _ = d.scalarInt(vn, child(m.path, "replicas"))
			}
		case "tracing":
			d.checkKeys(m, configKeys[section], nil)
			c.Tracing.Endpoint = d.setting(m, "endpoint", lines)
		case "retention":
			d.retention(m, &c.Retention, lines)
		case "runtime":
			d.checkKeys(m, configKeys[section], nil)
			c.Runtime.Backend = d.setting(m, "backend", lines)
		case "fs_profiles":
			c.FSProfiles = d.fsProfiles(m, lines)
		case "providers":
			c.Providers = d.providers(m, lines)
		case "forge":
			d.checkKeys(m, configKeys[section], func(key string) string {
				if key == "token" {
					return "a token does not belong in a file: put it in an environment variable and name that variable with token_env"
				}
				return ""
			})
			c.Forge = ForgeConfig{Kind: d.setting(m, "kind", lines), BaseURL: d.setting(m, "base_url", lines),
				Repository: d.setting(m, "repository", lines), TokenEnv: d.setting(m, "token_env", lines)}
		}
	}
}

// fsProfiles decodes the fs_profiles section: a mapping of profile names to
// {read, write}.
func (d *decoder) fsProfiles(m *mapping, lines map[string]int) map[string]FSProfileConfig {
	out := make(map[string]FSProfileConfig, len(m.keys))
	for _, name := range m.keys {
		path := child(m.path, name)
		lines[path] = m.line(name)
		pn := m.get(name)
		if pn == nil {
			out[name] = FSProfileConfig{}
			continue
		}
		pm := d.mapping(pn, path)
		if pm == nil {
			continue
		}
		d.checkKeys(pm, configKeys["fs_profiles"], nil)
		var p FSProfileConfig
		for _, key := range []string{"read", "write"} {
			ln := pm.get(key)
			if ln == nil {
				continue
			}
			kpath := child(path, key)
			list, _ := d.stringList(ln, kpath)
			for i := range list {
				lines[index(kpath, i)] = ln.Content[i].Line
			}
			if key == "read" {
				p.Read = list
			} else {
				p.Write = list
			}
		}
		out[name] = p
	}
	return out
}

// providers decodes the providers section: a mapping of provider names to
// {base_url, api_key_env}.
func (d *decoder) providers(m *mapping, lines map[string]int) map[string]ProviderConfig {
	out := make(map[string]ProviderConfig, len(m.keys))
	for _, name := range m.keys {
		path := child(m.path, name)
		lines[path] = m.line(name)
		pn := m.get(name)
		if pn == nil {
			out[name] = ProviderConfig{}
			continue
		}
		if pn.Kind != yaml.MappingNode {
			// Not kindName: a scalar here may well be a key, which must
			// not be repeated in the message.
			d.addAt(pn, path, "must be a mapping of base_url and api_key_env")
			continue
		}
		pm := d.mapping(pn, path)
		if pm == nil {
			continue
		}
		d.checkKeys(pm, configKeys["providers"], func(key string) string {
			if key == "api_key" {
				return "a key does not belong in a file: put it in an environment variable and name that variable with api_key_env"
			}
			return ""
		})
		out[name] = ProviderConfig{
			BaseURL:   d.setting(pm, "base_url", lines),
			APIKeyEnv: d.setting(pm, "api_key_env", lines),
		}
	}
	return out
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
// .gitignore (ignoring state/), jobs/example.yaml,
// activities/example_shell.yaml and routines/README.md (no routine: an
// example to copy). The files load without problems. Each call
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
