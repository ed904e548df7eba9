package guard

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"sort"
	"sync"
)

// Redacted replaces every secret a Redactor finds.
const Redacted = "[REDACTED]"

// MaxTokenLen is the longest token-shaped string (a JWT, a key) that a
// redacting Writer is sure to redact when it arrives split across writes.
// Known secrets are redacted whatever their length.
const MaxTokenLen = 16 << 10

// tokenPattern matches a token-shaped secret. A pattern with a group
// redacts only the group (the credential after "Bearer ", not the word).
// Every pattern starts at a word boundary with one of its needles
// (compared without case when fold is set); the regexp runs only when a
// word of the text starts with one, which keeps ordinary output off the
// regexp engine.
type tokenPattern struct {
	re      *regexp.Regexp
	needles []string
	fold    bool
}

var tokenPatterns = []tokenPattern{
	{re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`), needles: []string{"eyJ"}}, // JWT (OIDC tokens)
	{re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), needles: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{re: regexp.MustCompile(`\bvc[a-z]_[A-Za-z0-9]{20,}`), needles: []string{"vc"}}, // Vercel tokens with a type prefix
	{re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{30,}`), needles: []string{"npm_"}},
	{re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), needles: []string{"AKIA", "ASIA", "ABIA", "ACCA"}},
	{re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), needles: []string{"sk-"}}, // API keys of the sk- family
	{re: regexp.MustCompile(`\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}`), needles: []string{"rk_live_", "rk_test_", "sk_live_", "sk_test_", "pk_live_", "pk_test_"}},
	{re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), needles: []string{"xox"}},
	{re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), needles: []string{"AIza"}},
	{re: regexp.MustCompile(`(?i)\b(?:bearer|basic)[ \t]+([A-Za-z0-9._~+/-]{8,}=*)`), needles: []string{"bearer", "basic"}, fold: true},
}

type needleRef struct {
	needle  string
	fold    bool
	pattern int
}

// needlesByFirst indexes the needles by their first byte.
var needlesByFirst = func() (t [256][]needleRef) {
	for i, p := range tokenPatterns {
		for _, n := range p.needles {
			t[n[0]] = append(t[n[0]], needleRef{n, p.fold, i})
			if p.fold {
				up := n[0] &^ 0x20
				t[up] = append(t[up], needleRef{n, p.fold, i})
			}
		}
	}
	return t
}()

func wordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// candidates returns the set of patterns (bit i for tokenPatterns[i]) that
// may match in b.
func candidates(b []byte) uint32 {
	var set uint32
	for i := 0; i < len(b); i++ {
		refs := needlesByFirst[b[i]]
		if len(refs) == 0 || (i > 0 && wordChar(b[i-1])) {
			continue
		}
		for _, r := range refs {
			if len(b)-i < len(r.needle) {
				continue
			}
			w := b[i : i+len(r.needle)]
			if string(w) == r.needle || (r.fold && bytes.EqualFold(w, []byte(r.needle))) {
				set |= 1 << r.pattern
			}
		}
	}
	return set
}

// tokenChar reports whether c can be part of a token-shaped secret.
func tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

// Redactor replaces known secrets and token-shaped strings with Redacted.
// It is safe for concurrent use.
type Redactor struct {
	secrets [][]byte // longest first
	maxLen  int      // of secrets
}

// NewRedactor returns a Redactor for the given secrets (empty ones are
// ignored) and the built-in token shapes.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		r.secrets = append(r.secrets, []byte(s))
		r.maxLen = max(r.maxLen, len(s))
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// Redact returns s with every secret replaced.
func (r *Redactor) Redact(s string) string {
	b := []byte(s)
	sp := r.spans(b)
	if len(sp) == 0 {
		return s
	}
	return string(replace(nil, b, sp))
}

// span is a range to redact; ctx <= start is where the match begins,
// context included ("Bearer " before a credential).
type span struct{ start, end, ctx int }

