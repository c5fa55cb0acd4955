package gitops

import "errors"

// ErrSimulatedCrash is what an operation stopped by CrashAt returns.
var ErrSimulatedCrash = errors.New("simulated crash")

// CrashAt makes Rewind and CommitSuccess of r stop at the named point
// ("captured", "switched", "reset", "merged", "committed"), as a crash of
// the process there would: no later step runs.
func CrashAt(r *Repo, point string) {
	r.crash = func(p string) error {
		if p == point {
			return ErrSimulatedCrash
		}
		return nil
	}
}
