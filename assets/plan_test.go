package assets_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/internal/testkit"
)

// designPlan is the example plan of DESIGN §6, as written there.
const designPlan = `checkpoints:
  - id: parse
    spec: Add a parser for the config file.
    attempt_budget: 4            # omitted → activity attempt_budget_default → 3
    success_criteria:
      - {kind: command, command: "go test ./config/...", expect_exit: 0}
      - {kind: file_exists, path: config/parse.go}
      - {kind: file_contains, path: config/parse.go, pattern: "func Parse\\("}   # RE2
      - {kind: semantic, statement: "errors name the offending line"}
    anti_criteria:
      - {kind: paths_untouched, paths: ["config/*_test.go"]}
`

func exit(code int) *int { return &code }

// command is a command criterion with its defaults filled in.
func command(cmd string) assets.Criterion {
	return assets.Criterion{Kind: assets.CriterionCommand, Command: cmd, ExpectExit: exit(0), TimeoutSeconds: 600}
}

func TestParsePlanDesignExample(t *testing.T) {
	t.Parallel()
	p, err := assets.ParsePlan("plan.yaml", []byte(designPlan))
	require.NoError(t, err)
	assert.Equal(t, &assets.Plan{Checkpoints: []assets.Checkpoint{{
		ID:            "parse",
		Spec:          "Add a parser for the config file.",
		AttemptBudget: 4,
		SuccessCriteria: []assets.Criterion{
			command("go test ./config/..."),
			{Kind: assets.CriterionFileExists, Path: "config/parse.go"},
			{Kind: assets.CriterionFileContains, Path: "config/parse.go", Pattern: `func Parse\(`},
			{Kind: assets.CriterionSemantic, Statement: "errors name the offending line"},
		},
		AntiCriteria: []assets.Criterion{
			{Kind: assets.CriterionPathsUntouched, Paths: []string{"config/*_test.go"}},
		},
	}}}, p)

	re, err := p.Checkpoints[0].SuccessCriteria[2].Compiled()
	require.NoError(t, err)
	assert.True(t, re.MatchString("func Parse(data []byte) (*Config, error)"))
	assert.False(t, re.MatchString("func ParseFile(name string)"))
}

