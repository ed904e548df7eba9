//go:build race

package files

const raceEnabled = true
