package assets_test

import (
	"fmt"

	"github.com/orbitrun/orbit/assets"
)

func ExampleTemplate_Render() {
	t, err := assets.ParseTemplate("build {{ steps.build.state }}: {{ steps.build.output.files }} for {{ input.user.name }}")
	if err != nil {
		panic(err)
	}
	out, err := t.Render(&assets.Scope{
		Input: map[string]any{"user": map[string]any{"name": "ada"}},
		Steps: map[string]assets.StepResult{
			"build": {State: "success", Output: map[string]any{"files": []any{"a.go", "b.go"}}},
		},
	})
	fmt.Println(out, err)
	// Output: build success: ["a.go","b.go"] for ada <nil>
}

func ExampleRenderValue() {
	v, err := assets.RenderValue(map[string]any{
		"count":    "{{ input.count }}",     // a lone template keeps the JSON type
		"greeting": "hi {{ input.name }}",   // text around it makes a string
		"literal":  "{\"left\": \"as is\"}", // no template: never converted
	}, &assets.Scope{Input: map[string]any{"count": 3.0, "name": "ada"}})
	fmt.Printf("%#v %v\n", v.(map[string]any)["count"], err)
	fmt.Println(v.(map[string]any)["greeting"], v.(map[string]any)["literal"])
	// Output:
	// 3 <nil>
	// hi ada {"left": "as is"}
}

func ExampleCondition_Eval() {
	c, err := assets.ParseCondition("{{ steps.test.state }} == success && ({{ input.mode }} == 'fast && loose' || {{ input.force }})")
	if err != nil {
		panic(err)
	}
	ok, err := c.Eval(&assets.Scope{
		Input: map[string]any{"mode": "fast && loose", "force": false},
		Steps: map[string]assets.StepResult{"test": {State: "success"}},
	})
	fmt.Println(ok, err)
	// Output: true <nil>
}

func ExampleMergeInput() {
	defaults := map[string]any{"name": "world", "greeting": "hello"}
	fmt.Println(assets.MergeInput(defaults, nil))
	fmt.Println(assets.MergeInput(defaults, map[string]any{"name": "ada"}))
	fmt.Println(assets.MergeInput(defaults, "just this"))
	// Output:
	// map[greeting:hello name:world]
	// map[greeting:hello name:ada]
	// just this
}
