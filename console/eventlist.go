package console

import (
	"net/http"
	"slices"

	"github.com/orbitrun/orbit/events"
)

// eventsCap bounds how many events the events page lists, and the runs
// whose trace it draws (orbit run trace draws any).
const eventsCap = 5000

// eventsPage lists a run's events from the log, of one type and one step
// when the query names them, with the causal tree of all of them.
func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request) {
	id := s.pathID(w, r, "run")
	if id == "" {
		return
	}
	ctx := r.Context()
	view, _, err := s.getRun(ctx, id)
	if err != nil {
		s.fail(w, "run "+id, err)
		return
	}
	all, err := s.log.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(view.ID)}, BlobRefs: true})
	if err != nil {
		s.fail(w, "events of run "+id, err)
		return
	}
	q := r.URL.Query()
	typ, step := q.Get("type"), q.Get("step")
	var types, steps []string
	var shown []events.Event
	for _, ev := range all {
		types = append(types, ev.Type)
		if ev.StepKey != "" {
			steps = append(steps, ev.StepKey)
		}
		if (typ == "" || ev.Type == typ) && (step == "" || ev.StepKey == step) && len(shown) < eventsCap {
			shown = append(shown, ev)
		}
	}
	slices.Sort(types)
	slices.Sort(steps)
	data := map[string]any{
		"Title": "Events of run " + view.ID, "Run": view, "Events": shown, "Total": len(all),
		"Types": slices.Compact(types), "Steps": slices.Compact(steps), "Type": typ, "Step": step,
	}
	if len(all) <= eventsCap {
		data["Trace"] = events.BuildTrace(all)
	}
	s.render(w, http.StatusOK, "events", data)
}
