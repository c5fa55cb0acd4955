package assets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/assets"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/. make fuzz runs every
// target of the project in turn; run one with
//
//	go test -run='^$' -fuzz='^FuzzParseJob$' -fuzztime=60s ./assets/

// checkRejection fails unless exactly one of ok and err is set, and a
// rejection is an *Error whose problems all say something, name file (empty
// for text parsed outside a file) and come in document order.
func checkRejection(t *testing.T, file string, ok bool, err error) {
	t.Helper()
	if ok == (err != nil) {
		t.Fatalf("got a value and error %v, or neither", err)
	}
	if err == nil {
		return
	}
	if err.Error() == "" {
		t.Fatal("empty error message")
	}
	if !errors.Is(err, assets.ErrInvalid) {
		t.Fatalf("error does not match ErrInvalid: %v", err)
	}
	var e *assets.Error
	if !errors.As(err, &e) || len(e.Problems) == 0 {
		t.Fatalf("error is not an *Error with problems: %v", err)
	}
	for i, p := range e.Problems {
		if p.Reason == "" {
			t.Fatalf("problem without a reason: %+v", p)
		}
		if p.File != file || p.Line < 0 || i > 0 && p.Line < e.Problems[i-1].Line {
			t.Fatalf("problem %d is not in %q in document order: %+v", i, file, e.Problems)
		}
	}
}

// checkStored fails unless v, an accepted asset, is stored as JSON that
// decodes to a value encoding to the same JSON (IMPORTANT in types.go: the
// encoding lives in the log, and a run executes the job decoded from it).
func checkStored[T any](t *testing.T, v *T) {
	t.Helper()
	stored, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("accepted %T does not encode: %v", v, err)
	}
	var back T
	if err := json.Unmarshal(stored, &back); err != nil {
		t.Fatalf("stored %T does not decode: %v\n%s", v, err, stored)
	}
	again, err := json.Marshal(&back)
	if err != nil || !bytes.Equal(stored, again) {
		t.Fatalf("stored %T changes when decoded (%v):\n%s\n%s", v, err, stored, again)
	}
}

// checkSteps fails unless every step has an id and exactly one body.
func checkSteps(t *testing.T, steps []assets.Step) {
	t.Helper()
	for _, s := range steps {
		bodies := 0
		for _, set := range []bool{s.Activity != nil, s.Parallel != nil, s.FanOut != nil, s.Loop != nil, s.Wait != nil} {
			if set {
				bodies++
			}
		}
		if s.ID == "" || bodies != 1 || (s.FanOut != nil) != (s.FanIn != nil) {
			t.Fatalf("accepted a malformed step: %+v", s)
		}
		if s.Activity != nil {
			checkAgent(t, s.Activity)
		}
		if s.Wait != nil && (!assets.ValidSignal(s.Wait.Signal) || s.Wait.TimeoutSeconds < 0) {
			t.Fatalf("accepted a malformed wait: %+v", s.Wait)
		}
		switch {
		case s.Parallel != nil:
			checkSteps(t, s.Parallel.Branches)
		case s.FanOut != nil:
			checkSteps(t, []assets.Step{s.FanOut.Worker})
		case s.Loop != nil:
			checkSteps(t, s.Loop.Steps)
		}
	}
}

// checkAgent fails unless an accepted agent spec was resolved: an
// agent_loop runs on http or cli and has an executor exactly on cli, and
// every agent spec has a provider.
func checkAgent(t *testing.T, spec *assets.ActivitySpec) {
	t.Helper()
	switch spec.Type {
	case assets.TypeAgentLoop:
		if spec.Backend != assets.BackendHTTP && spec.Backend != assets.BackendCLI {
			t.Fatalf("accepted an unresolved backend %q", spec.Backend)
		}
		if (spec.Backend == assets.BackendCLI) != (spec.ExecutorSpec != nil) || spec.ExecutorSpec != nil && spec.ExecutorSpec.Command == "" {
			t.Fatalf("backend %s with executor spec %+v", spec.Backend, spec.ExecutorSpec)
		}
	case assets.TypeGroundhog:
		if spec.Backend == assets.BackendCLI {
			if spec.ExecutorSpec == nil || spec.ExecutorSpec.Output != assets.OutputClaudeCode && spec.ExecutorSpec.Output != assets.OutputCodex {
				t.Fatalf("a groundhog spec on cli with executor %+v", spec.ExecutorSpec)
			}
		} else if spec.Backend != "" || spec.ExecutorSpec != nil {
			t.Fatalf("a groundhog spec with backend %q, executor %+v", spec.Backend, spec.ExecutorSpec)
		}
	default:
		return
	}
	if spec.Provider == "" {
		t.Fatal("accepted an agent spec without a provider")
	}
}

