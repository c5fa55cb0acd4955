package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// pageSize is how many runs the runs page lists at a time.
const pageSize = 50

// runStates are the states the runs page filters by.
var runStates = []string{events.StatePending, events.StateRunning, events.StateSuccess, events.StateFailed,
	events.StateCancelled, events.StateTimeout, events.StateBudgetExhausted}

// jobPattern is the form of a job name (assets' metadata.name), bounded.
var jobPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// maxPage bounds the page number: a page is read by asking for every run
// before it.
const maxPage = 1000

// runsPage lists runs newest first, of a job and in a state when the query
// names them, pageSize at a time.
func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	job, state := q.Get("job"), q.Get("state")
	page, err := strconv.Atoi(q.Get("page"))
	if q.Get("page") == "" {
		page, err = 0, nil
	}
	if err != nil || page < 0 || page > maxPage {
		s.errorPage(w, http.StatusBadRequest, "Bad page", fmt.Sprintf("page %s is not a number from 0 to %d", quote(q.Get("page")), maxPage))
		return
	}
	if job != "" && !jobPattern.MatchString(job) {
		s.errorPage(w, http.StatusBadRequest, "Bad job", fmt.Sprintf("job %s is not a job name", quote(job)))
		return
	}
	if state != "" && !slices.Contains(runStates, state) {
		s.errorPage(w, http.StatusBadRequest, "Bad state", fmt.Sprintf("state %s is not one of %v", quote(state), runStates))
		return
	}
	ctx := r.Context()
	last, err := s.lastSeq(ctx)
	if err != nil {
		s.fail(w, "runs", err)
		return
	}
	query := engine.RunsQuery{Job: job, Limit: (page+1)*pageSize + 1, MinSeq: last}
	if state != "" {
		query.States = []string{state}
	}
	var runs []projector.RunView
	if err := s.request(ctx, engine.EndpointRuns, query, &runs); err != nil {
		s.fail(w, "runs", err)
		return
	}
	more := len(runs) > (page+1)*pageSize
	runs = runs[min(len(runs), page*pageSize):min(len(runs), (page+1)*pageSize)]
	link := func(p int) string {
		v := url.Values{}
		if job != "" {
			v.Set("job", job)
		}
		if state != "" {
			v.Set("state", state)
		}
		v.Set("page", strconv.Itoa(p))
		return "/?" + v.Encode()
	}
	data := map[string]any{"Title": "Runs", "Runs": runs, "Job": job, "State": state, "States": runStates, "Page": page}
	if page > 0 {
		data["Prev"] = link(page - 1)
	}
	if more {
		data["Next"] = link(page + 1)
	}
	s.render(w, http.StatusOK, "runs", data)
}

// getRun reads a run and one page of its step tree (engine.StepsQuery),
// as of at least the log's end now; seq is that position.
func (s *Server) getRun(ctx context.Context, q engine.StepsQuery) (page *engine.StepsPage, seq uint64, err error) {
	if seq, err = s.lastSeq(ctx); err != nil {
		return nil, 0, err
	}
	q.MinSeq = seq
	page = &engine.StepsPage{}
	if err := s.request(ctx, engine.EndpointRunSteps, q, page); err != nil {
		return nil, 0, err
	}
	return page, seq, nil
}

// pathRun is the run the request's path names, with the top level of its
// step tree, as the runs view has it now, and the log's position it was
// read at. When it returns nil the request has been answered: 404 for an
// id that is none, or the failure.
func (s *Server) pathRun(w http.ResponseWriter, r *http.Request) (*engine.StepsPage, uint64) {
	return s.pathRunSteps(w, r, engine.StepsQuery{})
}

// pathRunSteps is pathRun for a page of the step tree.
func (s *Server) pathRunSteps(w http.ResponseWriter, r *http.Request, q engine.StepsQuery) (*engine.StepsPage, uint64) {
	id := s.pathID(w, r, "run")
	if id == "" {
		return nil, 0
	}
	q.RunID = id
	page, seq, err := s.getRun(r.Context(), q)
	if err != nil {
		s.fail(w, "run "+id, err)
		return nil, 0
	}
	return page, seq
}

// runPage shows a run's step tree (loops and fan-outs of many instances
// summarised, see stepsPage), lineage and cancel button. While the run is
// not finished the page's script follows /runs/<id>/live from seq on.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	page, seq := s.pathRun(w, r)
	if page == nil {
		return
	}
	s.render(w, http.StatusOK, "run", map[string]any{"Title": "Run " + page.Run.ID, "Run": &page.Run, "Page": page, "Seq": seq})
}

