package cmdstream

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// fastLog decodes a log line whose two keys, "stream" and "data", come in
// either order ({"data":…,"stream":…} is how hosted Vercel writes them,
// {"stream":…,"data":…} how the local backend once did), without a general
// JSON decode and without an allocation. Anything else (\u
// escapes, invalid UTF-8, other, repeated or escaped keys, an error frame,
// a command line) takes the general path, which gives the same result.
// The line is left as it is unless it is a log frame; then its data is
// decoded in place, and the data returned is a slice of the line. A line
// it leaves to the general path gives kind 0.
func fastLog(line []byte) (Kind, []byte) {
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return 0, nil
	}
	var k Kind
	var data []byte // the data as it is in the line, without its quotes
	dataEsc := -1   // where its first escape is in data; -1 for none
	haveData := false
	for {
		i = skipSpace(line, i+1)
		var key string
		if key, i = token(line, i, `"stream"`, `"data"`); key == "" {
			return 0, nil
		}
		i = skipSpace(line, i)
		if i == len(line) || line[i] != ':' {
			return 0, nil
		}
		i = skipSpace(line, i+1)
		if key == `"stream"` {
			var v string
			if v, i = token(line, i, `"stdout"`, `"stderr"`); v == "" || k != 0 {
				return 0, nil
			}
			k = KindStdout
			if v == `"stderr"` {
				k = KindStderr
			}
		} else {
			next, esc, ok := scanString(line, i)
			if !ok || haveData {
				return 0, nil
			}
			data, dataEsc, haveData, i = line[i+1:next-1], esc, true, next
		}
		i = skipSpace(line, i)
		if i == len(line) {
			return 0, nil
		}
		if line[i] == '}' {
			break
		}
		if line[i] != ',' {
			return 0, nil
		}
	}
	if k == 0 || !haveData || skipSpace(line, i+1) != len(line) {
		return 0, nil
	}
	return k, unescape(data, dataEsc)
}

// Hosted Vercel writes every log line the same way: {"data":"…", then
// ,"stream":"stdout"} or ,"stream":"stderr"}, then a newline.
const (
	hostedHead   = `{"data":"`
	hostedStdout = `","stream":"stdout"}` + "\n" // from the closing quote of the data
	hostedStderr = `","stream":"stderr"}` + "\n"
)

// hostedLog decodes the log line at the start of b when it is written
// exactly as hosted Vercel writes them, and returns its kind, its data
// (decoded in place) and the length of the line with its newline. It needs
// no separate search for the newline: a JSON string holds no raw newline,
// so the one after the closing brace ends the line. Anything else, a line
// that is not whole in b included, gives kind 0 and leaves b as it is;
// fastLog takes the lines hostedLog takes with the same result.
func hostedLog(b []byte) (Kind, []byte, int) {
	if len(b) < len(hostedHead)+len(hostedStdout) || le64(b) != hostedWords[0] || b[8] != '"' {
		return 0, nil, 0
	}
	next, esc, ok := scanString(b, len(hostedHead)-1)
	if !ok || len(b)-next < len(hostedStdout)-1 {
		return 0, nil, 0
	}
	// The tail, from the data's closing quote, in three words; the last
	// two overlap.
	tail := b[next-1:]
	t0, t1, t2 := le64(tail), le64(tail[8:]), le64(tail[len(hostedStdout)-8:])
	var k Kind
	switch {
	case t0 != hostedWords[1]:
		return 0, nil, 0
	case t1 == hostedWords[2] && t2 == hostedWords[3]:
		k = KindStdout
	case t1 == hostedWords[4] && t2 == hostedWords[5]:
		k = KindStderr
	default:
		return 0, nil, 0
	}
	return k, unescape(b[len(hostedHead):next-1], esc), next - 1 + len(hostedStdout)
}

// hostedWords are the words hostedLog compares: the head's first eight
// bytes, then the three words of each tail.
var hostedWords = [6]uint64{
	le64([]byte(hostedHead)),
	le64([]byte(hostedStdout)),
	le64([]byte(hostedStdout[8:])), le64([]byte(hostedStdout[len(hostedStdout)-8:])),
	le64([]byte(hostedStderr[8:])), le64([]byte(hostedStderr[len(hostedStderr)-8:])),
}

// le64 is the first eight bytes of b as a little-endian word.
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// token returns whichever of a and b starts line[i:], and the index after
// it; "" when neither does. Both are quoted JSON strings without escapes,
// so a match is the whole string.
func token(line []byte, i int, a, b string) (string, int) {
	rest := line[i:]
	switch {
	case len(rest) >= len(a) && string(rest[:len(a)]) == a:
		return a, i + len(a)
	case len(rest) >= len(b) && string(rest[:len(b)]) == b:
		return b, i + len(b)
	}
	return "", i
}

