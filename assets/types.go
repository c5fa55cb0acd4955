package assets

// The types in this file are the normalized form of the asset grammar
// (DESIGN §6). The loader turns YAML into them after validation; the engine
// carries them as JSON inside run commands and the run.requested event, so a
// run is pinned to exactly the job it was validated as, whatever happens to
// the files afterwards.
//
// IMPORTANT: the JSON encoding of these types is a stored format (it lives in
// the log). Fields may be added with omitempty; renaming or retyping a field
// needs a new schema version.

// Activity types.
const (
	TypeShell         = "shell"
	TypeDeterministic = "deterministic"
	TypeAgentLoop     = "agent_loop"
	TypeGroundhog     = "groundhog"
)

// Values of a shell activity's sandbox field.
const (
	SandboxNone  = "none"  // the default: as the engine's user, with its environment
	SandboxAgent = "agent" // in the CLI agents' sandbox, with an agent's environment
)

// Values of a groundhog activity's materialize field.
const (
	MaterializeDirect     = "direct"      // checkpoint commits land on the task branch
	MaterializeOnApproval = "on_approval" // on the held ref, until approved
)

// Kinds of asset envelopes.
const (
	KindActivity = "Activity"
	KindJob      = "Job"
	KindExecutor = "Executor"
)

// Backends an agent_loop runs on. A spec's backend: auto is resolved to one
// of them when the spec is loaded.
const (
	BackendHTTP = "http"
	BackendCLI  = "cli"
)

// Output formats of an Executor: how the CLI agent's stdout is parsed.
const (
	OutputText       = "text"        // the whole of stdout is the final message
	OutputClaudeJSON = "claude_json" // one JSON result object (claude -p --output-format json)
	OutputCodexJSONL = "codex_jsonl" // one JSON event per line (codex exec --json)
	// OutputClaudeCode is the claude_code adapter: Orbit builds Claude Code's
	// command line from the agent_loop spec (see ClaudeCodeGrant) and reads
	// its stream-json records as they come.
	OutputClaudeCode = "claude_code"
	// OutputCodex is the codex adapter: Orbit builds Codex's exec command
	// line from the agent_loop spec (see CodexGrant) and reads its JSONL
	// events as they come.
	OutputCodex = "codex"
)

// Layer says which catalog layer an asset was found in, highest priority first.
type Layer string

// Catalog layers, in the order in which names are resolved.
const (
	LayerEnv       Layer = "env"       // ORBIT_ACTIVITY_DIR / ORBIT_JOB_DIR / ORBIT_EXECUTOR_DIR
	LayerWorkspace Layer = "workspace" // <root>/.orbit/activities, jobs, executors
	LayerSeeded    Layer = "seeded"    // built into the binary
	LayerFile      Layer = "file"      // a file named on the command line
)

// Activity is a named, loaded Activity asset.
type Activity struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"` // metadata.description
	Labels      map[string]string `json:"labels,omitempty"`      // metadata.labels
	Source      string            `json:"source"`                // file path, or "seeded:<file>"
	Layer       Layer             `json:"layer"`
	Spec        ActivitySpec      `json:"spec"`
}

