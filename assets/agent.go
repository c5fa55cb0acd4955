package assets

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Agent specs (agent_loop and groundhog) are resolved when they are loaded,
// not when they run: backend auto becomes http or cli, a cli spec gets a copy
// of its Executor, and a provider that cannot serve the backend is a load
// error. A run then executes exactly what was validated, and a job that
// loads has nothing left for the engine to reject on these grounds.

const (
	// defaultFSProfile is the profile every project has, whether or not its
	// config defines one of that name.
	defaultFSProfile = "default"

	// backendAuto is what backend: says when it is left out.
	backendAuto = "auto"
)

// httpProviders are the providers that have an HTTP transport, in the order
// messages list them. Any other provider runs only on the cli backend, as
// the Executor of its name.
var httpProviders = []string{"claude", "openai_compat", "replay"}

// loadOptions are what a load resolves agent specs against.
type loadOptions struct {
	// backend is what backend: auto resolves to: BackendHTTP or BackendCLI.
	backend string
	// executors are the visible Executors by name.
	executors map[string]*Executor
	// fsProfiles are the names an fsProfile may have besides "default";
	// nil means any name is accepted.
	fsProfiles []string
}

// defaultLoadOptions are those of ParseActivity and ParseJob: backend auto
// resolves to http, the seeded Executors are the only ones, and fsProfile
// names are not checked.
func defaultLoadOptions() *loadOptions {
	return &loadOptions{backend: BackendHTTP, executors: seededExecutors()}
}

// seededExecutors are the Executors built into the binary, by name.
var seededExecutors = sync.OnceValue(func() map[string]*Executor {
	byName := map[string][]*Executor{}
	broken, err := loadLayer(seededDir("executors"), "executor", byName, parseExecutorFile)
	if err == nil && len(broken) > 0 {
		err = &Error{Problems: broken[0].problems}
	}
	if err != nil {
		// The files are compiled in, and a test loads them.
		panic(err)
	}
	return visible(byName)
})

// executorNames returns the names of the visible Executors, sorted.
func (o *loadOptions) executorNames() []string {
	return slices.Sorted(maps.Keys(o.executors))
}

// agentSpec decodes the fields of an agent_loop or groundhog spec and
// resolves it against o. It returns the backend as written (auto when left
// out; "" for groundhog), which the resolved spec no longer shows.
func (d *decoder) agentSpec(m *mapping, spec *ActivitySpec, sites *[]site, o *loadOptions) string {
	spec.Instruction = d.str(m, "instruction")
	d.addSite(sites, m, "instruction", spec.Instruction)
	spec.Tools = d.tools(m)
	key := d.allowedProgramsKey(m)
	if n := m.get(key); n != nil {
		path := child(m.path, key)
		if list, ok := d.stringList(n, path); ok {
			spec.AllowedPrograms = list
			if slices.Contains(list, "") {
				d.addAt(n, path, "must not contain an empty program")
			}
		}
	}
	spec.OnDenial = d.oneOf(m, "on_denial", defaultOnDenial, "continue")
	spec.Model = d.str(m, "model")
	spec.MaxIterations = d.intAtLeast(m, "max_iterations", 1, 0)
	spec.MaxTokens = d.intAtLeast(m, "max_tokens", 1, 0)
	spec.WallClockTimeoutSeconds = d.seconds(m, "wall_clock_timeout_seconds", 1, 0)
	spec.Fixture = d.fixture(m)
	if n := m.get("base_url"); n != nil {
		var ok bool
		if spec.BaseURL, ok = d.scalarString(n, child(m.path, "base_url")); ok {
			if reason := checkBaseURL(spec.BaseURL); reason != "" {
				d.addAt(n, child(m.path, "base_url"), reason)
			}
		}
	}
	provider, providerOK := d.provider(m)
	spec.Provider = provider
	d.envelopes(m, spec)

	if spec.Type == TypeGroundhog {
		// The fallback of 3 attempts is applied at run time, so that the
		// stored spec says whether the activity chose a budget.
		spec.AttemptBudgetDefault = d.intAtLeast(m, "attempt_budget_default", 1, 0)
		if m.get("materialize") != nil {
			spec.Materialize = d.oneOf(m, "materialize", MaterializeDirect, MaterializeOnApproval)
		}
		spec.Budget = d.budget(m, "budget")
		d.groundhogBackend(m, spec, providerOK, o)
		return ""
	}

	written := d.oneOf(m, "backend", backendAuto, BackendHTTP, BackendCLI)
	executorOK := true
	if n := m.get("executor"); n != nil {
		spec.Executor, executorOK = d.scalarString(n, child(m.path, "executor"))
	}
	switch written {
	case BackendHTTP, BackendCLI:
		spec.Backend = written
	case backendAuto:
		spec.Backend = o.backend
	default:
		spec.Backend = written // already reported
		return written
	}
	switch {
	case !providerOK || !executorOK:
	case spec.Backend == BackendHTTP:
		d.needHTTP(m, spec)
	default:
		d.attachExecutor(m, spec, o)
	}
	return written
}

