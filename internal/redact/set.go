package redact

import (
	"bytes"
	"slices"
)

// Set finds secrets in text: its known values, and every token shape.
// A nil *Set finds the token shapes only. A Set is immutable and safe for
// concurrent use.
type Set struct {
	values [][]byte // longest first
	maxLen int      // of values
}

// NewSet returns a Set of the given known values; empty ones and
// duplicates are ignored.
func NewSet(values ...string) *Set {
	s := &Set{}
	for _, v := range values {
		if v == "" || slices.ContainsFunc(s.values, func(b []byte) bool { return string(b) == v }) {
			continue
		}
		s.values = append(s.values, []byte(v))
		s.maxLen = max(s.maxLen, len(v))
	}
	slices.SortStableFunc(s.values, func(a, b []byte) int { return len(b) - len(a) })
	return s
}

// String returns str with every secret replaced by Marker.
func (s *Set) String(str string) string {
	b := []byte(str)
	sp := s.Find(b)
	if len(sp) == 0 {
		return str
	}
	return string(replace(nil, b, sp))
}

// Bytes returns b with every secret replaced by Marker. It returns b
// itself when nothing is secret.
func (s *Set) Bytes(b []byte) []byte {
	sp := s.Find(b)
	if len(sp) == 0 {
		return b
	}
	return replace(nil, b, sp)
}

// Span is one secret found in text: b[Start:End] is to be hidden. Shape
// says what was found; where spans overlap they are merged and the first
// one's shape is kept.
type Span struct {
	Start, End int
	Shape      Shape
	// from <= Start is where the match begins, its context included
	// ("Bearer " before a credential).
	from int
}

// Find returns the sorted, disjoint spans of b that hold a secret, written
// as it is or with escapes: JSON's ("\/", "\u002b"), \xXX and URL
// percent-encoding ("%2B"), one or two layers deep. A span of an escaped
// secret covers its escapes.
func (s *Set) Find(b []byte) []Span {
	var vs views
	vs.decode(b)
	return s.find(&vs)
}

func (s *Set) find(vs *views) []Span {
	var sp []Span
	for i := range vs.all() {
		sp = s.findIn(&vs.v[i], sp)
	}
	if len(sp) < 2 {
		return sp
	}
	slices.SortStableFunc(sp, func(a, b Span) int { return a.Start - b.Start })
	out := sp[:1]
	for _, x := range sp[1:] {
		last := &out[len(out)-1]
		if x.Start <= last.End {
			last.End = max(last.End, x.End)
			last.from = min(last.from, x.from)
			continue
		}
		out = append(out, x)
	}
	return out
}

// findIn appends to sp the secrets found in v, as spans of the text.
func (s *Set) findIn(v *view, sp []Span) []Span {
	b := v.b
	add := func(start, end, from int, shape Shape) {
		sp = append(sp, Span{v.start(start), v.end(end - 1), shape, v.start(from)})
	}
	if s != nil {
		for _, val := range s.values {
			for off := 0; off < len(b); {
				i := bytes.Index(b[off:], val)
				if i < 0 {
					break
				}
				add(off+i, off+i+len(val), off+i, ShapeKnown)
				off += i + 1
			}
		}
	}
	set := candidates(b)
	for i, p := range tokenPatterns {
		if set&(1<<i) == 0 {
			continue
		}
		for _, m := range p.re.FindAllSubmatchIndex(b, -1) {
			switch {
			case len(m) >= 4 && m[2] >= 0 && m[3] > m[2]:
				add(m[2], m[3], m[0], p.shape)
			case m[1] > m[0]:
				add(m[0], m[1], m[0], p.shape)
			}
		}
	}
	return sp
}

// openFrom returns where, in the text, the end of it that may still grow
// into a known value begins: the earliest start of a proper prefix of a
// known value that runs to the end of a view, or to an escape cut short
// (which may stand for the value's next byte). It is len(text) when the
// text cannot be the start of any.
func (s *Set) openFrom(vs *views) int {
	best := len(vs.v[0].b)
	if s == nil || len(s.values) == 0 {
		return best
	}
	for i := range vs.all() {
		v := &vs.v[i]
		end := len(v.b)
		if v.cut >= 0 {
			end = v.cut
			best = min(best, v.start(v.cut))
		}
		for _, val := range s.values {
			for p := max(0, end-len(val)+1); p < end; p++ {
				if v.b[p] == val[0] && bytes.HasPrefix(val, v.b[p:end]) {
					best = min(best, v.start(p))
					break
				}
			}
		}
	}
	return best
}

// replace appends b to dst with the spans replaced by Marker.
func replace(dst, b []byte, sp []Span) []byte {
	at := 0
	for _, s := range sp {
		dst = append(dst, b[at:s.Start]...)
		dst = append(dst, Marker...)
		at = s.End
	}
	return append(dst, b[at:]...)
}

// longest returns the length of the longest known value, once escaped.
func (s *Set) longest() int {
	if s == nil {
		return 0
	}
	return s.maxLen * maxEscapeLen
}
