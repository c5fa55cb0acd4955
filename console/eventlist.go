package console

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
	"github.com/orbitrun/orbit/projector"
)

// eventsCap bounds how many events the events page lists, and the runs
// whose trace it draws (orbit run trace draws any).
const eventsCap = 5000

// eventsPage lists a run's events from the log, of one type and one step
// when the query names them, with the causal tree of all of them and of
// its child runs'.
func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request) {
	view, _ := s.pathRun(w, r)
	if view == nil {
		return
	}
	ctx := r.Context()
	all, err := s.log.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(view.ID)}, BlobRefs: true})
	if err != nil {
		s.fail(w, "events of run "+view.ID, err)
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
	traced, err := s.withChildren(ctx, view, all)
	if err != nil {
		s.fail(w, "events of run "+view.ID, err)
		return
	}
	if traced != nil {
		data["Trace"] = events.BuildTrace(traced)
	}
	s.render(w, http.StatusOK, "events", data)
}

// withChildren adds to a run's events those of its child runs, and theirs,
// so that the trace shows each child under the step that started it; nil
// when there are more than eventsCap in all.
func (s *Server) withChildren(ctx context.Context, view *projector.RunView, evs []events.Event) ([]events.Event, error) {
	all := slices.Clone(evs)
	queue := slices.Clone(view.Children)
	seen := map[string]bool{view.ID: true}
	for len(queue) > 0 && len(all) <= eventsCap {
		child := queue[0]
		queue = queue[1:]
		if seen[child] {
			continue
		}
		seen[child] = true
		more, err := s.log.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(child)}, BlobRefs: true})
		if err != nil {
			return nil, err
		}
		all = append(all, more...)
		var cv projector.RunView
		if err := s.request(ctx, engine.EndpointRun, engine.RunQuery{RunID: child}, &cv); err == nil {
			queue = append(queue, cv.Children...)
		} else if !errors.Is(err, events.ErrNotFound) {
			return nil, err
		}
	}
	if len(all) > eventsCap {
		return nil, nil
	}
	return all, nil
}
