package wire

import (
	"strings"
	"unicode/utf8"
)

// TextFault reports why s cannot be sent as a path, a command name, an
// argument, a working directory or an environment variable, or "" when it
// can. Requests carry them as JSON text, which is Unicode: encoding/json
// sends each byte of invalid UTF-8 as U+FFFD, so the sandbox would act on
// another path or run another command ("u/\xffx" arrives as "u/\uFFFDx").
// A NUL byte does travel, as \u0000, but no path, argument or variable of
// a process can hold one.
func TextFault(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return "contains a NUL byte"
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	return ""
}
