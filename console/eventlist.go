package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// eventsCap bounds the events whose causal tree the events page draws
// (orbit run trace draws any).
const eventsCap = 5000

// Events per page of the events page: by default, and at most (?size=).
const (
	eventsPageSize = 200
	eventsPageMax  = 1000
)

// eventsPage lists a run's events from the log a page at a time, of one
// type and under one step key when the query names them, with the causal
// tree of all of them and of its child runs' when they are few enough.
func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, page, ok := s.paging(w, q, eventsPageSize, eventsPageMax, maxEventPages)
	if !ok {
		return
	}
	typ, step := q.Get("type"), q.Get("step")
	if len(typ) > maxStepKey || len(step) > maxStepKey {
		s.errorPage(w, http.StatusBadRequest, "Bad filter", "the type or step to filter by is too long")
		return
	}
	run, _ := s.pathRun(w, r)
	if run == nil {
		return
	}
	view := &run.Run
	ctx := r.Context()
	all, err := s.log.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(view.ID)}, BlobRefs: true})
	if err != nil {
		s.fail(w, "events of run "+view.ID, err)
		return
	}
	var types []string
	var shown []events.Event
	for _, ev := range all {
		types = append(types, ev.Type)
		if (typ == "" || ev.Type == typ) && (step == "" || ev.StepKey == step || strings.HasPrefix(ev.StepKey, step+"/")) {
			shown = append(shown, ev)
		}
	}
	slices.Sort(types)
	pages := max(1, (len(shown)+size-1)/size)
	if page >= pages {
		s.errorPage(w, http.StatusNotFound, "No such page", fmt.Sprintf("The events shown %d at a time have pages 1 to %d.", size, pages))
		return
	}
	link := func(p int) string {
		v := url.Values{}
		for k, x := range map[string]string{"type": typ, "step": step} {
			if x != "" {
				v.Set(k, x)
			}
		}
		if size != eventsPageSize {
			v.Set("size", strconv.Itoa(size))
		}
		v.Set("page", strconv.Itoa(p))
		return "/runs/" + view.ID + "/events?" + v.Encode()
	}
	from := page * size
	data := map[string]any{
		"Title": "Events of run " + view.ID, "Run": view, "Events": shown[from:min(from+size, len(shown))],
		"Total": len(all), "Matching": len(shown), "From": from + 1, "Page": page + 1, "Pages": pages,
		"Types": slices.Compact(types), "Type": typ, "Step": step, "Size": size,
	}
	if page > 0 {
		data["First"], data["Prev"] = link(0), link(page-1)
	}
	if page+1 < pages {
		data["Next"], data["Last"] = link(page+1), link(pages-1)
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

// maxEventPages bounds the page number of the events page.
const maxEventPages = 1 << 20

// paging reads a list page's ?size= (defSize when absent, 1 to maxSize)
// and ?page= (0 when absent, to maxPages); out of range it answers 400 and
// reports false.
func (s *Server) paging(w http.ResponseWriter, q url.Values, defSize, maxSize, maxPages int) (size, page int, ok bool) {
	if size, ok = s.number(w, q, "size", defSize, 1, maxSize); !ok {
		return 0, 0, false
	}
	page, ok = s.number(w, q, "page", 0, 0, maxPages)
	return size, page, ok
}

// number reads the query's integer parameter name, def when absent; out
// of lo..hi it answers 400 and reports false.
func (s *Server) number(w http.ResponseWriter, q url.Values, name string, def, lo, hi int) (int, bool) {
	raw := q.Get(name)
	if raw == "" {
		return def, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		s.errorPage(w, http.StatusBadRequest, "Bad "+name, fmt.Sprintf("%s %s is not a number from %d to %d", name, quote(raw), lo, hi))
		return 0, false
	}
	return n, true
}

// withChildren adds to a run's events those of its child runs, and theirs,
// so that the trace shows each child under the step that started it; nil
// when there are more than eventsCap in all.
func (s *Server) withChildren(ctx context.Context, view *projector.RunView, evs []events.Event) ([]events.Event, error) {
	if len(evs) > eventsCap {
		return nil, nil
	}
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
		var cv engine.StepsPage
		if err := s.request(ctx, engine.EndpointRunSteps, engine.StepsQuery{RunID: child}, &cv); err == nil {
			queue = append(queue, cv.Run.Children...)
		} else if !errors.Is(err, events.ErrNotFound) {
			return nil, err
		}
	}
	if len(all) > eventsCap {
		return nil, nil
	}
	return all, nil
}
