package interpreter

import (
	"context"
	"sync"
)

// turn orders the first events of concurrent branches (a parallel step's)
// as the job lists them. Branches run at once, so without it the order of
// their step.started in the log was the scheduler's (the last branch
// first, most often), and so was the order every view lists them in.
//
// A branch takes its turn before it sends an event and passes it on once
// it has sent one, or when it finds its event already recorded, or before
// it blocks (waiting on the history or a timer), or when it ends: a
// branch waits at most for the CPU work of the one before it up to that
// point, never for that branch's steps to run. Appends on one Log are
// stored in the order they were sent, so sends in branch order are
// stored in branch order.
type turn struct {
	prev <-chan struct{} // closed when the branch before has passed
	done chan struct{}   // closed when this branch passes
	once sync.Once
}

type turnKey struct{}

// turns makes the turns of n branches, in order.
func turns(n int) []*turn {
	out := make([]*turn, n)
	prev := make(chan struct{})
	close(prev)
	for i := range out {
		out[i] = &turn{prev: prev, done: make(chan struct{})}
		prev = out[i].done
	}
	return out
}

func withTurn(ctx context.Context, t *turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// takeTurn waits until the branch of ctx may send: the branch before it
// has passed (or ctx ended). Outside a branch it returns at once.
func takeTurn(ctx context.Context) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return
	}
	select {
	case <-t.prev:
	case <-ctx.Done():
	}
}

// passTurn lets the branch after the one of ctx send.
func passTurn(ctx context.Context) {
	if t, _ := ctx.Value(turnKey{}).(*turn); t != nil {
		t.once.Do(func() { close(t.done) })
	}
}

// passedTurn reports whether the branch of ctx has passed its turn (or
// ctx is no branch's).
func passedTurn(ctx context.Context) bool {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return true
	}
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}
