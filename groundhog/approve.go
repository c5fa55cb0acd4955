package groundhog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/internal/failpoint"
)

// Outcomes of Approve and RewindTo.
const (
	// ApproveDone: the task branch was fast-forwarded to the held ref.
	ApproveDone = "approved"
	// ApproveNothingHeld: the held ref holds nothing the task branch lacks.
	ApproveNothingHeld = "nothing_held"
	// ControlRefused: a run holds the task's workspace; nothing was done.
	ControlRefused = "refused"
	// RewindDone: the task was rewound to before a checkpoint.
	RewindDone = "rewound"
)

// ControlConfig is one approve, rewind or abandon of a task, each done
// under the task's workspace reservation as a run holds it.
type ControlConfig struct {
	Log    *events.Log
	TaskID string
	// By names who asks, for the record; Reason says why (rewind, abandon).
	By     string
	Reason string
	// Checkpoint is the checkpoint a rewind goes back to before; the
	// others ignore it.
	Checkpoint string
	// GitEnv is extra environment for git.
	GitEnv []string
	// ReserveWorkspace and ReleaseWorkspace are as in Config: the work is
	// refused while another holds the workspace. Nil reserves nothing.
	ReserveWorkspace func(ctx context.Context, path string) (heldBy string, err error)
	ReleaseWorkspace func(ctx context.Context, path string) error
	Logger           *slog.Logger
}

// Control is what Approve or RewindTo did.
type Control struct {
	TaskID  string `json:"task_id"`
	Outcome string `json:"outcome"`
	Ref     string `json:"ref,omitempty"` // the ref that moved
	FromSHA string `json:"from_sha,omitempty"`
	ToSHA   string `json:"to_sha,omitempty"`
	// HeldBy is who holds the workspace (ControlRefused).
	HeldBy  string `json:"held_by,omitempty"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message"`
}

// reserve opens the task's repository and takes its workspace, then reads
// the task's state again under the reservation (a run may have changed it
// since). holder names the run that holds the workspace when one does:
// nothing is taken then. On success the caller releases the workspace
// with r.release.
func reserve(ctx context.Context, cfg ControlConfig) (r *runner, holder string, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r = &runner{cfg: Config{Log: cfg.Log, TaskID: cfg.TaskID, GitEnv: cfg.GitEnv,
		ReserveWorkspace: cfg.ReserveWorkspace, ReleaseWorkspace: cfg.ReleaseWorkspace}, log: log, by: byOrUnknown(cfg.By)}
	st, err := loadState(ctx, cfg.Log, cfg.TaskID)
	if err != nil {
		return nil, "", err
	}
	if r.repo, err = gitops.Open(st.task.Workspace, gitops.WithEnv(cfg.GitEnv...)); err != nil {
		return nil, "", fmt.Errorf("task %s workspace: %w", cfg.TaskID, err)
	}
	if cfg.ReserveWorkspace != nil {
		if holder, err = cfg.ReserveWorkspace(ctx, r.repo.Dir); err != nil || holder != "" {
			return nil, holder, err
		}
	}
	if r.st, err = loadState(ctx, cfg.Log, cfg.TaskID); err != nil {
		return nil, "", errors.Join(err, r.release(ctx))
	}
	return r, "", nil
}

