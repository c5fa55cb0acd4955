package assets

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// An Executor says how to run a CLI coding agent (claude, codex, ...) for an
// agent_loop on the cli backend. Its fields are literal: nothing in it is a
// template, because it describes a program, not a step.

var (
	executorKeys    = []string{"command", "args", "output", "env", "pass"}
	executorOutputs = []string{OutputText, OutputClaudeJSON, OutputCodexJSONL, OutputClaudeCode, OutputCodex}
)

// secretSuffixes are the endings of environment variable names that hold
// secrets, the same the event log redacts by.
var secretSuffixes = []string{"_KEY", "_TOKEN", "_SECRET", "_PASSWORD"}

// ParseExecutor reads one Executor asset from data; file is used only to
// locate problems and as the Executor's Source. It returns the executor with
// its defaults applied (output text), or an *Error (matching ErrInvalid)
// listing every problem found in the file.
func ParseExecutor(file string, data []byte) (*Executor, error) {
	e, _, err := parseExecutor(file, data)
	return e, err
}

// parseExecutorFile is parseExecutor in the form a catalog layer loads.
func parseExecutorFile(f assetFile, layer Layer) (*Executor, string, int, error) {
	e, line, err := parseExecutor(f.source, f.data)
	if err != nil {
		return nil, "", 0, err
	}
	e.Layer = layer
	return e, e.Name, line, nil
}

// parseExecutor is ParseExecutor that also returns the line of
// metadata.name.
func parseExecutor(file string, data []byte) (*Executor, int, error) {
	env, spec, err := parseAsset(file, data, KindExecutor, func(d *decoder, n *yaml.Node) ExecutorSpec {
		return d.executorSpec(n, "spec")
	})
	if err != nil {
		return nil, 0, err
	}
	return &Executor{
		Name:        env.name,
		Description: env.description,
		Labels:      env.labels,
		Source:      file,
		Layer:       LayerFile,
		Spec:        spec,
	}, env.nameLine, nil
}

func (d *decoder) executorSpec(n *yaml.Node, path string) ExecutorSpec {
	m := d.mapping(n, path)
	if m == nil {
		return ExecutorSpec{}
	}
	d.checkKeys(m, executorKeys, nil)
	var spec ExecutorSpec
	spec.Command, _ = d.requiredStr(m, "command")
	if n := m.get("args"); n != nil {
		spec.Args, _ = d.stringList(n, child(path, "args"))
	}
	spec.Output = d.oneOf(m, "output", executorOutputs...)
	if n := m.get("env"); n != nil {
		spec.Env = d.executorEnv(n, child(path, "env"))
	}
	if n := m.get("pass"); n != nil {
		spec.Pass, _ = d.stringList(n, child(path, "pass"))
		for i, name := range spec.Pass {
			if !envName.MatchString(name) {
				d.addAt(n, fmt.Sprintf("%s[%d]", child(path, "pass"), i), fmt.Sprintf("%q is not an environment variable name (letters, digits and _, not starting with a digit)", name))
			}
		}
	}
	return spec
}

// executorEnv reads an executor's extra environment. A secret-named variable
// is refused: the spec is copied into every job that uses the executor and
// so into the log, and a key written in a file is a leaked key.
func (d *decoder) executorEnv(n *yaml.Node, path string) map[string]string {
	m := d.mapping(n, path)
	if m == nil {
		return nil
	}
	env := make(map[string]string, len(m.keys))
	for _, k := range m.keys {
		e := m.entries[k]
		kpath := child(path, k)
		switch {
		case !envName.MatchString(k):
			d.addAt(e.key, kpath, fmt.Sprintf("%q is not an environment variable name (letters, digits and _, not starting with a digit)", k))
			continue
		case isSecretName(k):
			d.addAt(e.key, kpath, "looks like a secret: set it in the engine's environment instead (an executor's env is copied into every run that uses it)")
			continue
		}
		if isNull(resolve(e.val)) {
			env[k] = ""
			continue
		}
		if v, ok := d.scalarString(e.val, kpath); ok {
			env[k] = v
		}
	}
	return env
}

// isSecretName reports whether an environment variable's name says it holds
// a secret.
func isSecretName(name string) bool {
	upper := strings.ToUpper(name)
	for _, s := range secretSuffixes {
		if strings.HasSuffix(upper, s) || upper == s[1:] {
			return true
		}
	}
	return false
}

// clone returns a copy of s that shares no slice or map with it.
func (s ExecutorSpec) clone() ExecutorSpec {
	c := s
	c.Args = slices.Clone(s.Args)
	c.Env = maps.Clone(s.Env)
	c.Pass = slices.Clone(s.Pass)
	return c
}
