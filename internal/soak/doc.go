// Package soak puts a whole engine, running as `orbit serve` in a
// process of its own, under load the way clients drive it: 200 short runs
// submitted at once together with one long fan_out of 1,000 items, then
// checks that nothing was lost or duplicated, that every run ended in
// success, that the views agree with a replay of the log, and that the
// engine's memory stayed under a bound. It runs only with ORBIT_SOAK=1
// (`make soak`).
package soak
