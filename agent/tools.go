package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxResult is the most a tool returns to the model, truncation note
// included.
const maxResult = 64 << 10

// builtins are the tools every session may be given, by name.
var builtins = map[string]Tool{
	fsRead.spec.Name:    fsRead,
	fsWrite.spec.Name:   fsWrite,
	fsEdit.spec.Name:    fsEdit,
	fsList.spec.Name:    fsList,
	fsDelete.spec.Name:  fsDelete,
	shellExec.spec.Name: shellExec,
}

// Builtin returns the built-in tool with that name (fs.read, fs.write,
// fs.edit, fs.list, fs.delete, shell.exec). The tools are stateless and safe
// for concurrent use; all they act on comes with each call's ToolContext.
//
// The fs tools resolve paths against the workspace and refuse, with a
// *DeniedError, anything outside it, anything under .git/ or .orbit/, and
// anything the fsProfile's globs do not allow. shell.exec refuses programs
// that are not in the allowlist. Malformed input is a plain error.
func Builtin(name string) (Tool, bool) {
	t, ok := builtins[name]
	return t, ok
}

// BuiltinNames returns the names of the built-in tools, sorted.
func BuiltinNames() []string {
	names := make([]string, 0, len(builtins))
	for name := range builtins {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// toolField is one input field of a tool: how its schema shows it and how its
// input is checked.
type toolField struct {
	name     string
	typ      string // "string", "integer", or "array" (of strings)
	desc     string
	required bool
	extra    map[string]any // more JSON Schema keywords (minimum, …)
}

// builtin is a tool whose input decodes into an In.
type builtin[In any] struct {
	spec   ToolSpec
	fields []toolField
	run    func(ctx context.Context, tc *ToolContext, in *In) (string, error)
}

var _ Tool = (*builtin[pathInput])(nil)

func newBuiltin[In any](name, desc string, fields []toolField, run func(context.Context, *ToolContext, *In) (string, error)) *builtin[In] {
	return &builtin[In]{
		spec:   ToolSpec{Name: name, Description: desc, InputSchema: inputSchema(fields)},
		fields: fields,
		run:    run,
	}
}

// Spec returns the tool's description for a model. The schema is a copy:
// callers may keep or change it.
func (b *builtin[In]) Spec() ToolSpec {
	s := b.spec
	s.InputSchema = bytes.Clone(b.spec.InputSchema)
	return s
}

// Call decodes the input strictly, runs the tool, and caps its result at
// maxResult bytes.
func (b *builtin[In]) Call(ctx context.Context, tc *ToolContext, input json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if tc == nil {
		return "", errors.New("no tool context")
	}
	var in In
	if err := decodeInput(input, b.fields, &in); err != nil {
		return "", err
	}
	out, err := b.run(ctx, tc, &in)
	if err != nil {
		return "", err
	}
	return capResult(out, int64(len(out))), nil
}

// inputSchema builds the JSON Schema of a tool's input: an object of
// exactly these fields.
func inputSchema(fields []toolField) json.RawMessage {
	props := make(map[string]any, len(fields))
	required := []string{}
	for _, f := range fields {
		p := map[string]any{"type": f.typ, "description": f.desc}
		if f.typ == "array" {
			p["items"] = map[string]any{"type": "string"}
		}
		for k, v := range f.extra {
			p[k] = v
		}
		props[f.name] = p
		if f.required {
			required = append(required, f.name)
		}
	}
	schema, err := json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	})
	if err != nil {
		panic(fmt.Sprintf("tool schema: %v", err)) // static data: a bug
	}
	return schema
}

// decodeInput checks input against fields and decodes it into dst. Input
// must be a JSON object with no unknown field, every required field
// present and not null, and every field of its type; errors name the field.
// Empty input is an empty object.
func decodeInput(input json.RawMessage, fields []toolField, dst any) error {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("invalid input: not valid JSON: %v", err)
	}
	if dec.More() {
		return errors.New("invalid input: more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("invalid input: want a JSON object, got %s", inputKind(v))
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(names, k) {
			return fmt.Errorf("invalid input: unknown field %q (the fields are %s)", k, strings.Join(names, ", "))
		}
	}
	for _, f := range fields {
		val, present := obj[f.name]
		if !present || val == nil {
			if f.required {
				return fmt.Errorf("invalid input: missing required field %q", f.name)
			}
			continue
		}
		if err := checkType(f, val); err != nil {
			return err
		}
	}
	// The shape is checked: this cannot fail but on a bug.
	if err := json.Unmarshal(input, dst); err != nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	return nil
}

// checkType says whether val, decoded with UseNumber, is of f's type.
func checkType(f toolField, val any) error {
	switch f.typ {
	case "string":
		if _, ok := val.(string); ok {
			return nil
		}
		return fmt.Errorf("invalid input: field %q: want a string, got %s", f.name, inputKind(val))
	case "integer":
		if n, ok := val.(json.Number); ok {
			if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				return nil
			}
			return fmt.Errorf("invalid input: field %q: want an integer, got %s", f.name, n)
		}
		return fmt.Errorf("invalid input: field %q: want an integer, got %s", f.name, inputKind(val))
	case "array":
		arr, ok := val.([]any)
		if !ok {
			return fmt.Errorf("invalid input: field %q: want an array of strings, got %s", f.name, inputKind(val))
		}
		for i, e := range arr {
			if _, ok := e.(string); !ok {
				return fmt.Errorf("invalid input: field %q: element %d: want a string, got %s", f.name, i, inputKind(e))
			}
		}
		return nil
	}
	panic("tool field of unknown type " + f.typ) // static data: a bug
}

// inputKind names the JSON type of a value decoded with UseNumber.
func inputKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + string(v)
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// capResult returns s, the start of something total bytes long, cut to fit in
// maxResult bytes with a note of the total size when it does not all fit.
// The cut falls on a UTF-8 character boundary.
func capResult(s string, total int64) string {
	if len(s) <= maxResult && total <= int64(len(s)) {
		return s
	}
	note := fmt.Sprintf("\n… [truncated, %d bytes total]", total)
	return s[:runeCut(s, min(len(s), maxResult-len(note)))] + note
}

// runeCut returns the largest n' <= n such that s[:n'] does not end inside
// a UTF-8 encoded character.
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}