// control takes the task's workspace (reserve), then runs do on the
// task's state as it is under the reservation. do's ctx is not cancelled
// with the caller's.
func control(ctx context.Context, cfg ControlConfig, do func(ctx context.Context, r *runner, res *Control) error) (_ *Control, err error) {
	res := &Control{TaskID: cfg.TaskID}
	r, holder, err := reserve(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if holder != "" {
		res.Outcome, res.HeldBy = ControlRefused, holder
		res.Message = fmt.Sprintf("task %s: a run works in its workspace (%s); stop it (orbit run cancel <run>) or let it end, then try again", cfg.TaskID, holder)
		return res, nil
	}
	defer func() { err = errors.Join(err, r.release(ctx)) }()
	// Once begun, the work is finished: it is short, and stopping half-way
	// would leave a ref moved without its record.
	work, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := do(work, r, res); err != nil {
		return nil, err
	}
	res.Status = r.st.status
	return res, nil
}

// Approve fast-forwards a task's branch to its held ref (the checkpoint
// commits of an on_approval activity) and records groundhog.approved. It
// fails with gitops.ErrNotFastForward, changing nothing, when the task
// branch moved on its own since the held commits were made, and with
// gitops.ErrDirty when the task branch is checked out with uncommitted
// changes to tracked files. It can be run again after a crash: a task
// branch the fast-forward already moved to the held commits gets the
// approval recorded (as the next run's start records it too).
func Approve(ctx context.Context, cfg ControlConfig) (*Control, error) {
	return control(ctx, cfg, func(ctx context.Context, r *runner, res *Control) error {
		if err := approve(ctx, cfg, r, res); err != nil {
			return err
		}
		return r.landedHeld(ctx)
	})
}

// landedHeld makes a task whose commits were held done once its branch
// holds them (an approval cut short before it said so included).
func (r *runner) landedHeld(ctx context.Context) error {
	if r.st.status != events.TaskHeld {
		return nil
	}
	if _, held, err := r.unapproved(ctx); err != nil || held {
		return err
	}
	return r.setStatus(ctx, events.TaskDone, "every checkpoint is committed and approved on "+r.st.task.Branch)
}

// approve is Approve's work on the task's state under its reservation.
func approve(ctx context.Context, cfg ControlConfig, r *runner, res *Control) error {
	branch := r.st.task.Branch
	ref, err := gitops.HeldRefName(cfg.TaskID)
	if err != nil {
		return err
	}
	res.Ref = "refs/heads/" + branch
	held, ok, err := r.repo.RefSHA(ctx, ref)
	if err != nil {
		return err
	}
	head, err := r.repo.BranchSHA(ctx, branch)
	if err != nil {
		return err
	}
	res.FromSHA = head
	contained := !ok
	if ok {
		if contained, err = r.repo.IsAncestor(ctx, held, head); err != nil {
			return err
		}
	}
	if contained {
		// An approval cut short after its fast-forward left the task
		// branch at the held commits with nothing on record.
		if a, err := r.unrecordedApproval(ctx, byOrUnknown(cfg.By)); err != nil || a != nil {
			if err != nil {
				return err
			}
			res.Outcome, res.FromSHA, res.ToSHA = ApproveDone, a.FromSHA, a.ToSHA
			res.Message = fmt.Sprintf("task %s: %s already holds the held commits (%s): an approval was cut short before it was recorded; recorded it now",
				cfg.TaskID, branch, shortSHA(a.ToSHA))
			return record(ctx, r, events.GroundhogApproved, events.DecisionID(events.GroundhogApproved, cfg.TaskID, a.ToSHA), *a)
		}
		res.Outcome, res.ToSHA = ApproveNothingHeld, head
		res.Message = fmt.Sprintf("task %s: nothing is held for approval (%s is at %s)", cfg.TaskID, branch, shortSHA(head))
		return nil
	}
	if open := r.st.open(); open != nil {
		return fmt.Errorf("%w: task %s: day %d (%s) is still open; let its run end, or abandon it, then approve",
			events.ErrInvalidRequest, cfg.TaskID, open.started.Day, open.started.Checkpoint)
	}
	if err := r.repo.FastForward(ctx, branch, held); err != nil {
		if errors.Is(err, gitops.ErrNotFastForward) {
			return fmt.Errorf("task %s: %s moved since the held commits were made (they build on a commit it no longer descends from), so approving is not a fast-forward; nothing was changed: %w",
				cfg.TaskID, branch, err)
		}
		return fmt.Errorf("task %s: fast-forwarding %s to %s: %w", cfg.TaskID, branch, ref, err)
	}
	failpoint.Hit("groundhog-approve-after-fast-forward")
	res.Outcome, res.ToSHA = ApproveDone, held
	res.Message = fmt.Sprintf("task %s: %s fast-forwarded from %s to %s (%s)", cfg.TaskID, branch, shortSHA(head), shortSHA(held), ref)
	return record(ctx, r, events.GroundhogApproved, events.DecisionID(events.GroundhogApproved, cfg.TaskID, held),
		events.GroundhogApprovedData{TaskBranch: branch, HeldRef: ref, FromSHA: head, ToSHA: held, By: byOrUnknown(cfg.By),
			Signer: events.RequestSigner(ctx)})
}

func byOrUnknown(by string) string {
	if by == "" {
		return "unknown"
	}
	return by
}

// unrecordedApproval returns the approval that a crash after its
// fast-forward left unrecorded, or nil: the held ref is at one of the
// task's held checkpoint commits, the task branch already contains it,
// and no recorded approval does. Its FromSHA is the commit the first
// unapproved held checkpoint built on, which is where the fast-forward
// started.
func (r *runner) unrecordedApproval(ctx context.Context, by string) (*events.GroundhogApprovedData, error) {
	ref, err := gitops.HeldRefName(r.cfg.TaskID)
	if err != nil {
		return nil, err
	}
	held, ok, err := r.repo.RefSHA(ctx, ref)
	if err != nil || !ok {
		return nil, err
	}
	approved := func(sha string) (bool, error) {
		for _, to := range r.st.approved {
			if ok, err := r.repo.IsAncestor(ctx, sha, to); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	var first *events.GroundhogCommittedData
	found := false
	for _, c := range r.st.commits() {
		if c.HeldRef == "" || c.NoChange {
			continue
		}
		found = found || c.SHA == held
		if first == nil {
			if done, err := approved(c.SHA); err != nil {
				return nil, err
			} else if !done {
				first = c
			}
		}
	}
	if !found || first == nil {
		return nil, nil
	}
	branch := r.st.task.Branch
	head, err := r.repo.BranchSHA(ctx, branch)
	if err != nil {
		return nil, err
	}
	if landed, err := r.repo.IsAncestor(ctx, held, head); err != nil || !landed {
		return nil, err
	}
	from, err := r.repo.FirstParent(ctx, first.SHA)
	if err != nil {
		return nil, err
	}
	return &events.GroundhogApprovedData{TaskBranch: branch, HeldRef: ref, FromSHA: from, ToSHA: held, By: by}, nil
}

// recordApproval records the approval a crash cut short (see
// unrecordedApproval), as the run that starts next finds it.
func (r *runner) recordApproval(ctx context.Context) error {
	a, err := r.unrecordedApproval(ctx, "unknown (recorded by run "+r.cfg.RunID+": the task branch already held the commits)")
	if err != nil || a == nil {
		return err
	}
	r.log.Info("recording an approval cut short", "task", r.cfg.TaskID, "to", a.ToSHA)
	return record(ctx, r, events.GroundhogApproved, events.DecisionID(events.GroundhogApproved, r.cfg.TaskID, a.ToSHA), *a)
}
