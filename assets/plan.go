package assets

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"
)

// A Groundhog task plan (DESIGN §5, §6) is the YAML text of a task's plan:
// the checkpoints a groundhog activity works through one at a time, each
// with the criteria the runtime verifies when the agent claims success.
// Unlike the other assets it has no envelope; the task carries its text and
// records its digest (PlanDigest), and the text is parsed where it is used.

// Kinds of plan criteria.
const (
	// CriterionCommand runs Command with sh -c in the workspace and
	// expects ExpectExit within TimeoutSeconds.
	CriterionCommand = "command"
	// CriterionFileExists expects Path to exist in the workspace.
	CriterionFileExists = "file_exists"
	// CriterionFileContains expects the file at Path to match Pattern.
	CriterionFileContains = "file_contains"
	// CriterionSemantic is a Statement for the agent's judgement; it is
	// never verified mechanically.
	CriterionSemantic = "semantic"
	// CriterionPathsUntouched, valid only in anti_criteria, expects the
	// attempt not to have changed any file that one of Paths matches,
	// compared with the attempt's workspace snapshot.
	CriterionPathsUntouched = "paths_untouched"
)

// Plan defaults and limits.
const (
	// DefaultAttemptBudget is a checkpoint's attempt budget when neither
	// the checkpoint nor the activity (attempt_budget_default) sets one.
	DefaultAttemptBudget = 3
	// DefaultCriterionTimeoutSeconds is a command criterion's timeout when
	// it sets none; MaxCriterionTimeoutSeconds is the most it may set.
	DefaultCriterionTimeoutSeconds = 600
	MaxCriterionTimeoutSeconds     = 3600
)

// Plan is a parsed Groundhog task plan: its checkpoints in the order they
// are to be done.
//
// IMPORTANT: like the types of types.go, its JSON encoding may be stored;
// fields may be added with omitempty, never renamed or retyped.
type Plan struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
	// Budget bounds what the task may spend on its agents over all its
	// attempts; nil leaves the groundhog activity's budget, if any. A task
	// whose budget is spent stops before its next attempt; a new plan
	// version with a higher budget lets a run continue it.
	Budget *Budget `json:"budget,omitempty"`
}

// Checkpoint is one step of a plan. ParsePlan guarantees a valid, unique ID,
// a non-empty Spec, and at least one criterion, across SuccessCriteria and
// AntiCriteria, that is not semantic: a checkpoint is never accepted on the
// agent's word alone.
type Checkpoint struct {
	ID   string `json:"id"`
	Spec string `json:"spec"` // what the agent is asked to do
	// AttemptBudget is the checkpoint's own budget; 0 means not set (see
	// Budget).
	AttemptBudget int `json:"attempt_budget,omitempty"`
	// SuccessCriteria must hold for a claimed success to be accepted. The
	// list may be empty when AntiCriteria has a mechanical criterion.
	SuccessCriteria []Criterion `json:"success_criteria"`
	// AntiCriteria are verified with SuccessCriteria and describe what the
	// attempt must not do; paths_untouched is valid only here, where it
	// names files the attempt must leave unchanged. Nil when the plan lists
	// none.
	AntiCriteria []Criterion `json:"anti_criteria,omitempty"`
}

// Criterion is one check of a checkpoint; Kind says which fields it has.
// ParsePlan fills in the defaults of a command criterion: ExpectExit is
// never nil and TimeoutSeconds is never 0 for it.
type Criterion struct {
	Kind           string `json:"kind"`                      // one of the Criterion… constants
	Command        string `json:"command,omitempty"`         // command: run with sh -c in the workspace
	ExpectExit     *int   `json:"expect_exit,omitempty"`     // command: 0..255, default 0
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"` // command: 1..3600, default 600
	// Path is a clean relative path in the workspace, outside .git
	// (file_exists, file_contains).
	Path    string `json:"path,omitempty"`
	Pattern string `json:"pattern,omitempty"` // file_contains: an RE2 regexp
	// Statement is for the agent's judgement (semantic); it is never
	// verified mechanically.
	Statement string `json:"statement,omitempty"`
	// Paths are doublestar globs relative to the workspace
	// (paths_untouched), with the same rules as Path.
	Paths []string `json:"paths,omitempty"`
	// FixesBaseline says the checkpoint's purpose is to make this command
	// criterion hold where the base does not: its failure counts against
	// an attempt even when the base fails it too. Without it, a command
	// criterion that fails on the attempt's base as well holds the
	// checkpoint as baseline_red. Valid on command criteria only.
	FixesBaseline bool `json:"fixes_baseline,omitempty"`
}