func FuzzParseJob(f *testing.F) {
	cat, err := assets.OpenCatalog(f.TempDir(), assets.CatalogOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := assets.ParseJob("fuzz.yaml", data, cat.Activity)
		checkRejection(t, "fuzz.yaml", j != nil, err)
		if j == nil {
			return
		}
		if j.Name == "" || j.Source != "fuzz.yaml" || j.Layer != assets.LayerFile || len(j.Spec.Steps) == 0 {
			t.Fatalf("accepted a job without a name, source or steps: %+v", j)
		}
		checkSteps(t, j.Spec.Steps)
		checkStored(t, j)
	})
}

func FuzzParseActivity(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := assets.ParseActivity("fuzz.yaml", data)
		checkRejection(t, "fuzz.yaml", a != nil, err)
		if a == nil {
			return
		}
		if a.Name == "" || a.Source != "fuzz.yaml" || a.Layer != assets.LayerFile {
			t.Fatalf("accepted an activity without a name or source: %+v", a)
		}
		checkAgent(t, &a.Spec)
		checkStored(t, a)
	})
}

func FuzzParseExecutor(f *testing.F) {
	outputs := []string{assets.OutputText, assets.OutputClaudeJSON, assets.OutputCodexJSONL}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := assets.ParseExecutor("fuzz.yaml", data)
		checkRejection(t, "fuzz.yaml", e != nil, err)
		if e == nil {
			return
		}
		if e.Name == "" || strings.TrimSpace(e.Spec.Command) == "" || !slices.Contains(outputs, e.Spec.Output) {
			t.Fatalf("accepted a malformed executor: %+v", e)
		}
		checkStored(t, e)
	})
}

// FuzzTemplate checks that ParseTemplate accepts exactly the text whose
// {{ }} references are well formed, that its references are the ones
// written, in order, and that rendering never panics and never fails
// without a message.
func FuzzTemplate(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		tmpl, err := assets.ParseTemplate(s)
		checkRejection(t, "", tmpl != nil, err)
		if tmpl == nil {
			if !strings.Contains(s, "{{") {
				t.Fatalf("rejected text without a template: %v", err)
			}
			return
		}
		refs := tmpl.Refs()
		rest := s
		for _, r := range refs {
			i := strings.Index(rest, r.Raw)
			if i < 0 {
				t.Fatalf("reference %q is not in %q in order", r.Raw, s)
			}
			rest = rest[i+len(r.Raw):]
			// A reference parsed on its own is the same reference.
			one, err := assets.ParseTemplate(r.Raw)
			if err != nil || !reflect.DeepEqual(one.Refs(), []assets.Ref{r}) {
				t.Fatalf("reference %q parses alone to %+v, %v", r.Raw, one, err)
			}
		}
		out, err := tmpl.Render(scope())
		if err != nil && err.Error() == "" {
			t.Fatal("empty render error")
		}
		if len(refs) == 0 && err != nil {
			t.Fatalf("text without references failed to render: %v", err)
		}
		if !strings.Contains(s, "{{") && out != s {
			t.Fatalf("text without a template rendered to %q", out)
		}
		// With no scope every value is missing or null.
		if _, err := tmpl.Render(nil); err != nil && (len(refs) == 0 || !errors.Is(err, assets.ErrMissingValue)) {
			t.Fatalf("rendering %d references with no scope: %v", len(refs), err)
		}
		_, err = assets.RenderValue(map[string]any{"k": []any{s}}, scope())
		if err != nil && (err.Error() == "" || !errors.Is(err, assets.ErrMissingValue) && !errors.Is(err, assets.ErrInvalid)) {
			t.Fatalf("RenderValue error matches neither ErrMissingValue nor ErrInvalid: %q", err)
		}
	})
}

// FuzzCondition checks that ParseCondition never panics, that every
// rejection says something, that a template-free condition that loads never
// fails at run time (the loader refuses what would), and that an accepted
// condition means the same in parentheses: same references, same value or
// failure.
func FuzzCondition(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		c, err := assets.ParseCondition(s)
		checkRejection(t, "", c != nil, err)
		if c == nil {
			return
		}
		refs := c.Refs()
		for _, r := range refs {
			if !strings.Contains(s, r.Raw) {
				t.Fatalf("reference %q is not in %q", r.Raw, s)
			}
		}
		v, err := c.Eval(scope())
		if err != nil && err.Error() == "" {
			t.Fatal("empty eval error")
		}
		if len(refs) == 0 && err != nil {
			t.Fatalf("%q has no template and loads, but fails at run time: %v", s, err)
		}
		wrapped, werr := assets.ParseCondition("(" + s + ")")
		if werr != nil {
			// Only the nesting limit may refuse what was accepted bare.
			if strings.Count(s, "(") < 64 {
				t.Fatalf("(%s) is rejected: %v", s, werr)
			}
			return
		}
		if !reflect.DeepEqual(wrapped.Refs(), refs) {
			t.Fatalf("(%s) has other references: %+v, %+v", s, wrapped.Refs(), refs)
		}
		wv, werr := wrapped.Eval(scope())
		if wv != v || (werr == nil) != (err == nil) {
			t.Fatalf("(%s) evaluates to %v, %v; bare to %v, %v", s, wv, werr, v, err)
		}
	})
}
