package guard

import (
	"io"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// Redacted replaces every secret a Redactor finds.
const Redacted = redact.Marker

// MaxTokenLen is the longest token-shaped string (a JWT, a key) that a
// redacting Writer is sure to redact when it arrives split across writes.
// Known secrets are redacted whatever their length.
const MaxTokenLen = redact.MaxTokenLen

// Redactor replaces known secrets and token-shaped strings (JWTs, GitHub,
// Vercel, npm, cloud and API keys, Bearer and Basic credentials, passwords
// in URLs) with Redacted. It is safe for concurrent use.
type Redactor struct{ set *redact.Set }

// NewRedactor returns a Redactor for the given secrets (empty ones are
// ignored) and the built-in token shapes.
func NewRedactor(secrets ...string) *Redactor {
	return &Redactor{set: redact.NewSet(secrets...)}
}

// Redact returns s with every secret replaced.
func (r *Redactor) Redact(s string) string { return r.secrets().String(s) }

// secrets returns the set to redact with; a zero or nil Redactor knows
// only the built-in token shapes.
func (r *Redactor) secrets() *redact.Set {
	if r == nil {
		return nil
	}
	return r.set
}

// Writer returns an io.WriteCloser that redacts what is written before
// passing it to w. It holds back only what may still be the start of a
// secret (at most the longest known secret's length minus one byte, or a
// trailing token-shaped word of up to MaxTokenLen bytes) and writes it at
// Close, so secrets split across writes are redacted too. Close does not
// close w. The Writer is safe for concurrent use. With a nil w, every
// Write and Close fails with an *InputError.
func (r *Redactor) Writer(w io.Writer) *Writer {
	if w == nil {
		return &Writer{}
	}
	return &Writer{w: redact.NewWriter(w, r.secrets())}
}

// Writer is a redacting io.WriteCloser made by Redactor.Writer. A Writer
// not made by it (or made with a nil writer) fails every Write and Close
// with an *InputError.
type Writer struct{ w *redact.Writer }

// Write redacts p and passes on what is safe to pass on. It reports
// len(p) unless the underlying writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.check(); err != nil {
		return 0, err
	}
	return w.w.Write(p)
}

// Close writes what was held back. It does not close the underlying
// writer.
func (w *Writer) Close() error {
	if err := w.check(); err != nil {
		return err
	}
	return w.w.Close()
}

// Held reports how many bytes are held back, waiting for more input.
func (w *Writer) Held() int {
	if w.check() != nil {
		return 0
	}
	return w.w.Held()
}

func (w *Writer) check() error {
	if w == nil || w.w == nil {
		return apierr.Invalid("w", "nil writer")
	}
	return nil
}