// stepsPage lists a page of the iterations or items of one loop or fan-out
// of a run (?under=<prefix>&offset=<n>): the summary row's "show" asks for
// it, and the run page's script puts its table under that row.
func (s *Server) stepsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	under := q.Get("under")
	if under == "" || len(under) > maxStepKey || strings.ContainsFunc(under, func(c rune) bool { return c < ' ' }) {
		s.errorPage(w, http.StatusBadRequest, "Bad group", fmt.Sprintf("under %s is not the prefix of a loop's or fan-out's steps", quote(under)))
		return
	}
	offset, err := strconv.Atoi(q.Get("offset"))
	if q.Get("offset") == "" {
		offset, err = 0, nil
	}
	if err != nil || offset < 0 {
		s.errorPage(w, http.StatusBadRequest, "Bad offset", fmt.Sprintf("offset %s is not a number from 0", quote(q.Get("offset"))))
		return
	}
	page, seq := s.pathRunSteps(w, r, engine.StepsQuery{Under: under, Offset: offset})
	if page == nil {
		return
	}
	if page.Instances == 0 {
		s.notFound(w, fmt.Sprintf("loop or fan-out %s in run %s", quote(under), page.Run.ID))
		return
	}
	data := map[string]any{"Title": "Run " + page.Run.ID + ": " + under, "Run": &page.Run, "Page": page, "Seq": seq,
		"From": offset + 1, "To": min(offset+page.Limit, page.Instances)}
	link := func(at int) string {
		return "/runs/" + page.Run.ID + "/steps?" + url.Values{"under": {under}, "offset": {strconv.Itoa(at)}}.Encode()
	}
	if offset > 0 {
		data["Prev"] = link(max(0, offset-page.Limit))
	}
	if offset+page.Limit < page.Instances {
		data["Next"] = link(offset + page.Limit)
		data["Last"] = link((page.Instances - 1) / page.Limit * page.Limit)
	}
	s.render(w, http.StatusOK, "steps", data)
}

// maxStepKey bounds a step key prefix in a query.
const maxStepKey = 1024

// cancelRun asks for a run to be cancelled, by the rules of orbit run
// cancel: an unknown run is 404, a finished one never changes (409). With
// ?tree=1, as orbit run cancel --tree: the run if live and every live run
// below it (409 when none is). Cross-site requests never get here
// (http.CrossOriginProtection).
//
// A form's POST is sent back to the run's page (303), or to a page that
// says why nothing was cancelled; the page's script asks for JSON instead
// (a cancelOutcome), and shows what came of it in place: a finished run's
// page has no live updates that would.
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	page, _ := s.pathRun(w, r)
	if page == nil {
		return
	}
	view := &page.Run
	ctx := r.Context()
	if tree := r.URL.Query().Get("tree") != ""; tree {
		req := engine.CancelRequest{RunID: view.ID, Tree: true, Requester: s.requester, Reason: "from the console"}
		var asked engine.Cancelled
		if err := s.request(ctx, engine.EndpointCancel, req, &asked); err != nil {
			s.fail(w, "run "+view.ID, err)
			return
		}
		if len(asked.Runs) == 0 {
			s.cancelAnswer(w, r, view.ID, http.StatusConflict, "Nothing to cancel", cancelOutcome{Runs: []string{},
				Message: fmt.Sprintf("Nothing to cancel: run %s has already finished (%s) and no run below it is live.", view.ID, view.State)})
			return
		}
		s.cancelAnswer(w, r, view.ID, http.StatusOK, "", cancelOutcome{Runs: asked.Runs, Message: treeAsked(view.ID, asked.Runs, "cancel")})
		return
	}
	if events.Terminal(view.State) {
		s.cancelAnswer(w, r, view.ID, http.StatusConflict, "Already finished", cancelOutcome{Runs: []string{},
			Message: fmt.Sprintf("Run %s has already finished (%s); a finished run never changes.", view.ID, view.State)})
		return
	}
	if err := s.request(ctx, engine.EndpointCancel, engine.CancelRequest{RunID: view.ID, Requester: s.requester, Reason: "cancelled from the console"}, nil); err != nil {
		s.fail(w, "run "+view.ID, err)
		return
	}
	s.cancelAnswer(w, r, view.ID, http.StatusOK, "", cancelOutcome{Runs: []string{view.ID}, Message: "Asked this run to cancel."})
}

// cancelOutcome is the JSON answer to a cancel the page's script posts:
// the runs asked to cancel, and what came of it in a sentence.
type cancelOutcome struct {
	Runs    []string `json:"runs"`
	Message string   `json:"message"`
}

// cancelAnswer answers a cancel of run id: JSON (o, with code) when the
// request asks for it, else the run's page (303) on success or a page
// titled title that says o.Message.
func (s *Server) cancelAnswer(w http.ResponseWriter, r *http.Request, id string, code int, title string, o cancelOutcome) {
	switch {
	case acceptsJSON(r):
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(o)
	case code == http.StatusOK:
		http.Redirect(w, r, "/runs/"+id, http.StatusSeeOther)
	default:
		s.errorPage(w, code, title, o.Message)
	}
}

// acceptsJSON reports whether r's Accept header names application/json.
func acceptsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		media, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(media), "application/json") {
			return true
		}
	}
	return false
}

// treeAsked says what a tree operation (cancel, pause, unpause) of run id
// asked of runs, which hold id itself when it was touched.
func treeAsked(id string, runs []string, verb string) string {
	below := len(runs)
	self := slices.Contains(runs, id)
	if self {
		below--
	}
	n := "1 run"
	if below != 1 {
		n = fmt.Sprintf("%d runs", below)
	}
	switch {
	case self && below == 0:
		return "Asked this run to " + verb + "."
	case self:
		return "Asked this run and " + n + " below it to " + verb + "."
	default:
		return "Asked " + n + " below this one to " + verb + "."
	}
}
