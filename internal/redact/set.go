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

// Find returns the sorted, disjoint spans of b that hold a secret.
func (s *Set) Find(b []byte) []Span {
	var sp []Span
	if s != nil {
		for _, v := range s.values {
			for off := 0; off < len(b); {
				i := bytes.Index(b[off:], v)
				if i < 0 {
					break
				}
				sp = append(sp, Span{off + i, off + i + len(v), ShapeKnown, off + i})
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
			if len(m) >= 4 && m[2] >= 0 {
				sp = append(sp, Span{m[2], m[3], p.shape, m[0]})
			} else {
				sp = append(sp, Span{m[0], m[1], p.shape, m[0]})
			}
		}
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

func (s *Set) longest() int {
	if s == nil {
		return 0
	}
	return s.maxLen
}
