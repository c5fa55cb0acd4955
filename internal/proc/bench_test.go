package proc

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/orbitrun/orbit/internal/testkit"
)

// BenchmarkStartWait runs /bin/true as Orbit runs every program (Start,
// then Wait: its own group, its mark, the sweep for what left the group)
// and bare (exec.Command's Run: fork, exec, wait), alternating, one at a
// time and 16 at once, and reports each and their ratio, the overhead of
// a program's way in and out (goal ≤ 1.2×).
func BenchmarkStartWait(b *testing.B) {
	ctx := context.Background()
	orbit := func() {
		g, err := Start(ctx, exec.Command("/bin/true"))
		if err != nil {
			b.Fatal(err)
		}
		if r := g.Wait(ctx, time.Minute, time.Second); r.ExitCode != 0 {
			b.Fatalf("exit %d: %v", r.ExitCode, r.Err)
		}
	}
	bare := func() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	testkit.BenchAgainstBare(b, "orbit", orbit, bare)
}
