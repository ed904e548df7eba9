package cmdstream

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// fastCommand decodes a command line, {"command":{…}}, whose members are
// the fields of wire.Command in any order, each at most once, with plain
// values: strings without \u escapes, integers, null where the field
// takes it, and an array of such strings for "args". An unknown member
// with a plain scalar value is skipped, as encoding/json skips it. It
// returns nil for anything else (another frame, a repeated or escaped key,
// a key encoding/json would fold onto a field, a number that is not a
// plain integer, a nested value where none is expected), which the general
// path decodes to the same result or refuses. Every attached run starts
// and ends with such a line: the general path reads it three times
// (structure, validity, decode).
func fastCommand(line []byte) *wire.Command {
	// A line never holds a newline; the general path ends a value at one,
	// and so must this one, which leaves such a line to it.
	if bytes.IndexByte(line, '\n') >= 0 {
		return nil
	}
	i := skipSpace(line, 0)
	const open = `{"command":`
	if !bytes.HasPrefix(line[i:], []byte(open)) {
		return nil
	}
	i = skipSpace(line, i+len(open))
	if i == len(line) || line[i] != '{' {
		return nil
	}
	// One allocation for the command and its pointers, one for its strings,
	// which are parts of text unless they had escapes.
	a := new(struct {
		c    wire.Command
		exit int
		dur  int64
	})
	c, text := &a.c, string(line)
	c.ExitCode, c.DurationMs = &a.exit, &a.dur
	var seen uint16
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for {
			next, esc, ok := scanString(line, i)
			if !ok || esc >= 0 {
				return nil
			}
			key := line[i+1 : next-1]
			if i = skipSpace(line, next); i == len(line) || line[i] != ':' {
				return nil
			}
			i = skipSpace(line, i+1)
			f := commandField(key)
			if f < 0 || f != fieldOther && seen&(1<<f) != 0 {
				return nil
			}
			seen |= 1 << f
			if i = setField(c, f, line, text, i); i < 0 {
				return nil
			}
			if i = skipSpace(line, i); i == len(line) {
				return nil
			}
			if line[i] == '}' {
				i++
				break
			}
			if line[i] != ',' {
				return nil
			}
			i = skipSpace(line, i+1)
		}
	}
	if i = skipSpace(line, i); i == len(line) || line[i] != '}' || skipSpace(line, i+1) != len(line) {
		return nil
	}
	if seen&(1<<fieldExitCode) == 0 {
		c.ExitCode = nil
	}
	if seen&(1<<fieldDurationMs) == 0 {
		c.DurationMs = nil
	}
	return c
}

// The fields of wire.Command fastCommand decodes, and fieldOther for a key
// it skips.
const (
	fieldID = iota
	fieldName
	fieldArgs
	fieldCwd
	fieldSessionID
	fieldExitCode
	fieldStartedAt
	fieldDurationMs
	fieldOther // a key of no field, skipped however often it comes
)

var commandKeys = [...]string{"id", "name", "args", "cwd", "sessionId", "exitCode", "startedAt", "durationMs"}

// commandField is the field key names, fieldOther for a key that matches
// none even with case folded, or -1 for a key encoding/json might fold
// onto a field (any case but the exact one, or a key outside ASCII).
func commandField(key []byte) int {
	for f, k := range commandKeys {
		if string(key) == k {
			return f
		}
	}
	for _, b := range key {
		if b >= 0x80 {
			return -1
		}
	}
	for _, k := range commandKeys {
		if strings.EqualFold(string(key), k) {
			return -1
		}
	}
	return fieldOther
}

