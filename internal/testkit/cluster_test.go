package testkit_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestClusterKillAndRestart checks the harness itself: an R3 stream on the
// three nodes keeps taking writes when its leader is killed, and the
// restarted node catches up. Each request is asked again while it goes
// unanswered (testkit.Retry): a publish sent while the stream elects its
// next leader is dropped by a follower, and is no reason to wait out the
// test's deadline.
func TestClusterKillAndRestart(t *testing.T) {
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ctx := testkit.Context(t)
	js, err := jetstream.New(c.Connect())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Retry(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
	}); err != nil {
		t.Fatal(err)
	}
	publish := func(subject, data string) error {
		_, err := testkit.Retry(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
			return js.Publish(ctx, subject, []byte(data), jetstream.WithMsgID(subject))
		})
		return err
	}
	if err := publish("t.1", "one"); err != nil {
		t.Fatal(err)
	}
	leader, err := c.StreamLeader(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	if err := publish("t.2", "two"); err != nil {
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
	if err := c.WaitCurrent(ctx, "T"); err != nil {
		t.Fatal(err)
	}
	s, err := testkit.Retry(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, "T") })
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().State.Msgs; got != 2 {
		t.Fatalf("stream has %d messages, want 2", got)
	}
}
