//go:build unix

package hostexec

import (
	"crypto/rand"
	"encoding/hex"
)

// markEnv names the variable that marks every process a command starts:
// its value is unique to the command, and children inherit it, those that
// leave the command's session and group (daemons) included. When the
// command ends, sweep kills every process that still carries it.
const markEnv = "LOCAL_SANDBOX_RUN"

// newMark returns a fresh marker value.
func newMark() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
