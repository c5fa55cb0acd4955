package engine

import (
	"fmt"
	"net/url"
	"unicode/utf8"

	"github.com/orbitrun/orbit/agent"
)

// Setting is what an engine tells about one of the provider settings of its
// environment (see agent.Settings): whether it is set and, unless it is a
// secret, its value. It is part of engine.json and of the engine.info reply,
// so that a command can see that the engine serving it was started with
// other settings than its own shell has.
//
// IMPORTANT: a secret's value never leaves the engine, not even as a digest:
// Set is all that is told of it.
type Setting struct {
	Name   string `json:"name"`
	Set    bool   `json:"set"`
	Secret bool   `json:"secret,omitempty"`
	// Value is the value of a setting that is set and not secret, with the
	// password of a URL replaced (see shownValue).
	Value string `json:"value,omitempty"`
}

// ReadSettings returns the state of each setting of list in the environment
// lookup reads (os.LookupEnv for the engine's own), in the order of list.
func ReadSettings(list []agent.Setting, lookup func(string) (string, bool)) []Setting {
	out := make([]Setting, 0, len(list))
	for _, s := range list {
		v, ok := lookup(s.Name)
		st := Setting{Name: s.Name, Set: ok, Secret: s.Secret}
		if ok && !s.Secret {
			st.Value = shownValue(v)
		}
		out = append(out, st)
	}
	return out
}

// SetNames returns the names of the settings that are set, each with its
// value when it is not secret (NAME=value), for a log line.
func SetNames(list []Setting) []string {
	var out []string
	for _, s := range list {
		switch {
		case !s.Set:
		case s.Secret:
			out = append(out, s.Name)
		default:
			out = append(out, s.Name+"="+s.Value)
		}
	}
	return out
}

// SettingDiff is a provider setting that an environment (a command's shell)
// has otherwise than the engine that serves the command.
type SettingDiff struct {
	Engine Setting // as the engine has it
	Here   Setting // as the command's environment has it
}

// String says the difference in one line, never with a secret's value.
func (d SettingDiff) String() string {
	return fmt.Sprintf("%s is %s here but %s in the engine", d.Engine.Name, describe(d.Here), describe(d.Engine))
}

func describe(s Setting) string {
	switch {
	case !s.Set:
		return "not set"
	case s.Secret:
		return "set"
	case s.Value == "":
		return `set to ""`
	}
	return fmt.Sprintf("%q", s.Value)
}

// DiffSettings compares the settings an engine reported with those of the
// environment lookup reads, setting by setting in the engine's order, and
// returns those that differ: set in one and not the other, or (for a
// setting that is not secret) set to other values. Secrets are compared by
// whether they are set only.
func DiffSettings(engine []Setting, lookup func(string) (string, bool)) []SettingDiff {
	var out []SettingDiff
	for _, e := range engine {
		v, ok := lookup(e.Name)
		here := Setting{Name: e.Name, Set: ok, Secret: e.Secret}
		if ok && !e.Secret {
			here.Value = shownValue(v)
		}
		if here.Set != e.Set || here.Value != e.Value {
			out = append(out, SettingDiff{Engine: e, Here: here})
		}
	}
	return out
}

// shownValue is a setting's value as it may be shown: a URL's user
// information (a password, or a token given as the user) and its query (a
// key passed as a parameter) are replaced, and a very long value is cut,
// with its length said.
func shownValue(v string) string {
	if u, err := url.Parse(v); err == nil && u.Host != "" && (u.User != nil || u.RawQuery != "") {
		if u.User != nil {
			if _, hasPass := u.User.Password(); hasPass {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			} else {
				u.User = url.User("xxxxx")
			}
		}
		if u.RawQuery != "" {
			u.RawQuery = "xxxxx"
		}
		v = u.String()
	}
	const maxShown = 256
	if len(v) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return fmt.Sprintf("%s… (%d bytes)", v[:cut], len(v))
	}
	return v
}
