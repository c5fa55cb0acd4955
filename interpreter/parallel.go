package interpreter

import (
	"context"
	"strconv"
	"sync"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// parallel runs every branch of a parallel step at once, each in its own
// pipeline context, waits for all of them, and joins their outcomes. Branch
// instance keys are <key>/<branch id>. The output is an object of the
// successful branches' outputs by branch id; each branch's result is also
// visible to later steps under its own id.
func (x *Interpreter) parallel(ctx context.Context, sc *scope, st *assets.Step, key string, attempt int) (assets.StepResult, *events.ErrorInfo) {
	startedID, err := x.structural(ctx, sc, key, attempt, events.TypeParallel, nil)
	if err != nil {
		return failedResult(key, internal(ctx, err))
	}
	prefix := childPrefix(key, attempt)
	branches := st.Parallel.Branches
	results := make([]assets.StepResult, len(branches))
	failures := make([]*events.ErrorInfo, len(branches))
	var wg sync.WaitGroup
	// The branches' first events are sent in the order the job lists them.
	order := turns(len(branches))
	for i := range branches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bctx := withTurn(ctx, order[i])
			defer passTurn(bctx)
			br := &branches[i]
			results[i], failures[i] = x.step(bctx, sc.fork(prefix, startedID), br, prefix+br.ID)
		}()
	}
	wg.Wait()

	out := map[string]any{}
	members := make([]events.JoinMember, len(branches))
	for i := range branches {
		sc.record(branches[i].ID, results[i])
		members[i] = member(prefix+branches[i].ID, results[i], failures[i])
		if failures[i] == nil {
			out[branches[i].ID] = results[i].Output
		}
	}
	if ctx.Err() != nil {
		return failedResult(key, internal(ctx, ctx.Err()))
	}
	failed := x.joinResult(ctx, key, attempt, startedID, st.Parallel.Join, members)
	return x.finishStructural(ctx, key, attempt, startedID, assets.StepResult{State: events.StateSuccess, Output: out}, failed)
}

// childPrefix is the key prefix of the steps inside a structural step's
// attempt: <key>/ for the first, <key>@<n>/ for a retry, so that a retry
// runs its children afresh.
func childPrefix(key string, attempt int) string {
	if attempt == 1 {
		return key + "/"
	}
	return key + "@" + strconv.Itoa(attempt) + "/"
}