// groundhogBackend resolves where a groundhog activity's attempts run:
// over HTTP (backend: http, or left out; Backend stays empty), or as CLI
// sessions (backend: cli), which needs an executor with an adapter that
// can give the agent the verbs: claude_code or codex. backend: auto is not taken:
// the runtime's default backend does not move a Groundhog task onto a CLI
// agent.
func (d *decoder) groundhogBackend(m *mapping, spec *ActivitySpec, providerOK bool, o *loadOptions) {
	backend := d.oneOf(m, "backend", BackendHTTP, BackendCLI)
	executorOK := true
	if n := m.get("executor"); n != nil {
		spec.Executor, executorOK = d.scalarString(n, child(m.path, "executor"))
		if executorOK && backend != BackendCLI {
			d.addAt(n, child(m.path, "executor"), "is read only with backend: cli")
		}
	}
	if backend != BackendCLI {
		if providerOK {
			d.needHTTP(m, spec)
		}
		return
	}
	spec.Backend = BackendCLI
	if !providerOK || !executorOK {
		return
	}
	d.attachExecutor(m, spec, o)
	if es := spec.ExecutorSpec; es != nil && es.Output != OutputClaudeCode && es.Output != OutputCodex {
		name, key := spec.Executor, "executor"
		if name == "" {
			name, key = spec.Provider, "provider"
		}
		d.add(m.line(key), m.path, fmt.Sprintf("executor %q has output %q: a groundhog activity on backend cli needs an executor with output %s or %s (the adapters that give the agent the Groundhog verbs)",
			name, cmp.Or(es.Output, "text"), OutputClaudeCode, OutputCodex))
	}
}

// allowedProgramsKey returns the key an agent spec lists the programs of
// shell.exec under: allowed_programs, or proc_allowed_programs, the
// upstream system's name for it. Both at once is a problem: two lists
// for one thing could only disagree.
func (d *decoder) allowedProgramsKey(m *mapping) string {
	if !m.has("proc_allowed_programs") {
		return "allowed_programs"
	}
	if m.has("allowed_programs") {
		d.add(m.line("proc_allowed_programs"), child(m.path, "proc_allowed_programs"),
			"is the upstream name of allowed_programs: give one of the two, not both")
	}
	return "proc_allowed_programs"
}

// defaultProvider is the provider of an agent spec that names none, as
// upstream: Claude, over HTTP or, on the cli backend, its seeded executor.
const defaultProvider = "claude"

// provider reads the provider of an agent spec: defaultProvider when it is
// absent, and never empty. The loaded spec always holds one, so a run is
// pinned to the provider it was validated with.
func (d *decoder) provider(m *mapping) (string, bool) {
	n := m.get("provider")
	if n == nil {
		return defaultProvider, true
	}
	s, ok := d.scalarString(n, child(m.path, "provider"))
	if ok && strings.TrimSpace(s) == "" {
		d.addAt(n, child(m.path, "provider"), "must not be empty (leave it out for "+defaultProvider+")")
		return "", false
	}
	return s, ok
}

