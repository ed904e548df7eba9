package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestExitErrorText(t *testing.T) {
	t.Parallel()
	res := &Result{CommandID: "cmd_1", Stderr: []byte("warn\nboom: failed\n")}
	res.setExit(2, 0)
	assert.Equal(t, "command cmd_1 exited with code 2: boom: failed", (&ExitError{Result: res}).Error())
	assert.True(t, (&Result{exited: true}).Success())
}

// The API does not say why a command was killed: a run reports TimedOut
// when its command died of SIGKILL having run at least its Timeout, as the
// sandbox measures it (whole milliseconds).
func TestTimedOut(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		code     int
		duration time.Duration
		timeout  time.Duration
		want     bool
	}{
		{"killed at the timeout", 137, 1500 * time.Millisecond, 1500 * time.Millisecond, true},
		{"killed after the timeout", 137, 2 * time.Second, 1500 * time.Millisecond, true},
		{"sub-millisecond timeout, whole milliseconds reported", 137, 1500 * time.Millisecond, 1500*time.Millisecond + 700*time.Microsecond, true},
		{"killed before the timeout, by someone else", 137, time.Second, 1500 * time.Millisecond, false},
		{"exited by itself after the timeout", 1, 2 * time.Second, 1500 * time.Millisecond, false},
		{"no timeout", 137, time.Hour, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{CommandID: "cmd_1", Duration: tc.duration}
			res.setExit(tc.code, tc.timeout)
			assert.Equal(t, tc.want, res.TimedOut)
			assert.Equal(t, tc.code, res.ExitCode())
			if tc.want {
				assert.Equal(t, "command cmd_1 was killed by its timeout (exit code 137)", (&ExitError{Result: res}).Error())
			}
		})
	}
}
