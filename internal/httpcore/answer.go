package httpcore

import (
	"bytes"
	"io"
	"net/http"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// ReadAnswer reads the body of resp whole, up to limit bytes as the caller
// sees them (after the transport's decompression). A longer body gives an
// *apierr.ResponseTooLargeError naming op, resp's method and path (a path
// template, never a URL with its query) and the limit; a Content-Length
// above the limit is refused before anything is read. op may be empty.
//
// Why not io.ReadAll under an io.LimitReader: its buffer doubles, so a
// refused answer costs two to three times the limit. Here the body is read
// in pieces that grow up to 1 MiB and joined once at the end, so a refused
// answer costs about the limit and a small one a single small piece.
func ReadAnswer(resp *http.Response, limit int64, op, path string) ([]byte, error) {
	tooLarge := func() error {
		method := ""
		if resp.Request != nil {
			method = resp.Request.Method
		}
		return &apierr.ResponseTooLargeError{Op: op, Method: method, Path: path, StatusCode: resp.StatusCode, Limit: limit}
	}
	if resp.ContentLength > limit {
		return nil, tooLarge()
	}
	piece := int64(512)
	if resp.ContentLength >= 0 {
		piece = resp.ContentLength + 1 // +1 to see a body longer than announced end
	}
	var parts [][]byte
	var total int64
	for {
		p := make([]byte, min(piece, limit+1-total))
		n, err := fill(resp.Body, p)
		parts = append(parts, p[:n])
		total += int64(n)
		if total > limit {
			return nil, tooLarge()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		piece = min(2*piece, 1<<20)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return bytes.Join(parts, nil), nil
}

// fill reads into p until it is full or r fails; unlike io.ReadFull it
// gives r's own error, so that a body cut short (io.ErrUnexpectedEOF from
// the transport) is told apart from its end (io.EOF).
func fill(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
