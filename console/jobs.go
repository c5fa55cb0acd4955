package console

import (
	"net/http"

	"github.com/orbitrun/orbit/engine"
)

// jobPage shows whether a job is paused (orbit job pause), with the button
// that pauses or unpauses it.
func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) {
	job := r.PathValue("name")
	var paused []engine.PausedJob
	if err := s.request(r.Context(), engine.EndpointJobsPaused, nil, &paused); err != nil {
		s.fail(w, "job "+job, err)
		return
	}
	var p *engine.PausedJob
	for i := range paused {
		if paused[i].Job == job {
			p = &paused[i]
		}
	}
	s.render(w, http.StatusOK, "job", map[string]any{"Title": "Job " + job, "Job": job, "Paused": p})
}

// pauseJob pauses the job of the path, or with unpause lets its runs start.
func (s *Server) pauseJob(unpause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		job := r.PathValue("name")
		req := engine.JobPauseRequest{Job: job, Unpause: unpause, Requester: s.requester, Reason: "from the console"}
		if err := s.request(r.Context(), engine.EndpointJobPause, req, nil); err != nil {
			s.fail(w, "job "+job, err)
			return
		}
		http.Redirect(w, r, "/jobs/"+job, http.StatusSeeOther)
	}
}
