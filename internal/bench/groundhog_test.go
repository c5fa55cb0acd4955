package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/orbitrun/orbit/gitops"
)

// gitBenchEnv isolates the benchmark's git from the machine's configuration.
var gitBenchEnv = []string{
	"GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@orbit.invalid",
	"GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@orbit.invalid",
}

// BenchmarkGroundhogAttempt measures Groundhog's git work for one attempt
// against the naive git cycle that does the same, on a small repository
// (20 files) and a large one (20,000 files in 200 directories), each
// generated in a temp dir, with an ignored file in the work tree.
//
// Each cycle edits one tracked file and creates one. The attempt cycle is
// gitops: CreateSnapshot, then CommitSuccess ("commit") or Rewind
// ("rewind"). The raw cycle, on a copy of the repository, is the naive
// one:
//
//	commit: git checkout -b S; git add -A; git commit; git checkout main;
//	        git merge --squash S; git commit; git branch -D S  (7 processes)
//	rewind: git checkout -b S; git add -A; git commit; git checkout main
//	        (4 processes)
//
// which checks nothing: it would absorb untracked files, follow a moved
// branch, and run hooks on every commit.
func BenchmarkGroundhogAttempt(b *testing.B) {
	for _, size := range []struct {
		name  string
		files int
	}{{"small", 20}, {"large", 20000}} {
		for _, end := range []string{"commit", "rewind"} {
			b.Run(size.name+"/"+end, func(b *testing.B) {
				orbitDir := benchRepo(b, size.files)
				rawDir := benchRepo(b, size.files)
				repo, err := gitops.Open(orbitDir, gitops.WithEnv(gitBenchEnv...))
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				var orbitTime, rawTime time.Duration
				b.ResetTimer()
				for i := range b.N {
					start := time.Now()
					s, err := repo.CreateSnapshot(ctx, "bench", i+1, "main")
					if err != nil {
						b.Fatal(err)
					}
					benchEdit(b, orbitDir, i, size.files)
					if end == "commit" {
						_, _, err = repo.CommitSuccess(ctx, s, "attempt "+strconv.Itoa(i), nil)
					} else {
						_, err = repo.Rewind(ctx, s, "refuted")
					}
					if err != nil {
						b.Fatal(err)
					}
					orbitTime += time.Since(start)

					scratch := "scratch-" + strconv.Itoa(i)
					start = time.Now()
					benchGit(b, rawDir, "checkout", "-q", "-b", scratch)
					benchEdit(b, rawDir, i, size.files)
					benchGit(b, rawDir, "add", "-A")
					benchGit(b, rawDir, "commit", "-q", "-m", "attempt")
					benchGit(b, rawDir, "checkout", "-q", "main")
					if end == "commit" {
						benchGit(b, rawDir, "merge", "-q", "--squash", scratch)
						benchGit(b, rawDir, "commit", "-q", "-m", "attempt "+strconv.Itoa(i))
						benchGit(b, rawDir, "branch", "-q", "-D", scratch)
					}
					rawTime += time.Since(start)
				}
				b.StopTimer()
				b.ReportMetric(orbitTime.Seconds()*1000/float64(b.N), "attempt-ms")
				b.ReportMetric(rawTime.Seconds()*1000/float64(b.N), "raw-ms")
				b.ReportMetric(orbitTime.Seconds()/rawTime.Seconds(), "ratio(goal≤1.5)")
			})
		}
	}
}

// benchRepo makes a repository on main with files files in directories of
// 100, a .gitignore for *.log, and an ignored debug.log in the work tree.
func benchRepo(b *testing.B, files int) string {
	b.Helper()
	dir := b.TempDir()
	benchGit(b, dir, "init", "-q", "--initial-branch=main")
	// No gc in the background: it would race the temp dir's removal.
	benchGit(b, dir, "config", "gc.auto", "0")
	benchGit(b, dir, "config", "maintenance.auto", "false")
	for i := range files {
		benchWrite(b, filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i)),
			fmt.Sprintf("file %d\nof the benchmark\n", i))
	}
	benchWrite(b, filepath.Join(dir, ".gitignore"), "*.log\n")
	benchGit(b, dir, "add", "-A")
	benchGit(b, dir, "commit", "-q", "-m", "start")
	benchWrite(b, filepath.Join(dir, "debug.log"), "ignored\n")
	return dir
}

// benchEdit is an attempt's work: one tracked file edited, one created.
func benchEdit(b *testing.B, dir string, i, files int) {
	b.Helper()
	n := i % files
	benchWrite(b, filepath.Join(dir, fmt.Sprintf("d%03d", n/100), fmt.Sprintf("f%05d.txt", n)), fmt.Sprintf("edited by attempt %d\n", i))
	benchWrite(b, filepath.Join(dir, "new", fmt.Sprintf("attempt-%d.txt", i)), "new\n")
}

func benchWrite(b *testing.B, name, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}

func benchGit(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitBenchEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