// setField decodes the value at line[i] into field f of c, and returns
// the index after it, or -1 to leave the line to the general path. Strings
// are taken from text, the line as a string. A null leaves a field as it
// is, as encoding/json does, but for the pointers, which it sets to nil.
func setField(c *wire.Command, f int, line []byte, text string, i int) int {
	if i == len(line) {
		return -1
	}
	if bytes.HasPrefix(line[i:], []byte("null")) {
		switch f {
		case fieldExitCode:
			c.ExitCode = nil
		case fieldDurationMs:
			c.DurationMs = nil
		}
		return i + len("null")
	}
	var dst *string
	switch f {
	case fieldID:
		dst = &c.ID
	case fieldName:
		dst = &c.Name
	case fieldCwd:
		dst = &c.Cwd
	case fieldSessionID:
		dst = &c.SessionID
	case fieldArgs:
		return setArgs(c, line, text, i)
	case fieldExitCode, fieldStartedAt, fieldDurationMs:
		n, next := plainInt(line, i)
		switch {
		case next < 0:
		case f == fieldExitCode:
			*c.ExitCode = int(n)
		case f == fieldStartedAt:
			c.StartedAt = n
		default:
			*c.DurationMs = n
		}
		return next
	default:
		return skipScalar(line, i)
	}
	s, next := plainString(line, text, i)
	*dst = s
	return next
}

// setArgs decodes an array of strings into c.Args: never nil, as
// encoding/json makes it even for [].
func setArgs(c *wire.Command, line []byte, text string, i int) int {
	if line[i] != '[' {
		return -1
	}
	c.Args = []string{}
	if i = skipSpace(line, i+1); i < len(line) && line[i] == ']' {
		return i + 1
	}
	for {
		var s string
		if bytes.HasPrefix(line[i:], []byte("null")) { // an element left as it is: ""
			i += len("null")
		} else if s, i = plainString(line, text, i); i < 0 {
			return -1
		}
		c.Args = append(c.Args, s)
		if i = skipSpace(line, i); i == len(line) {
			return -1
		}
		switch line[i] {
		case ']':
			return i + 1
		case ',':
			i = skipSpace(line, i+1)
		default:
			return -1
		}
	}
}

// plainString decodes the string at line[i], which scanString accepts,
// and returns the index after it; -1 for a string it refuses. Without
// escapes the string is a part of text, the line as a string; the line is
// left as it is.
func plainString(line []byte, text string, i int) (string, int) {
	next, esc, ok := scanString(line, i)
	if !ok {
		return "", -1
	}
	if esc >= 0 {
		return string(unescape([]byte(text[i+1:next-1]), esc)), next
	}
	return text[i+1 : next-1], next
}

// plainInt decodes an integer of at most 18 digits at line[i], which no
// fraction or exponent follows, and returns the index after it; -1 for
// anything else (encoding/json refuses a fraction for an integer field,
// and a longer integer may overflow).
func plainInt(line []byte, i int) (int64, int) {
	j := number(line, i)
	digits := line[i:max(j, i)]
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if j < 0 || len(digits) > 18 || bytes.ContainsAny(digits, ".eE") {
		return 0, -1
	}
	n, err := strconv.ParseInt(string(line[i:j]), 10, 64)
	if err != nil {
		return 0, -1
	}
	return n, j
}

// skipScalar passes over the value of a member fastCommand skips: a
// string, a number, true or false (null is passed before); -1 for
// anything else.
func skipScalar(line []byte, i int) int {
	switch {
	case bytes.HasPrefix(line[i:], []byte("true")):
		return i + len("true")
	case bytes.HasPrefix(line[i:], []byte("false")):
		return i + len("false")
	case line[i] == '"':
		next, _, ok := scanString(line, i)
		if !ok {
			return -1
		}
		return next
	}
	return number(line, i)
}

// number passes over the JSON number at line[i], and returns the index
// after it; -1 when none starts there.
func number(line []byte, i int) int {
	digits := func(j int) int {
		for j < len(line) && line[j] >= '0' && line[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(line) && line[i] == '-' {
		i++
	}
	switch {
	case i < len(line) && line[i] == '0':
		i++
	case i < len(line) && line[i] >= '1' && line[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(line) && line[i] == '.' {
		if j := digits(i + 1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(line) && (line[i] == 'e' || line[i] == 'E') {
		j := i + 1
		if j < len(line) && (line[j] == '+' || line[j] == '-') {
			j++
		}
		if k := digits(j); k > j {
			i = k
		} else {
			return -1
		}
	}
	return i
}
