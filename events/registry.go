package events

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// TypeInfo describes a registered event type.
type TypeInfo struct {
	Name      string // e.g. "step.finished"
	Aggregate string // AggregateRun or AggregateTask: the subject it is stored under
	payload   reflect.Type
}

func (t TypeInfo) newPayload() any { return reflect.New(t.payload).Interface() }

// registry holds every event type Orbit publishes. It is filled at package
// initialisation by the types_*.go files and never changes afterwards, so it is
// safe to read concurrently.
var registry = map[string]TypeInfo{}

// register records an event type and its payload struct. It panics on a
// duplicate, which can only be a programming error.
func register(name, aggregate string, payload any) {
	if _, dup := registry[name]; dup {
		panic("events: type registered twice: " + name)
	}
	registry[name] = TypeInfo{Name: name, Aggregate: aggregate, payload: reflect.TypeOf(payload)}
}

// Lookup returns the registration of an event type.
func Lookup(name string) (TypeInfo, bool) {
	t, ok := registry[name]
	return t, ok
}

// Types returns the names of all registered event types, sorted.
func Types() []string {
	return slices.Sorted(maps.Keys(registry))
}

// checkPayload verifies that payload is of the Go type registered for typ
// (a value or a pointer to one; nil means an empty payload).
func checkPayload(typ string, payload any) error {
	info, ok := registry[typ]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	if payload == nil {
		return nil
	}
	t := reflect.TypeOf(payload)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != info.payload {
		return fmt.Errorf("%w: %s wants %s, got %s", ErrPayloadType, typ, info.payload, t)
	}
	return nil
}
