package testkit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestClusterKillAndRestart checks the harness itself: an R3 stream on the
// three nodes keeps taking writes when its leader is killed, and the
// restarted node catches up.
func TestClusterKillAndRestart(t *testing.T) {
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(c.Connect())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	leader, err := c.StreamLeader(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	if _, err := js.Publish(ctx, "t.2", []byte("two"), jetstream.WithRetryAttempts(100), jetstream.WithRetryWait(100*time.Millisecond)); err != nil {
		t.Fatalf("publishing after the leader's loss: %v", err)
	}
	next, err := c.StreamLeader(ctx, "T")
	if err != nil || next == leader {
		t.Fatalf("new leader %d (was %d): %v", next, leader, err)
	}
	c.Restart(leader)
	if n, err := c.StreamReplicas(ctx, "T"); err != nil || n != 3 {
		t.Fatalf("replicas %d: %v", n, err)
	}
	s, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().State.Msgs; got != 2 {
		t.Fatalf("stream has %d messages, want 2", got)
	}
}
