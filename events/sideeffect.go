package events

import (
	"errors"
	"strings"
)

// ParseSideEffect reads a side effect written KIND:TARGET or
// KIND:TARGET:irreversible, as orbit groundhog success --side-effect takes
// it.
func ParseSideEffect(s string) (SideEffect, error) {
	kind, target, _ := strings.Cut(s, ":")
	se := SideEffect{Kind: kind, Target: target, Reversible: true}
	if t, ok := strings.CutSuffix(target, ":irreversible"); ok {
		se.Target, se.Reversible = t, false
	}
	if se.Kind == "" || se.Target == "" {
		return SideEffect{}, errors.New("want KIND:TARGET or KIND:TARGET:irreversible")
	}
	return se, nil
}
