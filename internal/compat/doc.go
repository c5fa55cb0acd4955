// Package compat holds the upstream compatibility corpus: example jobs,
// activities and replay fixtures in testdata/upstream/, written in the
// upstream system's style (state: enabled, no provider, conditions whose
// text holds ':' and '=', proc_allowed_programs, the envelope switches,
// failure_activity, the seeded fsProfiles). Its test loads every file as
// a project's env layer and runs each job on a real engine, checking the
// outcome the job's name promises. The package has no code of its own.
package compat
