package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

// routinesPage lists the project's routines: schedule, state, last and
// next fire, ticks fired and skipped (DESIGN §14).
func (s *Server) routinesPage(w http.ResponseWriter, r *http.Request) {
	var rs engine.Routines
	if err := s.request(r.Context(), engine.EndpointRoutines, nil, &rs); err != nil {
		s.fail(w, "routines", err)
		return
	}
	s.render(w, http.StatusOK, "routines", map[string]any{"Title": "Routines", "Routines": rs.Routines, "Problems": append(rs.Problems, rs.Unrunnable...)})
}

// pauseRun pauses the run of the path (with ?now=1 its running steps are
// stopped too, to run again on unpause), or with unpause lets it go on;
// with ?tree=1 the live runs below it too, as orbit run pause --tree.
func (s *Server) pauseRun(unpause bool) http.HandlerFunc {
	verb := "pause"
	if unpause {
		verb = "unpause"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		page, _ := s.pathRun(w, r)
		if page == nil {
			return
		}
		id := page.Run.ID
		now := !unpause && r.URL.Query().Get("now") == "1"
		tree := r.URL.Query().Get("tree") != ""
		req := engine.RunPause{RunID: id, Unpause: unpause, Now: now, Tree: tree, Requester: s.requester, Reason: "from the console"}
		var done engine.Bulk
		err := s.request(r.Context(), engine.EndpointRunPause, req, &done)
		switch {
		case tree && errors.Is(err, events.ErrInvalidRequest):
			// The engine found nothing in the tree left to pause (or unpause).
			s.cancelAnswer(w, r, id, http.StatusConflict, "Nothing to "+verb, cancelOutcome{Runs: []string{},
				Message: fmt.Sprintf("Nothing to %s: neither run %s nor any live run below it is left to %s.", verb, id, verb)})
			return
		case err != nil:
			s.fail(w, "run "+id, err)
			return
		}
		s.cancelAnswer(w, r, id, http.StatusOK, "", cancelOutcome{Runs: done.Runs, Message: treeAsked(id, done.Runs, verb)})
	}
}
