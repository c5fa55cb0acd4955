package gitops_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/orbitrun/orbit/gitops"
)

// Two days of a task: the first attempt fails and is rewound, the second
// lands as one commit.
func Example() {
	dir, err := os.MkdirTemp("", "gitops-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	env := testEnv() // an isolated git configuration and identity
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(processEnv(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Println(err, string(out))
		}
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			fmt.Println(err)
		}
	}
	write("greeting.txt", "helo\n")
	git("init", "--quiet", "--initial-branch=main")
	git("add", "greeting.txt")
	git("commit", "--quiet", "-m", "initial")

	ctx := context.Background()
	repo, err := gitops.Open(dir, gitops.WithEnv(env...))
	if err != nil {
		fmt.Println(err)
		return
	}

	// Day 1: the agent breaks the file; the verifier says no.
	s, err := repo.CreateSnapshot(ctx, "TASK-7", 1, "main")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attempt on", s.ScratchBranch)
	write("greeting.txt", "")
	if _, err := repo.Rewind(ctx, s, "criterion 1 failed: greeting.txt is empty"); err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	fmt.Printf("rewound: %q\n", data)

	// Day 2: the agent fixes the typo.
	s, err = repo.CreateSnapshot(ctx, "TASK-7", 2, "main")
	if err != nil {
		fmt.Println(err)
		return
	}
	write("greeting.txt", "hello\n")
	sha, noChange, err := repo.CommitSuccess(ctx, s, "Fix the greeting's typo",
		[]gitops.Trailer{{Key: "Orbit-Task", Value: "TASK-7"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	parent, _ := repo.FirstParent(ctx, sha)
	trailers, _ := repo.Trailers(ctx, sha)
	fmt.Println("committed on the snapshot:", parent == s.SnapshotRef, "no change:", noChange)
	fmt.Println("trailer:", trailers["Orbit-Task"])

	// Output:
	// attempt on groundhog/TASK-7/day-1
	// rewound: "helo\n"
	// committed on the snapshot: true no change: false
	// trailer: TASK-7
}
