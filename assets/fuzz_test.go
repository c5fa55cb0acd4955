package assets_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/assets"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/. Run a target with
//
//	go test -run='^$' -fuzz=FuzzParseJob -fuzztime=60s ./assets/

// checkRejection fails unless exactly one of ok and err is set, and a
// rejection is an *Error whose problems all say something.
func checkRejection(t *testing.T, ok bool, err error) {
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
	for _, p := range e.Problems {
		if p.Reason == "" {
			t.Fatalf("problem without a reason: %+v", p)
		}
	}
}

// checkSteps fails unless every step has an id and exactly one body.
func checkSteps(t *testing.T, steps []assets.Step) {
	t.Helper()
	for _, s := range steps {
		bodies := 0
		for _, set := range []bool{s.Activity != nil, s.Parallel != nil, s.FanOut != nil, s.Loop != nil} {
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
		if spec.Backend != "" || spec.ExecutorSpec != nil {
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
		checkRejection(t, j != nil, err)
		if j == nil {
			return
		}
		checkSteps(t, j.Spec.Steps)
		if _, err := json.Marshal(j); err != nil {
			t.Fatalf("accepted job does not encode: %v", err)
		}
	})
}

func FuzzParseActivity(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := assets.ParseActivity("fuzz.yaml", data)
		checkRejection(t, a != nil, err)
		if a == nil {
			return
		}
		checkAgent(t, &a.Spec)
		if _, err := json.Marshal(a); err != nil {
			t.Fatalf("accepted activity does not encode: %v", err)
		}
	})
}

func FuzzParseExecutor(f *testing.F) {
	outputs := []string{assets.OutputText, assets.OutputClaudeJSON, assets.OutputCodexJSONL}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := assets.ParseExecutor("fuzz.yaml", data)
		checkRejection(t, e != nil, err)
		if e == nil {
			return
		}
		if strings.TrimSpace(e.Spec.Command) == "" || !slices.Contains(outputs, e.Spec.Output) {
			t.Fatalf("accepted a malformed executor: %+v", e.Spec)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("accepted executor does not encode: %v", err)
		}
	})
}

func FuzzTemplate(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		tmpl, err := assets.ParseTemplate(s)
		checkRejection(t, tmpl != nil, err)
		if tmpl == nil {
			return
		}
		out, err := tmpl.Render(scope())
		if err != nil && err.Error() == "" {
			t.Fatal("empty render error")
		}
		if len(tmpl.Refs()) == 0 && (err != nil || out != s) {
			t.Fatalf("text without references rendered to %q, %v", out, err)
		}
		if _, err := assets.RenderValue(map[string]any{"k": []any{s}}, scope()); err != nil && err.Error() == "" {
			t.Fatal("empty RenderValue error")
		}
	})
}

func FuzzCondition(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		c, err := assets.ParseCondition(s)
		checkRejection(t, c != nil, err)
		if c == nil {
			return
		}
		c.Refs()
		if _, err := c.Eval(scope()); err != nil && err.Error() == "" {
			t.Fatal("empty eval error")
		}
	})
}
