package redact

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// A secret is not always written as it is: a JSON body writes "/" as
// "\/" or "+" as "\u002b" if it likes, a program may quote it with
// "\x2b", a URL writes it "%2B", and a body may do both (JSON in a URL) or
// one twice (JSON in a JSON string, a URL in a URL). To find a secret
// however it is written, Find also looks at views of the text with one or
// two layers of escapes decoded, each layer of one kind: backslash escapes
// or percent-encoding (decoding both at once would turn the "%00" of a
// JSON string into a NUL). Each view keeps, for each of its bytes, the
// bytes of the text it was written as, so that a secret found in a view
// hides exactly those bytes, escapes included.

// escapeKind is a kind of escape a layer decodes.
type escapeKind byte

const (
	backslash escapeKind = '\\' // JSON's \" \\ \/ \b \f \n \r \t \uXXXX, and \xXX, \'
	percent   escapeKind = '%'  // URL percent-encoding: %XX
)

// maxViews is the text, its two views with one layer decoded, and their
// four with two layers.
const maxViews = 1 + 2 + 4

// maxEscapeLen is the longest an escape makes one byte ("\u002b"), which
// bounds how long a known value can be once escaped.
const maxEscapeLen = 6

// view is text with escapes decoded: b[i] was written as
// text[from[i]:to[i]]. from and to are nil when b is the text itself.
type view struct {
	b        []byte
	from, to []int32
	// cut is where a trailing escape cut short ("%2", "\u00") begins in
	// b, which holds it undecoded; -1 when there is none. More text may
	// complete it.
	cut int
}

// start and end return where b[i] begins and ends in the text.
func (v *view) start(i int) int {
	if v.from == nil {
		return i
	}
	return int(v.from[i])
}

func (v *view) end(i int) int {
	if v.to == nil {
		return i + 1
	}
	return int(v.to[i])
}

// views is the text and its decoded views, in an array so that text
// without escapes costs no allocation.
type views struct {
	v [maxViews]view
	n int
}

// decode sets vs to b and its views with one and two layers of escapes
// decoded. A view that decodes nothing is left out, unless it ends in an
// escape cut short.
func (vs *views) decode(b []byte) {
	vs.n = 1
	vs.v[0] = view{b: b, cut: -1}
	if bytes.IndexByte(b, '\\') < 0 && bytes.IndexByte(b, '%') < 0 {
		return
	}
	var layer1 [2]int
	n1 := 0
	for _, k := range [...]escapeKind{backslash, percent} {
		if vs.add(0, k) {
			layer1[n1] = vs.n - 1
			n1++
		}
	}
	for _, p := range layer1[:n1] {
		for _, k := range [...]escapeKind{backslash, percent} {
			vs.add(p, k)
		}
	}
}

// add decodes one layer of kind in view p, keeps the result if it differs
// and reports whether it decoded anything.
func (vs *views) add(p int, kind escapeKind) bool {
	prev := &vs.v[p]
	if bytes.IndexByte(prev.b, byte(kind)) < 0 {
		return false
	}
	next, changed := unescape(prev, kind)
	if changed || next.cut >= 0 && next.cut != prev.cut {
		vs.v[vs.n] = next
		vs.n++
	}
	return changed
}

func (vs *views) all() []view { return vs.v[:vs.n] }

