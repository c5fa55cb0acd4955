// Package compat holds the upstream compatibility corpus: example jobs,
// activities and replay fixtures in testdata/upstream/, written in the
// upstream system's style (state: enabled, no provider, conditions whose
// text holds ':' and '=', proc_allowed_programs, the envelope switches,
// failure_activity, the seeded fsProfiles). Its test loads every file as
// a project's env layer and runs each job on a real engine, checking the
// outcome the job's name promises.
//
// It holds too the stored logs of testdata/protocol/: one run of each kind
// of job, as each version of the step protocol wrote it
// (scripts/record-protocol.sh). Their test folds each to the views kept
// beside it and runs the interpreter again over each run's history, which
// must find every decision where the log recorded it, so that a change of
// the protocol keeps the logs of the earlier one readable. The package has
// no code of its own.
package compat
