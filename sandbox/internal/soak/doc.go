// Package soak holds the soak test of the client: many sandboxes run
// commands, uploads and downloads of known content for minutes while the
// local API, in a process of its own, injects random faults; the test
// counts what was lost, duplicated, run twice or corrupted, and what the
// client kept of goroutines, descriptors and heap. It runs only when
// SANDBOX_SOAK gives its duration:
//
//	SANDBOX_SOAK=2m go test ./sandbox/internal/soak -run TestSoak -v
//
// SANDBOX_SOAK_SEED repeats the random choices of an earlier run, and
// SANDBOX_SOAK_FAULTS (such as cut-clean,expire) narrows the kinds of
// faults to those named.
package soak
