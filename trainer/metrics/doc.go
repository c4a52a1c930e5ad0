// Package metrics owns the artefacts a training run leaves for people to
// watch and read: a JSON-lines metrics log (one object per iteration, with
// non-finite numbers written as null), PNG line plots drawn from that log
// with gonum.org/v1/plot, a terminal progress bar with ETA
// (github.com/schollz/progressbar/v3) that stays silent when stderr is not a
// terminal, and the atomic file replacement (temporary file, fsync, rename)
// every run artefact is written with.
//
// A log is resumable: Resume keeps the lines up to a checkpoint's iteration
// and appends after them, so a resumed run's log reads like a straight one.
package metrics