func TestParsePlanValid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		yaml string
		want []assets.Checkpoint
	}{{
		name: "command fields",
		yaml: `
checkpoints:
  - id: red
    spec: Write a failing test.
    success_criteria:
      - {kind: command, command: go test ./x/, expect_exit: 1, timeout_seconds: 3600}
      - {kind: command, command: exit 0, timeout_seconds: 1}
`,
		want: []assets.Checkpoint{{ID: "red", Spec: "Write a failing test.", SuccessCriteria: []assets.Criterion{
			{Kind: "command", Command: "go test ./x/", ExpectExit: exit(1), TimeoutSeconds: 3600},
			{Kind: "command", Command: "exit 0", ExpectExit: exit(0), TimeoutSeconds: 1},
		}}},
	}, {
		name: "fixes_baseline",
		yaml: `
checkpoints:
  - id: fix
    spec: Make the failing test pass.
    success_criteria:
      - {kind: command, command: go test ./x/, fixes_baseline: true}
      - {kind: command, command: make lint, fixes_baseline: false}
`,
		want: []assets.Checkpoint{{ID: "fix", Spec: "Make the failing test pass.", SuccessCriteria: []assets.Criterion{
			{Kind: "command", Command: "go test ./x/", ExpectExit: exit(0), TimeoutSeconds: 600, FixesBaseline: true},
			{Kind: "command", Command: "make lint", ExpectExit: exit(0), TimeoutSeconds: 600},
		}}},
	}, {
		name: "mechanical criterion only in anti_criteria",
		yaml: `
checkpoints:
  - id: tidy
    spec: Tidy the docs without touching code.
    success_criteria: []
    anti_criteria:
      - {kind: paths_untouched, paths: ["**/*.go", go.mod]}
`,
		want: []assets.Checkpoint{{ID: "tidy", Spec: "Tidy the docs without touching code.",
			SuccessCriteria: []assets.Criterion{},
			AntiCriteria:    []assets.Criterion{{Kind: "paths_untouched", Paths: []string{"**/*.go", "go.mod"}}},
		}},
	}, {
		name: "several checkpoints, empty anti_criteria, null keys",
		yaml: `
checkpoints:
  - id: a.1
    spec: first
    attempt_budget:
    success_criteria: [{kind: file_exists, path: a}]
    anti_criteria: []
  - id: B_2-x
    spec: second
    attempt_budget: 1
    success_criteria: [{kind: file_contains, path: dir/.gitignore, pattern: "^state/$"}]
`,
		want: []assets.Checkpoint{
			{ID: "a.1", Spec: "first", SuccessCriteria: []assets.Criterion{{Kind: "file_exists", Path: "a"}}},
			{ID: "B_2-x", Spec: "second", AttemptBudget: 1,
				SuccessCriteria: []assets.Criterion{{Kind: "file_contains", Path: "dir/.gitignore", Pattern: "^state/$"}}},
		},
	}, {
		name: "anchors and merge keys",
		yaml: `
checkpoints:
  - id: one
    spec: &spec Do the thing.
    success_criteria: &checks
      - &vet {kind: command, command: go vet ./...}
  - id: two
    spec: *spec
    success_criteria: *checks
    anti_criteria:
      - <<: *vet
        command: go test ./...
`,
		want: []assets.Checkpoint{
			{ID: "one", Spec: "Do the thing.", SuccessCriteria: []assets.Criterion{command("go vet ./...")}},
			{ID: "two", Spec: "Do the thing.", SuccessCriteria: []assets.Criterion{command("go vet ./...")},
				AntiCriteria: []assets.Criterion{command("go test ./...")}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := assets.ParsePlan("plan.yaml", []byte(tc.yaml))
			require.NoError(t, err)
			assert.Equal(t, &assets.Plan{Checkpoints: tc.want}, p)
		})
	}
}

func TestCheckpointBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		own, activity int
		want          int
	}{
		{name: "own budget wins", own: 4, activity: 7, want: 4},
		{name: "own budget without an activity default", own: 4, want: 4},
		{name: "activity default", activity: 7, want: 7},
		{name: "fallback", want: assets.DefaultAttemptBudget},
		{name: "negative activity default falls back", activity: -2, want: 3},
		{name: "negative own budget counts as unset", own: -1, activity: 5, want: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := assets.Checkpoint{AttemptBudget: tc.own}
			assert.Equal(t, tc.want, c.Budget(tc.activity))
		})
	}

	// And from YAML: attempt_budget left out is 0, not set.
	p, err := assets.ParsePlan("plan.yaml", []byte("checkpoints: [{id: a, spec: s, success_criteria: [{kind: file_exists, path: a}]}]"))
	require.NoError(t, err)
	assert.Equal(t, 0, p.Checkpoints[0].AttemptBudget)
	assert.Equal(t, 5, p.Checkpoints[0].Budget(5))
	assert.Equal(t, 3, p.Checkpoints[0].Budget(0))
}

func TestPlanJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text string }{
		{"design", designPlan},
		{"empty success_criteria", "checkpoints: [{id: a, spec: s, success_criteria: [], " +
			"anti_criteria: [{kind: paths_untouched, paths: ['**']}]}]"},
		{"expect_exit 0 survives omitempty", "checkpoints: [{id: a, spec: s, success_criteria: [{kind: command, command: x}]}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := assets.ParsePlan("plan.yaml", []byte(tc.text))
			require.NoError(t, err)
			data, err := json.Marshal(p)
			require.NoError(t, err)
			var back assets.Plan
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, p, &back)
		})
	}

	// The field names are a stored format.
	p, err := assets.ParsePlan("plan.yaml", []byte(designPlan))
	require.NoError(t, err)
	data, err := json.Marshal(p.Checkpoints[0].SuccessCriteria[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"command","command":"go test ./config/...","expect_exit":0,"timeout_seconds":600}`, string(data))
	data, err = json.Marshal(p.Checkpoints[0].AntiCriteria)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"kind":"paths_untouched","paths":["config/*_test.go"]}]`, string(data))
}

