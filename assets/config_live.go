package assets

import (
	"encoding/json"
	"strings"
)

// ConfigSetting is a setting of config.yaml and whether a running engine
// applies a change of it.
type ConfigSetting struct {
	// Path is the setting's YAML path (fs_profiles and providers stand for
	// their whole sections).
	Path string
	// Live: a running engine applies a change from the next step,
	// delivery or decision that reads it. Otherwise a change takes a
	// restart of the engine.
	Live bool
}

// configSettings are every setting of config.yaml, in the file's order,
// with how to read its value for a comparison.
//
// IMPORTANT: a setting added to the file is added here too, live or not
// (a test checks that each of configKeys is): a running engine must never
// ignore a change without saying that it needs a restart.
var configSettings = []struct {
	ConfigSetting
	value func(*Config) any
}{
	{ConfigSetting{"durability", false}, func(c *Config) any { return c.Durability }},
	{ConfigSetting{"serve.listen", false}, func(c *Config) any { return c.Serve.Listen }},
	{ConfigSetting{"serve.http", false}, func(c *Config) any { return c.Serve.HTTP }},
	{ConfigSetting{"serve.tls", false}, func(c *Config) any {
		if c.Serve.TLS == nil {
			return TLSConfig{}
		}
		return *c.Serve.TLS
	}},
	{ConfigSetting{"serve.http_hosts", false}, func(c *Config) any { return strings.Join(c.Serve.HTTPHosts, "\n") }},
	{ConfigSetting{"engine.idle_timeout_seconds", true}, func(c *Config) any { return c.Engine.IdleTimeoutSeconds }},
	{ConfigSetting{"engine.ack_wait_seconds", false}, func(c *Config) any { return c.Engine.AckWaitSeconds }},
	{ConfigSetting{"engine.max_deliveries", true}, func(c *Config) any { return c.Engine.MaxDeliveries }},
	{ConfigSetting{"engine.max_child_depth", true}, func(c *Config) any { return c.Engine.MaxChildDepth }},
	{ConfigSetting{"engine.max_descendants", true}, func(c *Config) any { return c.Engine.MaxDescendants }},
	{ConfigSetting{"runtime.backend", true}, func(c *Config) any { return c.Runtime.Backend }},
	{ConfigSetting{"nats.url", false}, func(c *Config) any { return c.NATS.URL }},
	{ConfigSetting{"nats.replicas", false}, func(c *Config) any { return c.NATS.Replicas }},
	{ConfigSetting{"tracing.endpoint", false}, func(c *Config) any { return c.Tracing.Endpoint }},
	{ConfigSetting{"fs_profiles", true}, func(c *Config) any { return canonical(c.FSProfiles) }},
	{ConfigSetting{"providers", true}, func(c *Config) any { return canonical(c.Providers) }},
	{ConfigSetting{"forge.kind", true}, func(c *Config) any { return c.Forge.Kind }},
	{ConfigSetting{"forge.base_url", true}, func(c *Config) any { return c.Forge.BaseURL }},
	{ConfigSetting{"forge.repository", true}, func(c *Config) any { return c.Forge.Repository }},
	{ConfigSetting{"forge.token_env", true}, func(c *Config) any { return c.Forge.TokenEnv }},
	{ConfigSetting{"retention.runs", true}, func(c *Config) any { return c.Retention.Runs }},
	{ConfigSetting{"retention.tasks", true}, func(c *Config) any { return c.Retention.Tasks }},
	{ConfigSetting{"retention.archive_dir", true}, func(c *Config) any { return c.Retention.ArchiveDir }},
	{ConfigSetting{"retention.every", true}, func(c *Config) any { return c.Retention.Every }},
	{ConfigSetting{"retention.gc_grace", true}, func(c *Config) any { return c.Retention.GCGrace }},
}

// ConfigSettings returns every setting of config.yaml, in the file's
// order, with whether a running engine applies a change of it.
func ConfigSettings() []ConfigSetting {
	out := make([]ConfigSetting, len(configSettings))
	for i, s := range configSettings {
		out[i] = s.ConfigSetting
	}
	return out
}

// Changed returns the paths of the settings whose values differ between c
// and other, in the file's order: those a running engine applies (live)
// and those that take a restart. A section is compared whole (an empty one
// is the same as none), and both configs are compared as their defaults
// complete them.
func (c *Config) Changed(other *Config) (live, restart []string) {
	a, b := *c, *other
	a.setDefaults()
	b.setDefaults()
	for _, s := range configSettings {
		if s.value(&a) == s.value(&b) {
			continue
		}
		if s.Live {
			live = append(live, s.Path)
		} else {
			restart = append(restart, s.Path)
		}
	}
	return live, restart
}

// canonical is a section as a comparable value: its JSON (map keys
// sorted), "" when it is empty.
func canonical[M ~map[string]V, V any](m M) string {
	if len(m) == 0 {
		return ""
	}
	data, err := json.Marshal(m)
	if err != nil {
		// Strings and lists of strings only: it cannot fail.
		panic(err)
	}
	return string(data)
}
