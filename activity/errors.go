package activity

import "errors"

// ErrNoDecision is what a worker leaves a step command for redelivery
// with when its step.started is not in the log yet but its run is live
// (see Worker): the command is not run until it is.
var ErrNoDecision = errors.New("no step.started for this command")