// Budget returns how many attempts the checkpoint gets: its own
// attempt_budget when set, else activityDefault (the activity's
// attempt_budget_default) when it is positive, else DefaultAttemptBudget.
// The result is always ≥ 1.
func (c *Checkpoint) Budget(activityDefault int) int {
	switch {
	case c.AttemptBudget > 0:
		return c.AttemptBudget
	case activityDefault > 0:
		return activityDefault
	}
	return DefaultAttemptBudget
}

// Compiled compiles the Pattern of a file_contains criterion. It compiles
// again on every call: a Criterion holds no cache, so that it stays plain
// data to copy, encode and compare. ParsePlan has checked that the pattern
// compiles, so for a criterion of a parsed plan the error is always nil.
// Otherwise the error matches ErrInvalid: the criterion is not
// file_contains, or its pattern is not RE2.
func (c *Criterion) Compiled() (*regexp.Regexp, error) {
	if c.Kind != CriterionFileContains {
		return nil, invalid(fmt.Sprintf("a criterion of kind %q has no pattern: only file_contains has one", c.Kind))
	}
	re, err := regexp.Compile(c.Pattern)
	if err != nil {
		return nil, invalid("pattern: invalid RE2: " + regexpReason(err))
	}
	return re, nil
}

// PlanDigest returns "sha256-<hex>" of a plan's text, the digest a task
// records with each version of its plan. It is of the bytes as written, not
// of the parsed plan: a change of comment or layout is a new version.
func PlanDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256-" + hex.EncodeToString(sum[:])
}

var (
	// checkpointID is the form of a checkpoint id.
	checkpointID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

	checkpointKeys = []string{"id", "spec", "attempt_budget", "success_criteria", "anti_criteria"}
	criterionKinds = []string{CriterionCommand, CriterionFileExists, CriterionFileContains, CriterionSemantic, CriterionPathsUntouched}

	// criterionFields are the fields of each kind of criterion besides kind.
	criterionFields = map[string][]string{
		CriterionCommand:        {"command", "expect_exit", "timeout_seconds"},
		CriterionFileExists:     {"path"},
		CriterionFileContains:   {"path", "pattern"},
		CriterionSemantic:       {"statement"},
		CriterionPathsUntouched: {"paths"},
	}
	// criterionKeys are every key a criterion of some kind may have.
	criterionKeys = []string{"kind", "command", "expect_exit", "timeout_seconds", "path", "pattern", "statement", "paths", "fixes_baseline"}
	// baselineKinds are the kinds of criteria fixes_baseline applies to:
	// those the verifier runs on a base snapshot too (a file criterion's
	// file is the checkpoint's own product, which no base has).
	baselineKinds = []string{CriterionCommand}
)

