package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
	"github.com/orbitrun/orbit/projector"
)

// maxLive bounds the live streams served at once: each holds a consumer of
// the event stream, which the server limits. Past it a page still reads,
// without live updates.
const maxLive = 64

// liveHeartbeat is how often an idle live stream sends a comment, so that
// proxies and the browser keep it open.
const liveHeartbeat = 15 * time.Second

// runLive streams a run's step tree as server-sent events: each "run" event
// carries the tree as HTML, rendered again after every event of the run the
// log delivers past ?after=<seq> (the position the page was rendered at).
// The stream says "end" once the run has finished.
func (s *Server) runLive(w http.ResponseWriter, r *http.Request) {
	id := s.pathID(w, r, "run")
	if id == "" {
		return
	}
	after, err := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "Bad position", fmt.Sprintf("after %q is not a log sequence", r.URL.Query().Get("after")))
		return
	}
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
	feed, err := s.log.Follow(ctx, events.FollowOptions{Filters: []string{events.RunFilter(id)}, FromSeq: after + 1, BlobRefs: true})
	if err != nil {
		s.fail(w, "run "+id, err)
		return
	}
	defer feed.Stop()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	heartbeat := time.NewTicker(liveHeartbeat)
	defer heartbeat.Stop()
	for {
		var seq uint64
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			fmt.Fprint(w, ": still here\n\n")
			flusher.Flush()
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
		var view projector.RunView
		if err := s.request(ctx, engine.EndpointRun, engine.RunQuery{RunID: id, MinSeq: seq}, &view); err != nil {
			s.logger.Debug("live run view failed", "run", id, "err", err)
			return
		}
		html, err := s.renderFragment("run", "tree", map[string]any{"Run": &view, "Seq": seq})
		if err != nil {
			s.logger.Error("console template failed", "page", "run", "err", err)
			return
		}
		writeEvent(w, "run", html)
		if events.Terminal(view.State) {
			writeEvent(w, "end", view.State)
			flusher.Flush()
			return
		}
		flusher.Flush()
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