// unescape decodes one layer of the escapes of kind in prev. What is not a
// whole escape is kept as it is. changed reports whether anything was
// decoded.
//
// When prev ends in an escape cut short, the text before it is followed by
// bytes not known yet, so an escape of this layer that runs into it is cut
// short too (the "\" of "\%2" may become "\/").
func unescape(prev *view, kind escapeKind) (v view, changed bool) {
	b, limit := prev.b, len(prev.b)
	if prev.cut >= 0 {
		limit = prev.cut
	}
	body := b[:limit]
	cut := -1
	if firstEscape(body, kind) < 0 {
		// Nothing decoded: the view is prev, perhaps cut earlier.
		if cut = trailingCut(body, kind); cut < 0 {
			return view{cut: -1}, false
		}
		v = *prev
		v.cut = cut
		return v, false
	}
	out := make([]byte, 0, len(b))
	from := make([]int32, 0, len(b))
	to := make([]int32, 0, len(b))
	emit := func(s []byte, i, j int) {
		for range s {
			from = append(from, int32(prev.start(i)))
			to = append(to, int32(prev.end(j-1)))
		}
		out = append(out, s...)
	}
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(b); {
		if i >= limit {
			// The undecoded rest of an escape prev cut short.
			if cut < 0 {
				cut = len(out)
			}
			emit(b[i:i+1], i, i+1)
			i++
			continue
		}
		n, r, ok := escapeAt(body, i, kind)
		switch {
		case ok:
			changed = true
			var s []byte
			if r < 0 {
				buf[0] = byte(-r - 1) // a byte, not a rune: \xXX, %XX
				s = buf[:1]
			} else {
				s = buf[:utf8.EncodeRune(buf[:], r)]
			}
			emit(s, i, i+n)
			i += n
		case n < 0:
			// An escape cut short by the end of what is known.
			cut = len(out)
			for ; i < limit; i++ {
				emit(b[i:i+1], i, i+1)
			}
		default:
			emit(b[i:i+1], i, i+1)
			i++
		}
	}
	v.b, v.from, v.to, v.cut = out, from, to, cut
	return v, changed
}

// firstEscape returns the index of the first whole escape of kind in b,
// or -1.
func firstEscape(b []byte, kind escapeKind) int {
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], byte(kind))
		if i < 0 {
			return -1
		}
		if _, _, ok := escapeAt(b, off+i, kind); ok {
			return off + i
		}
		off += i + 1
	}
}

// trailingCut returns where an escape of kind cut short by the end of b
// begins, or -1.
func trailingCut(b []byte, kind escapeKind) int {
	for i := max(0, len(b)-maxEscapeLen); i < len(b); i++ {
		if n, _, _ := escapeAt(b, i, kind); n < 0 {
			return i
		}
	}
	return -1
}

// escapeAt decodes the escape of kind at b[i]: its length n and what it
// stands for, a rune r >= 0 or a byte c as r = -c-1. ok is false when b[i]
// does not begin a whole escape; n is then -1 when b ends before the
// escape could, 0 otherwise.
func escapeAt(b []byte, i int, kind escapeKind) (n int, r rune, ok bool) {
	rest := b[i:]
	if rest[0] != byte(kind) {
		return 0, 0, false
	}
	if kind == percent {
		c, n := hexAt(rest[1:], 2)
		if n == 2 {
			return 3, -rune(c) - 1, true
		}
		return cutShort(rest, 1+n), 0, false
	}
	if len(rest) < 2 {
		return -1, 0, false
	}
	switch rest[1] {
	case '"', '\\', '/', '\'':
		return 2, rune(rest[1]), true
	case 'b':
		return 2, '\b', true
	case 'f':
		return 2, '\f', true
	case 'n':
		return 2, '\n', true
	case 'r':
		return 2, '\r', true
	case 't':
		return 2, '\t', true
	case 'x':
		c, n := hexAt(rest[2:], 2)
		if n == 2 {
			return 4, -rune(c) - 1, true
		}
		return cutShort(rest, 2+n), 0, false
	case 'u':
		c, n := hexAt(rest[2:], 4)
		if n < 4 {
			return cutShort(rest, 2+n), 0, false
		}
		r := rune(c)
		if !utf16.IsSurrogate(r) {
			return 6, r, true
		}
		if len(rest) >= 12 && rest[6] == '\\' && rest[7] == 'u' {
			if c2, n2 := hexAt(rest[8:], 4); n2 == 4 {
				if p := utf16.DecodeRune(r, rune(c2)); p != utf8.RuneError {
					return 12, p, true
				}
			}
		}
		return 6, utf8.RuneError, true
	}
	return 0, 0, false
}

// cutShort returns -1 when the n bytes read of an escape are all of
// rest, so that more text could complete it, and 0 otherwise.
func cutShort(rest []byte, n int) int {
	if n == len(rest) {
		return -1
	}
	return 0
}

// hexAt reads up to n hex digits from the start of b: their value and how
// many there were.
func hexAt(b []byte, n int) (v, read int) {
	for read < n && read < len(b) {
		c := b[read]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return v, read
		}
		v = v<<4 | int(d)
		read++
	}
	return v, read
}
