package lease

import "errors"

// ErrHeld is returned when another live engine owns a run (or another live
// worker a step attempt); a HeldError says whose and until when.
var ErrHeld = errors.New("run is owned by another engine")
