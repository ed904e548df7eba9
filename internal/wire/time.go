package wire

import "time"

// Time converts milliseconds since the epoch; zero is the zero time.
func Time(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Duration converts milliseconds.
func Duration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// Millis converts d to whole milliseconds.
func Millis(d time.Duration) int64 { return d.Milliseconds() }