// spans returns the sorted, merged ranges of b to redact.
func (r *Redactor) spans(b []byte) []span {
	var sp []span
	for _, s := range r.secrets {
		for off := 0; off < len(b); {
			i := bytes.Index(b[off:], s)
			if i < 0 {
				break
			}
			sp = append(sp, span{off + i, off + i + len(s), off + i})
			off += i + 1
		}
	}
	set := candidates(b)
	for i := range tokenPatterns {
		if set&(1<<i) == 0 {
			continue
		}
		for _, m := range tokenPatterns[i].re.FindAllSubmatchIndex(b, -1) {
			if len(m) >= 4 && m[2] >= 0 {
				sp = append(sp, span{m[2], m[3], m[0]})
			} else {
				sp = append(sp, span{m[0], m[1], m[0]})
			}
		}
	}
	if len(sp) < 2 {
		return sp
	}
	slices.SortFunc(sp, func(a, b span) int { return a.start - b.start })
	out := sp[:1]
	for _, s := range sp[1:] {
		last := &out[len(out)-1]
		if s.start <= last.end {
			last.end = max(last.end, s.end)
			last.ctx = min(last.ctx, s.ctx)
			continue
		}
		out = append(out, s)
	}
	return out
}

// replace appends b to dst with the spans replaced.
func replace(dst, b []byte, sp []span) []byte {
	at := 0
	for _, s := range sp {
		dst = append(dst, b[at:s.start]...)
		dst = append(dst, Redacted...)
		at = s.end
	}
	return append(dst, b[at:]...)
}

// holdStart returns where the part of b that may still grow into a secret
// begins: the last maxLen-1 bytes (a known secret may be cut there), and a
// trailing run of token characters with a preceding "Bearer " (a token may
// be cut there), at most MaxTokenLen bytes back.
func (r *Redactor) holdStart(b []byte) int {
	h := len(b)
	if r.maxLen > 1 {
		h = max(0, len(b)-(r.maxLen-1))
	}
	i := len(b)
	for i > 0 && tokenChar(b[i-1]) {
		i--
	}
	j := i
	for j > 0 && (b[j-1] == ' ' || b[j-1] == '\t') {
		j--
	}
	if j < i {
		k := j
		for k > 0 && ('a' <= b[k-1]|0x20 && b[k-1]|0x20 <= 'z') {
			k--
		}
		if w := b[k:j]; bytes.EqualFold(w, []byte("bearer")) || bytes.EqualFold(w, []byte("basic")) {
			i = k
		}
	}
	i = max(i, len(b)-MaxTokenLen)
	return min(h, i)
}

// Writer returns an io.WriteCloser that redacts what is written before
// passing it to w. It holds back only what may still be the start of a
// secret (at most the longest known secret's length minus one byte, or a
// trailing token-shaped word of up to MaxTokenLen bytes) and writes it at
// Close, so secrets split across writes are redacted too. Close does not
// close w. The Writer is safe for concurrent use.
func (r *Redactor) Writer(w io.Writer) *Writer {
	return &Writer{r: r, w: w}
}

// Writer is a redacting io.WriteCloser made by Redactor.Writer.
type Writer struct {
	r       *Redactor
	w       io.Writer
	mu      sync.Mutex
	pending []byte
	out     []byte
	// cont: the last write ended inside a redacted token longer than the
	// hold window, so token characters that follow belong to it.
	cont   bool
	closed bool
	err    error
}

// Write redacts p and passes on what is safe to pass on. It reports
// len(p) unless the underlying writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	w.pending = append(w.pending, p...)
	if err := w.flush(false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what was held back. It does not close the underlying
// writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	return w.flush(true)
}

// Held reports how many bytes are held back, waiting for more input.
func (w *Writer) Held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

func (w *Writer) flush(final bool) error {
	b := w.pending
	if w.cont {
		i := 0
		for i < len(b) && tokenChar(b[i]) {
			i++
		}
		b = b[i:]
		if len(b) == 0 && !final {
			w.pending = w.pending[:0]
			return nil
		}
		w.cont = false
	}
	sp := w.r.spans(b)
	e := len(b)
	if !final {
		e = w.r.holdStart(b)
		for _, s := range sp {
			if s.ctx < e && e < s.end {
				e = s.ctx
				break
			}
		}
		if limit := len(b) - max(MaxTokenLen, w.r.maxLen); e < limit {
			// A token longer than the hold window: pass on everything
			// before the window, redacting the token through its end.
			e = limit
			for _, s := range sp {
				if s.start < e && e < s.end {
					e = s.end
					w.cont = e == len(b)
					break
				}
			}
		}
	}
	keep := sp[:0:0]
	for _, s := range sp {
		if s.end <= e {
			keep = append(keep, s)
		}
	}
	w.out = replace(w.out[:0], b[:e], keep)
	w.pending = append(w.pending[:0], b[e:]...)
	if len(w.out) > 0 {
		if _, err := w.w.Write(w.out); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}
