package console

import (
	"net/http"

	"github.com/orbitrun/orbit/engine"
)

// routinesPage lists the project's routines: schedule, state, last and
// next fire, ticks fired and skipped (DESIGN §14).
func (s *Server) routinesPage(w http.ResponseWriter, r *http.Request) {
	var rs engine.Routines
	if err := s.request(r.Context(), engine.EndpointRoutines, nil, &rs); err != nil {
		s.fail(w, "routines", err)
		return
	}
	s.render(w, http.StatusOK, "routines", map[string]any{"Title": "Routines", "Routines": rs.Routines, "Problems": rs.Problems})
}

// pauseRun pauses the run of the path (with ?now=1 its running steps are
// stopped too, to run again on unpause), or with unpause lets it go on.
func (s *Server) pauseRun(unpause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page, _ := s.pathRun(w, r)
		if page == nil {
			return
		}
		id := page.Run.ID
		now := !unpause && r.URL.Query().Get("now") == "1"
		req := engine.RunPause{RunID: id, Unpause: unpause, Now: now, Requester: s.requester, Reason: "from the console"}
		if err := s.request(r.Context(), engine.EndpointRunPause, req, nil); err != nil {
			s.fail(w, "run "+id, err)
			return
		}
		msg := "Paused this run."
		if unpause {
			msg = "Unpaused this run."
		}
		s.cancelAnswer(w, r, id, http.StatusOK, "", cancelOutcome{Runs: []string{id}, Message: msg})
	}
}