func skipSpace(b []byte, i int) int {
	// Every JSON space is at most ' ': one comparison passes the rest.
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// plainASCII marks the ASCII bytes that stand for themselves inside a
// JSON string: all but the quote, the backslash and the control
// characters; plainAll marks the bytes from 0x80 too. They hold 1 for
// those, 0 for the others, so that a run of lookups can be combined with &
// and tested once.
var plainASCII, plainAll = func() (ascii, all [256]uint8) {
	for c := 0x20; c < 256; c++ {
		if c != '"' && c != '\\' {
			all[c] = 1
			if c < 0x80 {
				ascii[c] = 1
			}
		}
	}
	return ascii, all
}()

// escaped maps the byte after a backslash to the byte it stands for, for
// the escapes the fast path decodes; zero for the others (\u and invalid
// ones), which the general path handles.
var escaped = [256]byte{
	'"': '"', '\\': '\\', '/': '/',
	'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
}

// scanString checks the JSON string at b[i] for the fast path, and returns
// the index after its closing quote and where its first escape is in its
// contents (-1 for none). It refuses (ok false) what the fast
// path leaves to encoding/json: \u and invalid escapes, control
// characters, invalid UTF-8, and a string that is not closed.
func scanString(b []byte, i int) (next, esc int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	esc = -1
	plain := &plainASCII // until the first byte from 0x80, when UTF-8 has to be checked
	for j := i + 1; j < len(b); {
		c := b[j]
		if plain[c] != 0 { // else no run to look for: an escape often ends just before the quote
			j += plainRun(b[j:], plain)
			continue
		}
		switch c {
		case '"':
			if plain == &plainAll && !utf8.Valid(b[i+1:j]) {
				return 0, 0, false
			}
			return j + 1, esc, true
		case '\\':
			if j+1 == len(b) || escaped[b[j+1]] == 0 {
				return 0, 0, false
			}
			if esc < 0 {
				esc = j - i - 1
			}
			j += 2
		default:
			if c < 0x80 { // a control character
				return 0, 0, false
			}
			plain = &plainAll
		}
	}
	return 0, 0, false
}

// plainRun returns how many bytes at the start of s the table plain marks.
// It tests eight bytes at a time while it can, with arithmetic on a word
// rather than eight lookups: the common string has long runs.
func plainRun(s []byte, plain *[256]uint8) int {
	var high uint64 = highBits // bytes from 0x80 end a run of plainASCII
	if plain == &plainAll {
		high = 0
	}
	// The first word alone: a run is often short.
	n := 0
	if len(s) >= 8 {
		if m := mask(le64(s), high); m != 0 {
			return bits.TrailingZeros64(m) / 8
		}
		n = 8
	}
	for ; n+32 <= len(s); n += 32 {
		w := s[n : n+32 : n+32]
		m0, m1, m2, m3 := mask(le64(w), high), mask(le64(w[8:]), high), mask(le64(w[16:]), high), mask(le64(w[24:]), high)
		if m0|m1|m2|m3 == 0 {
			continue
		}
		// The lowest byte marked is the first that ends the run: a
		// borrow only ever marks a byte above one truly marked.
		switch {
		case m0 != 0:
			return n + bits.TrailingZeros64(m0)/8
		case m1 != 0:
			return n + 8 + bits.TrailingZeros64(m1)/8
		case m2 != 0:
			return n + 16 + bits.TrailingZeros64(m2)/8
		}
		return n + 24 + bits.TrailingZeros64(m3)/8
	}
	for ; n+8 <= len(s); n += 8 {
		if m := mask(le64(s[n:]), high); m != 0 {
			return n + bits.TrailingZeros64(m)/8
		}
	}
	for n < len(s) && plain[s[n]] != 0 {
		n++
	}
	return n
}

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// mask is not zero when one of the eight bytes of w is a quote, a
// backslash, a control character or, with high set, a byte from 0x80.
// x - n·0x01… has the high bit of a byte set where x has a byte below
// n ≤ 0x80, and no high bit at all when x has none; the bytes from 0x80
// are then left out (&^ w) and taken back only with high.
func mask(w, high uint64) uint64 {
	q := w ^ (lowBits * '"')
	b := w ^ (lowBits * '\\')
	return ((w-lowBits*0x20)|(q-lowBits)|(b-lowBits))&^w&highBits | w&high
}

// unescape decodes, in place, the contents s of a string scanString
// accepted, whose first escape is at j, and returns the decoded part of s.
func unescape(s []byte, j int) []byte {
	if j < 0 {
		return s
	}
	w := j
	for {
		s[w] = escaped[s[j+1]]
		w, j = w+1, j+2
		if j == len(s) { // an escape that ends the string, as a line's newline often does
			return s[:w]
		}
		k := bytes.IndexByte(s[j:], '\\')
		if k < 0 {
			return s[:w+copy(s[w:], s[j:])]
		}
		w += copy(s[w:], s[j:j+k])
		j += k
	}
}
