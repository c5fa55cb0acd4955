package events

import (
	"testing"
	"time"
)

// TestSlotPullIsAskedAgainWhenItExpires: an idle consumer's request that
// expires is asked again, so a command sent after several expiries is
// delivered at once.
func TestSlotPullIsAskedAgainWhenItExpires(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	l := openLog(t, DurabilityStrict)
	spec := ConsumerSpec{Durable: "expiring", Command: "step.>", AckWait: time.Minute, Concurrency: 1}
	spec.setDefaults()
	cons, err := l.createConsumer(ctx, StepsStream, spec.config())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Command, 1)
	s := newSlotConsumer(ctx, l, cons, spec, func(c *Command) { got <- c })
	s.expiry = 600 * time.Millisecond
	s.startPull()
	defer s.Stop()

	time.Sleep(4 * s.expiry)
	if err := l.Send(ctx, "step.shell.R.a.1", "cmd-a", map[string]string{}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		if c.ID != "cmd-a" {
			t.Fatalf("delivered %q, want cmd-a", c.ID)
		}
	case <-time.After(s.expiry):
		t.Fatal("the command sent after the requests expired was not delivered within one expiry")
	}
}
