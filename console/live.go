package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

// maxLive bounds the live streams served at once: each holds a consumer of
// the event stream, which the server limits. Past it a page still reads,
// without live updates.
const maxLive = 64

// liveHeartbeat is how often an idle live stream sends a comment, so that
// proxies and the browser keep it open.
const liveHeartbeat = 15 * time.Second

// liveEvery is the least time between two renders of a live stream: a
// busy run's events are taken together rather than each rendered.
const liveEvery = 250 * time.Millisecond

// runLive streams a run's step tree as server-sent events: each "run" event
// carries the tree as HTML (the top level, as the run page shows it),
// rendered again after the events of the run the log delivers past
// ?after=<seq> (the position the page was rendered at). The stream says
// "end" once the run has finished. A run that is not there is 404 at once,
// and a finished one is rendered once and ended, so that no stream waits
// for events that will never come.
func (s *Server) runLive(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("after")
	after, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "Bad position", fmt.Sprintf("after %s is not a log sequence", quote(raw)))
		return
	}
	first, seq := s.pathRun(w, r)
	if first == nil {
		return
	}
	id := first.Run.ID
	select {
	case s.live <- struct{}{}:
		defer func() { <-s.live }()
	default:
		s.errorPage(w, http.StatusServiceUnavailable, "Too many live pages", fmt.Sprintf("%d pages follow runs already; reload to see this run as it is now", maxLive))
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.errorPage(w, http.StatusInternalServerError, "No streaming", "this server cannot stream")
		return
	}
	ctx := r.Context()
	var feed *events.Feed
	if !events.Terminal(first.Run.State) {
		feed, err = s.log.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter(id)}, FromSeq: after + 1, BlobRefs: true})
		if err != nil {
			s.fail(w, "run "+id, err)
			return
		}
		defer feed.Stop()
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	page := first
	if seq <= after && feed != nil {
		// The page is as new as what was just read: wait for an event.
		page = nil
	}
	heartbeat := time.NewTicker(liveHeartbeat)
	defer heartbeat.Stop()
	for {
		if page != nil {
			html, err := s.renderFragment("run", "tree", map[string]any{"Run": &page.Run, "Page": page, "Seq": seq})
			if err != nil {
				s.logger.Error("console template failed", "page", "run", "err", err)
				return
			}
			writeEvent(w, "run", html)
			if events.Terminal(page.Run.State) {
				writeEvent(w, "end", page.Run.State)
				flusher.Flush()
				return
			}
			flusher.Flush()
			// Let a busy run's events gather before the next render.
			select {
			case <-ctx.Done():
				return
			case <-time.After(liveEvery):
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			fmt.Fprint(w, ": still here\n\n")
			flusher.Flush()
			page = nil
			continue
		case ev, ok := <-feed.Events():
			if !ok {
				return
			}
			seq = ev.Seq
		}
		// Take whatever else has arrived, and render once for all of it.
	drain:
		for {
			select {
			case ev, ok := <-feed.Events():
				if !ok {
					break drain
				}
				seq = ev.Seq
			default:
				break drain
			}
		}
		page = &engine.StepsPage{}
		if err := s.request(ctx, engine.EndpointRunSteps, engine.StepsQuery{RunID: id, MinSeq: seq}, page); err != nil {
			s.logger.Debug("live run view failed", "run", id, "err", err)
			return
		}
	}
}

// writeEvent writes one server-sent event; each line of data is a data:
// field, so the browser gets data back as it was.
func writeEvent(w http.ResponseWriter, name, data string) {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	data = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(data)
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	_, _ = w.Write([]byte(b.String()))
}