// needHTTP reports a provider that the http backend cannot reach. There is
// never a fallback to another transport (DESIGN §6).
func (d *decoder) needHTTP(m *mapping, spec *ActivitySpec) {
	if slices.Contains(httpProviders, spec.Provider) {
		return
	}
	reason := fmt.Sprintf("provider %q has no HTTP transport (http providers: %s)", spec.Provider, strings.Join(httpProviders, ", "))
	if spec.Type == TypeAgentLoop {
		reason += "; use backend: cli"
	}
	d.addAt(m.get("provider"), child(m.path, "provider"), reason)
}

// attachExecutor stores a copy of the Executor a cli spec runs with: the one
// named by executor, else the one named like the provider.
func (d *decoder) attachExecutor(m *mapping, spec *ActivitySpec, o *loadOptions) {
	name, key := spec.Executor, "executor"
	if name == "" {
		name, key = spec.Provider, "provider"
	}
	e := o.executors[name]
	if e == nil {
		d.add(m.line(key), m.path, fmt.Sprintf("no executor %q for backend cli (executors: %s)", name, strings.Join(o.executorNames(), ", ")))
		return
	}
	es := e.Spec.clone()
	spec.ExecutorSpec = &es
	// The adapters grant the allowlist through the agent's own permissions:
	// a tool the agent cannot be given is refused here, not at run time.
	var grant func(tool string) error
	var agentName string
	switch es.Output {
	case OutputClaudeCode:
		agentName = "Claude Code"
		grant = func(tool string) error { _, err := ClaudeCodeGrant([]string{tool}, spec.AllowedPrograms); return err }
	case OutputCodex:
		agentName = "Codex"
		grant = func(tool string) error { _, err := CodexGrant([]string{tool}); return err }
	default:
		return
	}
	for i, tool := range spec.Tools {
		if err := grant(tool); err != nil {
			path := fmt.Sprintf("%s[%d]", child(m.path, "tools"), i)
			d.add(m.line("tools"), path, fmt.Sprintf("%v: executor %q runs %s (output %s)", err, name, agentName, es.Output))
		}
	}
}

// tools reads the tool names of an agent spec. Which names exist is the
// agent runtime's business; here they must be non-empty and listed once.
func (d *decoder) tools(m *mapping) []string {
	n := m.get("tools")
	if n == nil {
		return nil
	}
	path := child(m.path, "tools")
	list, ok := d.stringList(n, path)
	if !ok {
		return list
	}
	seen := map[string]bool{}
	for i, t := range list {
		switch {
		case strings.TrimSpace(t) == "":
			d.addAt(n.Content[i], index(path, i), "must not be empty")
		case seen[t]:
			d.addAt(n.Content[i], index(path, i), fmt.Sprintf("%q is listed twice", t))
		}
		seen[t] = true
	}
	return list
}

// fixture reads the replay fixture. A seeded: fixture must exist in the
// binary; a file is only read when the agent runs (and the environment may
// supply a fixture instead, so none is required here).
func (d *decoder) fixture(m *mapping) string {
	f := d.str(m, "fixture")
	if name, ok := strings.CutPrefix(f, SeededPrefix); ok {
		if _, err := SeededFile(name); err != nil {
			d.addAt(m.get("fixture"), child(m.path, "fixture"), fmt.Sprintf("no seeded file %q", name))
		}
	}
	return f
}

// fsProfile reads an fsProfile field (of a spec or a step) and checks the
// name against the project's profiles when o knows them.
func (d *decoder) fsProfile(m *mapping, o *loadOptions) string {
	name := d.str(m, "fsProfile")
	if name == "" || o.fsProfiles == nil || name == defaultFSProfile || slices.Contains(o.fsProfiles, name) {
		return name
	}
	known := append([]string{defaultFSProfile}, o.fsProfiles...)
	sort.Strings(known)
	known = slices.Compact(known)
	reason := fmt.Sprintf("unknown fsProfile %q (profiles: %s)", name, strings.Join(known, ", "))
	if s := suggest(name, known); s != "" {
		reason += fmt.Sprintf(" (did you mean %q?)", s)
	}
	d.addAt(m.get("fsProfile"), child(m.path, "fsProfile"), reason)
	return name
}

// checkBaseURL says why s is not a usable base URL, or "" when it is.
func checkBaseURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http:// or https:// URL", s)
	}
	if u.User != nil {
		return "must not contain credentials: name the key's variable with api_key_env in the config"
	}
	return ""
}
