package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

// diffCap bounds the diff shown for one attempt.
const diffCap = 64 << 10

// attemptView is an attempt with the diff it made, read from git.
type attemptView struct {
	projector.AttemptRecord
	// Diff is the patch of the attempt's scratch capture (rewound) or
	// of its commit, "" when there is none or git could not give it
	// (DiffError says why).
	Diff      string
	DiffCut   bool
	DiffError string
}

// checkpointView is a checkpoint with its attempts' diffs.
type checkpointView struct {
	projector.CheckpointRecord
	Attempts []attemptView
}

// Tasks per page of the task list: by default, and at most (?size=).
const (
	tasksPageSize = 50
	tasksPageMax  = 200
)

// tasksPage lists the tasks in the order of their ids, a page at
// a time, each linking to its page.
func (s *Server) tasksPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, page, ok := s.paging(w, q, tasksPageSize, tasksPageMax, maxPage)
	if !ok {
		return
	}
	ctx := r.Context()
	seq, err := s.lastSeq(ctx)
	if err != nil {
		s.fail(w, "tasks", err)
		return
	}
	var tasks []projector.TaskView
	if err := s.request(ctx, engine.EndpointTasks, engine.TaskQuery{MinSeq: seq}, &tasks); err != nil {
		s.fail(w, "tasks", err)
		return
	}
	link := func(p int) string {
		v := url.Values{"page": {strconv.Itoa(p)}}
		if size != tasksPageSize {
			v.Set("size", strconv.Itoa(size))
		}
		return "/tasks?" + v.Encode()
	}
	from := min(page*size, len(tasks))
	data := map[string]any{"Title": "Tasks", "Tasks": tasks[from:min(from+size, len(tasks))], "Total": len(tasks),
		"From": from + 1, "Page": page}
	if page > 0 {
		data["Prev"] = link(page - 1)
	}
	if from+size < len(tasks) {
		data["Next"] = link(page + 1)
	}
	s.render(w, http.StatusOK, "tasks", data)
}

// taskPage shows a Groundhog task's chronicle: its checkpoints and every
// attempt with its verifier results, failure report and diff, the commits
// and the grounding chain, and the prompt-facing memory beside the audit
// record.
func (s *Server) taskPage(w http.ResponseWriter, r *http.Request) {
	id := s.pathID(w, r, "task")
	if id == "" {
		return
	}
	ctx := r.Context()
	seq, err := s.lastSeq(ctx)
	if err != nil {
		s.fail(w, "task "+id, err)
		return
	}
	q := engine.TaskQuery{TaskID: id, MinSeq: seq}
	var (
		task   projector.TaskView
		audit  projector.GroundhogRun
		memory projector.GroundhogMemory
	)
	for _, get := range []struct {
		endpoint string
		into     any
	}{{engine.EndpointTask, &task}, {engine.EndpointGroundhogAudit, &audit}, {engine.EndpointGroundhogMemory, &memory}} {
		if err := s.request(ctx, get.endpoint, q, get.into); err != nil {
			s.fail(w, "task "+id, err)
			return
		}
	}
	s.render(w, http.StatusOK, "task", map[string]any{
		"Title": "Task " + task.ID, "Task": &task, "Audit": &audit, "Memory": &memory,
		"Checkpoints": s.withDiffs(ctx, task.Workspace, audit.Checkpoints),
	})
}

// withDiffs reads from the task's workspace the diff of each attempt that
// left a commit: its scratch capture when it was rewound, its commit when
// it was committed.
func (s *Server) withDiffs(ctx context.Context, workspace string, cps []projector.CheckpointRecord) []checkpointView {
	repo, repoErr := gitops.Open(workspace)
	out := make([]checkpointView, len(cps))
	for i, cp := range cps {
		out[i].CheckpointRecord = cp
		for _, a := range cp.Attempts {
			v := attemptView{AttemptRecord: a}
			sha := ""
			switch {
			case a.Rewind != nil:
				sha = a.Rewind.ScratchSHA
			case a.Commit != nil && !a.Commit.NoChange:
				sha = a.Commit.SHA
			}
			switch {
			case sha == "":
			case repoErr != nil:
				v.DiffError = repoErr.Error()
			default:
				var err error
				if v.Diff, v.DiffCut, err = repo.CommitDiff(ctx, sha, diffCap); err != nil {
					v.DiffError = err.Error()
				}
			}
			out[i].Attempts = append(out[i].Attempts, v)
		}
	}
	return out
}