// ParsePlan reads the text of a Groundhog task plan; file is used only to
// locate problems. Problems are an *Error matching ErrInvalid, all of them
// at once, in document order. The path of a problem inside a checkpoint that
// has a valid id carries that id after the index, so that the message names
// the checkpoint: checkpoints[1] (parse).success_criteria[2].pattern.
func ParsePlan(file string, data []byte) (*Plan, error) {
	d := newDecoder(file)
	var p *Plan
	if n := d.parseDocument(data, false); n != nil {
		p = d.plan(n)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// planTally says what kinds of criteria a checkpoint has, to require one
// that is not semantic.
type planTally struct {
	mechanical bool // a criterion of a known kind other than semantic
	unknown    bool // a criterion whose kind could not be read
}

// plan decodes the document of a plan. It returns nil only after recording
// a problem.
func (d *decoder) plan(n *yaml.Node) *Plan {
	if n.Kind == yaml.SequenceNode {
		d.addAt(n, "", "the plan must be a mapping with checkpoints, not a list: put the list under checkpoints:")
		return nil
	}
	top := d.mapping(n, "")
	if top == nil {
		return nil
	}
	d.checkKeys(top, []string{"checkpoints", "budget"}, func(key string) string {
		if slices.Contains(checkpointKeys, key) {
			return key + " is a field of a checkpoint: list the checkpoints under checkpoints:"
		}
		return ""
	})
	cn := top.get("checkpoints")
	switch {
	case cn == nil:
		d.add(top.line("checkpoints"), "checkpoints", "is required: list the checkpoints in the order they are to be done")
		return nil
	case cn.Kind != yaml.SequenceNode:
		d.addAt(cn, "checkpoints", "must be a list of checkpoints, not "+kindName(cn))
		return nil
	case len(cn.Content) == 0:
		d.addAt(cn, "checkpoints", "must list at least one checkpoint")
		return nil
	}
	p := &Plan{Checkpoints: make([]Checkpoint, 0, len(cn.Content)), Budget: d.budget(top, "budget")}
	firstAt := map[string]string{} // checkpoint id → path of the first checkpoint with it
	for i, c := range cn.Content {
		p.Checkpoints = append(p.Checkpoints, d.checkpoint(c, index("checkpoints", i), firstAt))
	}
	return p
}

// checkpoint decodes one checkpoint at path.
func (d *decoder) checkpoint(n *yaml.Node, path string, firstAt map[string]string) Checkpoint {
	var c Checkpoint
	m := d.mapping(n, path)
	if m == nil {
		return c
	}
	if id, ok := d.requiredStr(m, "id"); ok {
		c.ID = id
		idPath := child(path, "id")
		problem := nameProblem(id, checkpointID, assetNameForm)
		valid := problem == ""
		switch {
		case !valid:
			d.add(m.line("id"), idPath, problem)
		case firstAt[id] != "":
			d.add(m.line("id"), idPath, fmt.Sprintf("duplicate checkpoint id %q (also %s)", id, firstAt[id]))
		default:
			firstAt[id] = path
		}
		if valid {
			// Every later problem of this checkpoint names it.
			m.path = path + " (" + id + ")"
		}
	}
	d.checkKeys(m, checkpointKeys, func(key string) string {
		if slices.Contains(criterionKeys, key) {
			return key + " is a field of a criterion: put it in an item of success_criteria or anti_criteria"
		}
		return ""
	})
	c.Spec, _ = d.requiredStr(m, "spec")
	c.AttemptBudget = d.intAtLeast(m, "attempt_budget", 1, 0)

	var t planTally
	var listed bool
	c.SuccessCriteria, listed = d.criteria(m, "success_criteria", &t)
	c.AntiCriteria, _ = d.criteria(m, "anti_criteria", &t)
	if len(c.AntiCriteria) == 0 {
		c.AntiCriteria = nil // as the JSON encoding leaves it out
	}
	if listed && !t.mechanical && !t.unknown {
		d.add(m.line("success_criteria"), child(m.path, "success_criteria"),
			"needs a criterion that is checked mechanically (command, file_exists, file_contains, or paths_untouched in anti_criteria): "+
				"semantic criteria alone would accept the checkpoint on the agent's word")
	}
	return c
}

// criteria decodes the list of criteria under key (success_criteria or
// anti_criteria). success_criteria is required; listed reports whether it
// was there as a list.
func (d *decoder) criteria(m *mapping, key string, t *planTally) (list []Criterion, listed bool) {
	n := m.get(key)
	path := child(m.path, key)
	success := key == "success_criteria"
	switch {
	case n == nil && success:
		d.add(m.line(key), path, "is required: list what must hold for the checkpoint to be accepted")
		return nil, false
	case n == nil:
		return nil, false
	case n.Kind != yaml.SequenceNode:
		d.addAt(n, path, "must be a list of criteria, not "+kindName(n))
		t.unknown = true
		return nil, false
	}
	list = make([]Criterion, 0, len(n.Content))
	for i, cn := range n.Content {
		list = append(list, d.criterion(cn, index(path, i), success, t))
	}
	return list, true
}

// criterion decodes one criterion at path; success says whether it is in
// success_criteria.
func (d *decoder) criterion(n *yaml.Node, path string, success bool, t *planTally) Criterion {
	var c Criterion
	m := d.mapping(n, path)
	if m == nil {
		t.unknown = true
		return c
	}
	kpath := child(path, "kind")
	kn := m.get("kind")
	kind, ok := "", false
	if kn == nil {
		d.add(m.line("kind"), kpath, "is required (one of "+strings.Join(criterionKinds, ", ")+")")
	} else if kind, ok = d.scalarString(kn, kpath); ok && !slices.Contains(criterionKinds, kind) {
		reason := fmt.Sprintf("%q is not one of %s", kind, strings.Join(criterionKinds, ", "))
		if s := suggest(kind, criterionKinds); s != "" {
			reason += fmt.Sprintf(" (did you mean %q?)", s)
		}
		d.addAt(kn, kpath, reason)
		ok = false
	}
	if !ok {
		// Without a kind the fields cannot be judged; typos still can.
		t.unknown = true
		d.checkKeys(m, criterionKeys, nil)
		return c
	}
	c.Kind = kind
	if kind != CriterionSemantic {
		t.mechanical = true
	}
	if kind == CriterionPathsUntouched && success {
		d.addAt(kn, kpath, "paths_untouched is only valid in anti_criteria, where it means the attempt must not change the files its globs match")
	}
	allowed := append([]string{"kind"}, criterionFields[kind]...)
	if slices.Contains(baselineKinds, kind) {
		allowed = append(allowed, "fixes_baseline")
	}
	d.checkKeys(m, allowed, func(key string) string {
		if key == "fixes_baseline" {
			return fmt.Sprintf("fixes_baseline applies to %s criteria, which run on the base too, not to %s", strings.Join(baselineKinds, ", "), kind)
		}
		if slices.Contains(criterionKeys, key) {
			return fmt.Sprintf("%s is not a field of %s %s criterion", key, article(kind), kind)
		}
		return ""
	})
	if slices.Contains(baselineKinds, kind) {
		c.FixesBaseline = d.boolean(m, "fixes_baseline")
	}
	switch kind {
	case CriterionCommand:
		d.commandCriterion(m, &c)
	case CriterionFileExists:
		c.Path = d.workspacePath(m, "path")
	case CriterionFileContains:
		c.Path = d.workspacePath(m, "path")
		if c.Pattern, ok = d.requiredStr(m, "pattern"); ok {
			if _, err := regexp.Compile(c.Pattern); err != nil {
				d.addAt(m.get("pattern"), child(path, "pattern"), "invalid RE2: "+regexpReason(err))
			}
		}
	case CriterionSemantic:
		c.Statement, _ = d.requiredStr(m, "statement")
	case CriterionPathsUntouched:
		c.Paths = d.globs(m, "paths")
	}
	return c
}

// commandCriterion decodes the fields of a command criterion, with their
// defaults.
func (d *decoder) commandCriterion(m *mapping, c *Criterion) {
	c.Command, _ = d.requiredStr(m, "command")
	exit := 0
	if n := m.get("expect_exit"); n != nil {
		if v, ok := d.scalarInt(n, child(m.path, "expect_exit")); ok {
			exit = v
			if v < 0 || v > 255 {
				d.addAt(n, child(m.path, "expect_exit"), "must be between 0 and 255")
			}
		}
	}
	c.ExpectExit = &exit
	c.TimeoutSeconds = DefaultCriterionTimeoutSeconds
	if n := m.get("timeout_seconds"); n != nil {
		if v, ok := d.scalarInt(n, child(m.path, "timeout_seconds")); ok {
			c.TimeoutSeconds = v
			if v < 1 || v > MaxCriterionTimeoutSeconds {
				d.addAt(n, child(m.path, "timeout_seconds"), fmt.Sprintf("must be between 1 and %d", MaxCriterionTimeoutSeconds))
			}
		}
	}
}

// workspacePath reads a required path field that must name a file in the
// workspace.
func (d *decoder) workspacePath(m *mapping, key string) string {
	p, ok := d.requiredStr(m, key)
	if ok {
		if reason := checkWorkspacePath(p); reason != "" {
			d.addAt(m.get(key), child(m.path, key), reason)
		}
	}
	return p
}

// globs reads a required, non-empty list of globs of workspace paths.
func (d *decoder) globs(m *mapping, key string) []string {
	path := child(m.path, key)
	n := m.get(key)
	if n == nil {
		d.add(m.line(key), path, "is required: list the globs of the files the attempt must not change")
		return nil
	}
	list, ok := d.stringList(n, path)
	if ok && len(list) == 0 {
		d.addAt(n, path, "must list at least one glob")
	}
	for i, g := range list {
		reason := ""
		if g != "" && !doublestar.ValidatePattern(g) {
			reason = fmt.Sprintf("%q is not a valid glob", g)
		} else {
			reason = checkWorkspacePath(g)
		}
		if reason != "" {
			d.addAt(n.Content[i], index(path, i), reason)
		}
	}
	return list
}

// checkWorkspacePath says why p (a path or a glob) cannot name files of a
// criterion, or "" when it can: it must be relative, clean, inside the
// workspace and outside any .git directory, whose files are git's own and
// never part of an attempt's work.
func checkWorkspacePath(p string) string {
	if p == "" {
		return "must not be empty"
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Sprintf("%q must be relative to the workspace", p)
	}
	clean := path.Clean(p)
	switch {
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return fmt.Sprintf("%q must not leave the workspace", p)
	case clean == ".":
		return fmt.Sprintf("%q names the workspace itself, not a file in it", p)
	case clean != p:
		return fmt.Sprintf("%q must be a clean path (%q)", p, clean)
	}
	for _, elem := range strings.Split(p, "/") {
		if strings.EqualFold(elem, ".git") {
			return fmt.Sprintf("%q must not be inside .git/", p)
		}
	}
	return ""
}

// regexpReason is the text of a regexp compile error without Go's
// "error parsing regexp: " prefix.
func regexpReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return err.Error()
}
