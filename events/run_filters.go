package events

import (
	"slices"
	"strings"
)

// RunFilterExcept returns subject filters that together match the events
// of one run of every type registered under AggregateRun except the types
// named in except: what a reader that never looks at those types follows,
// so that the server does not deliver them to it.
//
// Types are matched by their first token where it can be (step.>, run.>,
// …), so that a type registered later under a prefix already followed is
// matched too; a prefix some of whose types are excepted is listed type by
// type. An event of a type this Orbit does not know (written by a newer
// one) is not matched, as a feed would skip it anyway. The filters are
// sorted and do not overlap, as a consumer's filters must not.
func RunFilterExcept(runID string, except ...string) []string {
	if len(except) == 0 {
		return []string{RunFilter(runID)}
	}
	byPrefix := map[string][]string{}
	excepted := map[string]bool{}
	for _, typ := range Types() {
		if registry[typ].Aggregate != AggregateRun {
			continue
		}
		prefix, _, _ := strings.Cut(typ, ".")
		if slices.Contains(except, typ) {
			excepted[prefix] = true
			continue
		}
		byPrefix[prefix] = append(byPrefix[prefix], typ)
	}
	root := EventsRoot + "." + AggregateRun + "." + Token(runID) + "."
	var filters []string
	for prefix, types := range byPrefix {
		if !excepted[prefix] {
			filters = append(filters, root+prefix+".>")
			continue
		}
		for _, typ := range types {
			filters = append(filters, root+typ)
		}
	}
	slices.Sort(filters)
	return filters
}