func TestPlanDigest(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", assets.PlanDigest(nil))
	d := assets.PlanDigest([]byte(designPlan))
	assert.Regexp(t, `^sha256-[0-9a-f]{64}$`, d)
	assert.Equal(t, d, assets.PlanDigest([]byte(designPlan)))
	// The digest is of the text: a comment makes a new version.
	assert.NotEqual(t, d, assets.PlanDigest([]byte(designPlan+"# later\n")))
}

func TestCriterionCompiled(t *testing.T) {
	t.Parallel()
	c := assets.Criterion{Kind: assets.CriterionFileContains, Path: "a", Pattern: `(?m)^func \w+`}
	re, err := c.Compiled()
	require.NoError(t, err)
	assert.Equal(t, regexp.MustCompile(`(?m)^func \w+`).String(), re.String())

	// Criteria built in code are not checked until compiled.
	for _, bad := range []assets.Criterion{
		{Kind: assets.CriterionFileContains, Path: "a", Pattern: "("},
		{Kind: assets.CriterionCommand, Command: "true", Pattern: "x"},
		{},
	} {
		re, err := bad.Compiled()
		assert.Nil(t, re)
		require.ErrorIs(t, err, assets.ErrInvalid)
		assert.NotEmpty(t, err.Error())
	}
}

// TestParsePlanPaths checks the rules for the paths and globs of criteria.
func TestParsePlanPaths(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path   string
		reason string // "" when the path is valid
	}{
		{path: "a.go"},
		{path: "config/parse.go"},
		{path: ".github/workflows/ci.yml"},
		{path: "dir/.gitignore"},
		{path: "..a/b"},
		{path: "a..b"},
		{path: "", reason: "must not be empty"},
		{path: "/abs", reason: `"/abs" must be relative to the workspace`},
		{path: "..", reason: `".." must not leave the workspace`},
		{path: "a/../../b", reason: `"a/../../b" must not leave the workspace`},
		{path: ".", reason: `"." names the workspace itself, not a file in it`},
		{path: "a/..", reason: `"a/.." names the workspace itself, not a file in it`},
		{path: "a/../b", reason: `"a/../b" must be a clean path ("b")`},
		{path: "a//b", reason: `"a//b" must be a clean path ("a/b")`},
		{path: "a/", reason: `"a/" must be a clean path ("a")`},
		{path: ".git", reason: `".git" must not be inside .git/`},
		{path: ".git/HEAD", reason: `".git/HEAD" must not be inside .git/`},
		{path: "sub/.GIT/config", reason: `"sub/.GIT/config" must not be inside .git/`},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			quoted, err := json.Marshal(tc.path)
			require.NoError(t, err)
			for _, form := range []struct{ criterion, path string }{
				{"{kind: file_exists, path: " + string(quoted) + "}", "checkpoints[0] (c).success_criteria[0].path"},
				{"{kind: file_contains, pattern: x, path: " + string(quoted) + "}", "checkpoints[0] (c).success_criteria[0].path"},
				{"{kind: paths_untouched, paths: [" + string(quoted) + "]}", "checkpoints[0] (c).anti_criteria[0].paths[0]"},
			} {
				list := "success_criteria"
				if strings.Contains(form.criterion, "paths_untouched") {
					list = "success_criteria: [{kind: command, command: x}], anti_criteria"
				}
				text := "checkpoints: [{id: c, spec: s, " + list + ": [" + form.criterion + "]}]"
				_, err := assets.ParsePlan("plan.yaml", []byte(text))
				if tc.reason == "" {
					assert.NoError(t, err, text)
					continue
				}
				var e *assets.Error
				require.ErrorAs(t, err, &e, text)
				assert.Equal(t, []assets.Problem{{File: "plan.yaml", Line: 1, Path: form.path, Reason: tc.reason}}, e.Problems, text)
			}
		})
	}
}

