package chaos_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// The ship jobs run the seeded task_local_pipeline and task_pr_pipeline on
// one task of the project's own repository, whose origin is a bare
// repository beside it (and, in pr mode, the repository of a local forge
// speaking GitHub's REST wire format). The task's agent is replayed from
// testdata/ship/T-1.json: it writes greet.txt and records its summary, so
// a step run again does the same. Both repositories keep a reflog of every
// ref (core.logAllRefUpdates=always), which is how the checks see that a
// branch moved once and only once.

// shipTitle is the title of the task a ship job ships.
const shipTitle = "Greet in French"

// forgeTokenEnv names the forge's token in the engine's environment.
const forgeTokenEnv = "CHAOS_FORGE_TOKEN"

// shipRepo makes the project's root a git repository with a bare origin
// (and a forge in pr mode), and points the replay provider at the task's
// fixture.
func (r *rig) shipRepo() {
	t := r.t
	r.repo = r.p.Root
	testkit.Git(t, r.repo, "init", "--quiet", "--initial-branch=main")
	testkit.Git(t, r.repo, "config", "core.logAllRefUpdates", "always")
	r.p.WriteFile("README.md", "# greeter\n")
	r.p.WriteFile("greet.txt", "hello\n")
	testkit.Git(t, r.repo, "add", "README.md", "greet.txt")
	testkit.Git(t, r.repo, "commit", "--quiet", "-m", "initial")
	r.origin = filepath.Join(t.TempDir(), "origin.git")
	testkit.Git(t, r.repo, "init", "--quiet", "--bare", "--initial-branch=main", r.origin)
	testkit.Git(t, r.origin, "config", "core.logAllRefUpdates", "always")
	testkit.Git(t, r.repo, "remote", "add", "origin", r.origin)
	testkit.Git(t, r.repo, "push", "--quiet", "--set-upstream", "origin", "main")
	fixtures, err := filepath.Abs(filepath.Join("testdata", "ship"))
	if err != nil {
		t.Fatal(err)
	}
	r.p.Env = append(r.p.Env, "ORBIT_REPLAY_FIXTURE="+fixtures)
	if r.job.ship != "pr" {
		return
	}
	r.forge = testkit.NewForgeServer(t, r.origin, "acme", "greeter")
	cfg := filepath.Join(r.p.Root, ".orbit", "config.yaml")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, fmt.Sprintf("\nforge:\n  kind: github\n  base_url: %s\n  repository: acme/greeter\n  token_env: %s\n", r.forge.URL, forgeTokenEnv)...)
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r.p.Env = append(r.p.Env, forgeTokenEnv+"="+r.forge.Token)
}

// addShipTask adds the task to the backlog.
func (r *rig) addShipTask() error {
	out, err := r.orbitOK("task", "add", "--title", shipTitle, "--context-file", "greet.txt", "--status", "backlog")
	r.task = strings.TrimSpace(out)
	return err
}

// shipInput is the pipeline's input: the task, pushed in local mode as the
// gate asks.
func (r *rig) shipInput() string {
	in := map[string]any{"task_ids": []string{r.task}}
	if r.job.ship == "local" {
		in["auto_push"] = true
	}
	data, err := json.Marshal(in)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(data)
}

// checkShipped: the task is in review, its one commit (naming it) landed
// once — merged into main and pushed in local mode, pushed on its branch
// with one pull request in pr mode — and the root checkout is on main,
// clean, and moved only by the merge.
func checkShipped(r *rig) error {
	var problems []string
	say := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	git := func(dir string, args ...string) string {
		out, err := gitIn(dir, args...)
		if err != nil {
			say("%v", err)
		}
		return out
	}
	var task struct {
		Status string `json:"status"`
		Branch string `json:"branch"`
	}
	if out, err := r.orbitOK("--json", "task", "show", r.task); err != nil {
		say("%v", err)
	} else if err := json.Unmarshal([]byte(out), &task); err != nil {
		say("decoding the task: %v", err)
	}
	if task.Status != events.TaskReview {
		say("the task is %q, not %q", task.Status, events.TaskReview)
	}
	if b := git(r.repo, "branch", "--show-current"); b != "main" {
		say("the root checkout is on %q, not main", b)
	}
	if st := git(r.repo, "status", "--porcelain", "--untracked-files=no"); st != "" {
		say("the root checkout has changes to tracked files:\n%s", st)
	}
	subject := r.task + ": " + shipTitle
	// moves is the number of times ref moved in dir's reflog.
	moves := func(dir, ref string) int {
		return len(strings.Fields(git(dir, "reflog", "show", "--format=%H", ref)))
	}
	shipped := "main"
	if r.job.ship == "pr" {
		shipped = task.Branch
		if n := moves(r.origin, "refs/heads/main"); n != 1 {
			say("origin's main moved %d times in pr mode, want once (the initial push)", n)
		}
		if n := moves(r.repo, "refs/heads/main"); n != 1 {
			say("the root's main moved %d times in pr mode, want once (the initial commit)", n)
		}
		if n := moves(r.origin, "refs/heads/"+shipped); n != 1 {
			say("origin's %s was pushed %d times, want once", shipped, n)
		}
		pulls := r.forge.Pulls()
		head := git(r.origin, "rev-parse", "refs/heads/"+shipped)
		switch {
		case len(pulls) != 1:
			say("%d pull requests opened, want 1: %+v", len(pulls), pulls)
		case pulls[0].Head != shipped || pulls[0].HeadSHA != head:
			say("the pull request is of %s at %s, want %s at %s", pulls[0].Head, pulls[0].HeadSHA, shipped, head)
		}
	} else {
		if n := moves(r.origin, "refs/heads/main"); n != 2 {
			say("origin's main moved %d times, want twice (the initial push and the task's)", n)
		}
		if n := moves(r.repo, "refs/heads/main"); n != 2 {
			say("the root's main moved %d times, want twice (the initial commit and the merge)", n)
		}
		if root, origin := git(r.repo, "rev-parse", "main"), git(r.origin, "rev-parse", "main"); root != origin {
			say("the root's main is %s, origin's %s", root, origin)
		}
	}
	if log := git(r.origin, "log", "--format=%s", shipped); log != subject+"\ninitial" {
		say("origin's %s has commits %q, want the task's one on the initial commit", shipped, log)
	}
	if got := git(r.origin, "show", shipped+":greet.txt"); got != "hello\nbonjour" {
		say("origin's %s:greet.txt is %q", shipped, got)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}