// ActivitySpec is what an activity does. Which fields are meaningful depends
// on Type; the loader rejects fields that do not belong to the type.
type ActivitySpec struct {
	Type string `json:"type"`

	// Shared fields.
	Description      string `json:"description,omitempty"`
	InputSchemaJSON  string `json:"input_schema_json,omitempty"`
	OutputSchemaJSON string `json:"output_schema_json,omitempty"`
	FSProfile        string `json:"fsProfile,omitempty"`

	// shell
	Program string   `json:"program,omitempty"`
	Args    []string `json:"args,omitempty"`
	// AllowedPrograms are the programs a shell activity may run (required),
	// or those an agent's shell.exec tool may run (optional; none when
	// empty), which an agent spec may also write as proc_allowed_programs,
	// the upstream system's name.
	AllowedPrograms   []string `json:"allowed_programs,omitempty"`
	TimeoutSeconds    int      `json:"timeout_seconds,omitempty"`     // default 300
	ExpectedExitCodes []int    `json:"expected_exit_codes,omitempty"` // default [0]
	// Sandbox is SandboxAgent when the program runs in the CLI agents'
	// sandbox (the code it runs is an agent's); "" (sandbox: none) runs it
	// as the engine's user, with the engine's environment.
	Sandbox string `json:"sandbox,omitempty"`

	// deterministic
	Action string         `json:"action,omitempty"`
	Config map[string]any `json:"config,omitempty"`

	// agent_loop and groundhog
	Instruction   string   `json:"instruction,omitempty"`
	Tools         []string `json:"tools,omitempty"`
	OnDenial      string   `json:"on_denial,omitempty"` // terminate (default) | continue
	Model         string   `json:"model,omitempty"`
	MaxIterations int      `json:"max_iterations,omitempty"`
	MaxTokens     int      `json:"max_tokens,omitempty"` // per-turn output limit; 0: the provider's default
	// Backend is where an agent_loop runs. A loaded spec holds http or cli:
	// auto, as written, is resolved at load (DESIGN §6), so a run is pinned
	// to the backend it was validated for. A groundhog spec holds cli when
	// its attempts run as CLI sessions, and nothing for http.
	Backend string `json:"backend,omitempty"`
	// Provider is claude when the YAML names none (the loaded spec always
	// holds one). Over http it is one of claude, openai_compat, replay;
	// over cli it names the Executor unless Executor does.
	Provider string `json:"provider,omitempty"`
	BaseURL  string `json:"base_url,omitempty"` // overrides the provider's base URL (http)
	// Executor names the Executor used on the cli backend; empty means the
	// one named like Provider.
	Executor string `json:"executor,omitempty"`
	// ExecutorSpec is a copy of the Executor's spec, filled in at load when
	// Backend is cli and nil otherwise. It cannot be written in YAML.
	ExecutorSpec            *ExecutorSpec `json:"executor_spec,omitempty"`
	WallClockTimeoutSeconds int           `json:"wall_clock_timeout_seconds,omitempty"`
	// Fixture is the replay provider's script: a file path, or
	// seeded:<name> for one built into the binary (see SeededFile).
	Fixture              string `json:"fixture,omitempty"`
	AttemptBudgetDefault int    `json:"attempt_budget_default,omitempty"` // groundhog only
	// Materialize (groundhog only) is where checkpoint commits land:
	// MaterializeDirect on the task branch, MaterializeOnApproval on the
	// held ref refs/orbit/groundhog/<task> until `orbit groundhog approve`.
	Materialize string `json:"materialize,omitempty"`
	// Budget (groundhog only) bounds what each task the activity runs may
	// spend, for a task whose plan sets no budget of its own.
	Budget *Budget `json:"budget,omitempty"`
	// RequireResponseEnvelope (agent_loop only) makes the agent's final
	// message a JSON object whose fields later steps read as
	// output.response.<field>; a final message that is not one fails the
	// step. False (the default) leaves the output as it is.
	RequireResponseEnvelope bool `json:"require_response_envelope,omitempty"`
	// RequireCompletionEnvelope, when nil or true, fails a step whose agent
	// ends without its completion record (see CompletionRequired).
	RequireCompletionEnvelope *bool `json:"require_completion_envelope,omitempty"`
}

// Executor is a named, loaded Executor asset: how to run a CLI coding agent
// for agent_loop activities on the cli backend.
type Executor struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"` // metadata.description
	Labels      map[string]string `json:"labels,omitempty"`      // metadata.labels
	Source      string            `json:"source"`                // file path, or "seeded:<file>"
	Layer       Layer             `json:"layer"`
	Spec        ExecutorSpec      `json:"spec"`
}

// ExecutorSpec says how to start a CLI agent and read its answer. It is
// copied into every agent_loop spec that resolves to it, so it is part of
// the stored format of a job.
type ExecutorSpec struct {
	// Command is the program to run, found on PATH unless it is a path.
	Command string `json:"command"`
	// Args are static: they are passed as written, never rendered.
	Args []string `json:"args,omitempty"`
	// Output is how stdout is parsed: OutputText (the default),
	// OutputClaudeJSON, OutputCodexJSONL, or the adapters OutputClaudeCode
	// and OutputCodex (which also say how the command line is built).
	Output string `json:"output"`
	// Env is added to the engine's environment of the command. Values are
	// literal.
	Env map[string]string `json:"env,omitempty"`
	// Pass names variables of the engine's environment the agent is given
	// besides the allowlist every CLI agent has (agent.AgentEnviron): a
	// provider key under a name of the project's own.
	Pass []string `json:"pass,omitempty"`
}

// Job is a named, loaded Job asset with every activity reference resolved.
type Job struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"` // metadata.description
	Labels      map[string]string `json:"labels,omitempty"`      // metadata.labels
	Source      string            `json:"source"`
	Layer       Layer             `json:"layer"`
	Spec        JobSpec           `json:"spec"`
}

// Job states. The loader also accepts active, Orbit's former word, as
// enabled; a loaded job holds one of these two.
const (
	JobEnabled  = "enabled"
	JobDisabled = "disabled"
)

