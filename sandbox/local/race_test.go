//go:build race

package local_test

const raceEnabled = true