// TestBadPlans parses every file of testdata/bad_plans and compares the
// error message with the .golden file next to it (refreshed with -update).
func TestBadPlans(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad_plans/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			p, err := assets.ParsePlan(file, data)
			assert.Nil(t, p)
			require.ErrorIs(t, err, assets.ErrInvalid)
			got := err.Error() + "\n"
			testkit.Golden(t, strings.TrimSuffix(file, ".yaml")+".golden", []byte(got), *update)
		})
	}
}

// FuzzParsePlan checks that ParsePlan never panics, that every rejection is
// an *Error with something to say, and that an accepted plan keeps the
// promises of the types: valid unique ids, a spec, a mechanical criterion,
// patterns that compile, command defaults, and a JSON round trip.
//
//	go test -run='^$' -fuzz=FuzzParsePlan -fuzztime=60s ./assets/
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(designPlan))
	f.Add([]byte("checkpoints:\n  - id: fix\n    spec: fix it\n    success_criteria:\n      - {kind: command, command: make test, fixes_baseline: true}\n"))
	id := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := assets.ParsePlan("fuzz.yaml", data)
		checkRejection(t, "fuzz.yaml", p != nil, err)
		if p == nil {
			return
		}
		if len(p.Checkpoints) == 0 {
			t.Fatal("accepted a plan without checkpoints")
		}
		seen := map[string]bool{}
		for _, c := range p.Checkpoints {
			if !id.MatchString(c.ID) || seen[c.ID] || strings.TrimSpace(c.Spec) == "" || c.AttemptBudget < 0 || c.Budget(0) < 1 {
				t.Fatalf("accepted a malformed checkpoint: %+v", c)
			}
			seen[c.ID] = true
			mechanical := false
			for i, cr := range append(append([]assets.Criterion(nil), c.SuccessCriteria...), c.AntiCriteria...) {
				checkCriterion(t, cr, i < len(c.SuccessCriteria))
				mechanical = mechanical || cr.Kind != assets.CriterionSemantic
			}
			if !mechanical {
				t.Fatalf("accepted checkpoint %s without a mechanical criterion", c.ID)
			}
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("accepted plan does not encode: %v", err)
		}
		var back assets.Plan
		if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(p, &back) {
			t.Fatalf("JSON round trip changed the plan (%v):\n%+v\n%+v", err, p, &back)
		}
	})
}

// checkCriterion fails unless an accepted criterion has the fields of its
// kind, set as ParsePlan promises.
func checkCriterion(t *testing.T, c assets.Criterion, success bool) {
	t.Helper()
	ok := true
	switch c.Kind {
	case assets.CriterionCommand:
		ok = c.Command != "" && c.ExpectExit != nil && *c.ExpectExit >= 0 && *c.ExpectExit <= 255 &&
			c.TimeoutSeconds >= 1 && c.TimeoutSeconds <= assets.MaxCriterionTimeoutSeconds
	case assets.CriterionFileExists:
		ok = c.Path != "" && !c.FixesBaseline
	case assets.CriterionFileContains:
		_, err := c.Compiled()
		ok = c.Path != "" && c.Pattern != "" && err == nil && !c.FixesBaseline
	case assets.CriterionSemantic:
		ok = c.Statement != "" && !c.FixesBaseline
	case assets.CriterionPathsUntouched:
		ok = !success && len(c.Paths) > 0 && !c.FixesBaseline
	default:
		ok = false
	}
	if !ok {
		t.Fatalf("accepted a malformed criterion: %+v", c)
	}
}
