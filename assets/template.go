package assets

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Template roots: the first segment of every reference.
const (
	RootInput         = "input"          // the input of the job or step; any path
	RootSteps         = "steps"          // steps.<id>.output[.path] or steps.<id>.state
	RootEnv           = "env"            // env.NAME
	RootItem          = "item"           // the current fan-out or loop item; any path
	RootIteration     = "iteration"      // the 1-based loop iteration
	RootWorkspacePath = "workspace_path" // the step's workspace directory
)

var roots = []string{RootInput, RootSteps, RootEnv, RootItem, RootIteration, RootWorkspacePath}

// segment is the form of one dotted path segment: a name, or an array index.
var segment = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_-]*|[0-9]+)$`)

// maxTokenQuote bounds how much of an unterminated template a problem quotes.
const maxTokenQuote = 40

// Ref is one {{ ... }} reference of a template.
//
// For RootSteps, Path[0] is the step id and Path[1] is "output" or "state";
// for RootEnv, Path[0] is the variable name; RootIteration and
// RootWorkspacePath have no path.
type Ref struct {
	Root string
	Path []string
	Raw  string // the reference as written, braces included: "{{ input.name }}"
}

// Template is parsed text: literal runs and {{ path }} references. A parsed
// Template is immutable and safe for concurrent use.
type Template struct {
	parts []part
}

// part is either a literal (ref nil) or a reference.
type part struct {
	lit string
	ref *Ref
}

// ParseTemplate parses s. Text outside {{ }} is literal. Inside, a Go
// string literal stands for its text, which is how braces are written:
// `{{ "{{" }}.ID}}` renders `{{.ID}}`. The error, which matches ErrInvalid,
// names the offending token: an unterminated {{, an empty {{ }}, a bad
// quoted literal, a bad path segment, an unknown root or a path its root
// does not allow.
func ParseTemplate(s string) (*Template, error) {
	t, reason := parseTemplate(s)
	if reason != "" {
		return nil, invalid(reason)
	}
	return t, nil
}

// parseTemplate returns the template, or the reason s is not one.
func parseTemplate(s string) (*Template, string) {
	t := &Template{}
	for s != "" {
		start := strings.Index(s, "{{")
		if start < 0 {
			t.parts = append(t.parts, part{lit: s})
			break
		}
		if start > 0 {
			t.parts = append(t.parts, part{lit: s[:start]})
		}
		end := strings.Index(s[start+2:], "}}")
		if end < 0 {
			return nil, fmt.Sprintf("unterminated template %q", quoteStart(s[start:]))
		}
		raw := s[start : start+2+end+2]
		inner := strings.TrimSpace(s[start+2 : start+2+end])
		s = s[start+2+end+2:]
		if strings.HasPrefix(inner, `"`) {
			lit, err := strconv.Unquote(inner)
			if err != nil {
				return nil, raw + `: expected one Go string literal, such as {{ "{{" }}`
			}
			t.parts = append(t.parts, part{lit: lit})
			continue
		}
		ref, reason := parseRef(inner, raw)
		if reason != "" {
			return nil, raw + ": " + reason
		}
		t.parts = append(t.parts, part{ref: ref})
	}
	return t, ""
}

// quoteStart returns the start of s for quoting in a problem, cut on a
// character boundary.
func quoteStart(s string) string {
	if len(s) <= maxTokenQuote {
		return s
	}
	cut := maxTokenQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// parseRef parses the inside of {{ }} (trimmed) and checks that the path is
// one its root allows.
func parseRef(inner, raw string) (*Ref, string) {
	if inner == "" {
		return nil, "empty template"
	}
	if strings.HasPrefix(inner, ".") {
		return nil, `a path starts with its root, such as input (for literal braces, write {{ "{{" }})`
	}
	segs := strings.Split(inner, ".")
	for _, s := range segs {
		if !segment.MatchString(s) {
			return nil, fmt.Sprintf("invalid path segment %q (segments are names or array indexes)", s)
		}
	}
	ref := &Ref{Root: segs[0], Path: segs[1:], Raw: raw}
	switch ref.Root {
	case RootInput, RootItem:
		return ref, ""
	case RootSteps:
		if len(ref.Path) < 2 || !(ref.Path[1] == "output" || ref.Path[1] == "state" && len(ref.Path) == 2) {
			return nil, "expected steps.<id>.output[.path] or steps.<id>.state"
		}
		if !stepID.MatchString(ref.Path[0]) {
			return nil, fmt.Sprintf("%q is not a step id", ref.Path[0])
		}
		return ref, ""
	case RootEnv:
		if len(ref.Path) != 1 || !stepID.MatchString(ref.Path[0]) {
			return nil, "expected env.NAME"
		}
		return ref, ""
	case RootIteration, RootWorkspacePath:
		if len(ref.Path) != 0 {
			return nil, fmt.Sprintf("%s has no fields", ref.Root)
		}
		return ref, ""
	}
	reason := fmt.Sprintf("unknown root %q (expected input, steps, env, item, iteration or workspace_path)", ref.Root)
	if s := suggest(ref.Root, roots); s != "" {
		reason = fmt.Sprintf("unknown root %q (did you mean %q?)", ref.Root, s)
	}
	return nil, reason
}

// Refs returns the references of the template in the order they appear. The
// slice is a copy; an empty result means the text has no template.
func (t *Template) Refs() []Ref {
	var refs []Ref
	for _, p := range t.parts {
		if p.ref != nil {
			refs = append(refs, *p.ref)
		}
	}
	return refs
}

// hasRefs reports whether the template has a reference, not only literals.
func (t *Template) hasRefs() bool {
	for _, p := range t.parts {
		if p.ref != nil {
			return true
		}
	}
	return false
}

// Render substitutes every reference with its value from sc (see Scope for
// how values become text). A reference to a value sc does not have is an
// error that matches ErrMissingValue and names the reference. A nil sc is an
// empty scope.
func (t *Template) Render(sc *Scope) (string, error) {
	if len(t.parts) == 1 && t.parts[0].ref == nil {
		return t.parts[0].lit, nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := sc.lookup(*p.ref)
		if err != nil {
			return "", err
		}
		s, err := text(v)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.ref.Raw, err)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}
