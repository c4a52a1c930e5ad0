package datafile

// Test fixtures for the external tests (package datafile_test), which check the files with
// datafiletest.
var (
	Sample   = sample
	ExpertOf = expertOf
)