// JobSpec is the body of a Job.
type JobSpec struct {
	// State is JobEnabled (the default) or JobDisabled: a disabled job is
	// listed but refuses to run. Jobs stored before enabled was the word
	// hold active, which means the same.
	State            string       `json:"state,omitempty"`
	Kind             string       `json:"kind,omitempty"` // workflow (default) | subroutine
	DefaultInput     any          `json:"default_input,omitempty"`
	MaxActiveRuns    int          `json:"max_active_runs,omitempty"` // default 1
	RecoveryActivity *ActivityRef `json:"recovery_activity,omitempty"`
	// FailureActivity is run once, best effort, when a run of the job ends
	// failed (not cancelled), with the failure as its input. It never
	// changes the run's outcome.
	FailureActivity *ActivityRef `json:"failure_activity,omitempty"`
	// Budget bounds what the run's agents may spend; nil is no bound.
	Budget *Budget `json:"budget,omitempty"`
	Steps  []Step  `json:"steps"`
}

// ActivityRef is a reference to an activity by name together with the spec it
// resolved to at load time.
type ActivityRef struct {
	Name string       `json:"name"`
	Spec ActivitySpec `json:"spec"`
}

// Step is one node of a job's step tree. Exactly one of Activity, Parallel,
// FanOut, Loop and Wait is set.
type Step struct {
	ID               string       `json:"id"`
	When             string       `json:"when,omitempty"`
	Retry            *Retry       `json:"retry,omitempty"`
	RecoveryActivity *ActivityRef `json:"recovery_activity,omitempty"`

	// Activity bodies: Target is "activity:<name>" when the step referenced a
	// catalog activity, empty for an inline spec. Activity is the resolved
	// spec either way.
	Target   string        `json:"target,omitempty"`
	Activity *ActivitySpec `json:"activity,omitempty"`

	// Settings of an activity body.
	DefaultInput   any    `json:"default_input,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
	Session        string `json:"session,omitempty"`
	FSProfile      string `json:"fsProfile,omitempty"`

	// Structural bodies.
	Parallel *Parallel `json:"parallel,omitempty"`
	FanOut   *FanOut   `json:"fan_out,omitempty"`
	FanIn    *FanIn    `json:"fan_in,omitempty"`
	Loop     *Loop     `json:"loop,omitempty"`

	// Wait holds the run until a signal arrives (a signal gate).
	Wait *Wait `json:"wait,omitempty"`
}

// Retry is a step's retry policy.
type Retry struct {
	MaxAttempts      int    `json:"max_attempts"`
	InitialBackoffMS int    `json:"initial_backoff_ms"` // default 1000
	BackoffCapMS     int    `json:"backoff_cap_ms"`     // default 60000
	BackoffStrategy  string `json:"backoff_strategy"`   // exponential (default) | linear
}

// Join says when a group of branches or workers counts as successful.
type Join struct {
	Mode string `json:"mode"`        // all (default) | any | quorum
	N    int    `json:"n,omitempty"` // quorum only
}

// Parallel runs its branches concurrently.
type Parallel struct {
	Join     Join   `json:"join"`
	Branches []Step `json:"branches"`
}

// FanOut runs Worker once per item, at most MaxWorkers at a time. Exactly
// one of Items and ItemList is set.
type FanOut struct {
	Items string `json:"items"` // a template rendered to a list
	// ItemList is items written as a YAML list: its elements keep their JSON
	// types, and its strings are templates rendered when the step starts.
	// It is omitzero, not omitempty, so that an empty list (no items)
	// survives the log's JSON round trip as a list, not as no list.
	ItemList   []any `json:"item_list,omitzero"`
	MaxWorkers int   `json:"max_workers"` // default 4
	Worker     Step  `json:"worker"`
}

// FanIn says how fan-out results are joined and collected.
type FanIn struct {
	Join    Join   `json:"join"`
	Collect string `json:"collect,omitempty"` // name the outputs are also collected under
}

// Loop runs Steps repeatedly, over its items (Items or ItemList, at most one
// of them set, as in FanOut) or up to MaxIterations.
type Loop struct {
	Items         string `json:"items,omitempty"`
	ItemList      []any  `json:"item_list,omitzero"`
	MaxIterations int    `json:"max_iterations"`
	BreakWhen     string `json:"break_when,omitempty"`
	Steps         []Step `json:"steps"`
}

// OverItems reports whether the loop runs once per item rather than up to
// MaxIterations times.
func (l *Loop) OverItems() bool { return l.Items != "" || l.ItemList != nil }
