package httpcore

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/benchdata"
)

// maxGrowth is what a refused answer may cost the client, whatever its size.
const maxGrowth = 16 << 20

// hugeBody writes n bytes of a JSON answer that never ends (or a text
// error body), 64 KiB at a time, until the client hangs up.
func hugeBody(w http.ResponseWriter, n int) {
	chunk := bytes.Repeat([]byte("0"), 64<<10)
	_, _ = w.Write([]byte(`{"sandboxes":["`))
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// gzipBomb returns a gzip stream of about 200 KiB that decompresses to
// 200 MiB of a JSON answer: 200 members of 1 MiB each (a gzip reader reads
// concatenated members as one stream).
func gzipBomb(t *testing.T) []byte {
	t.Helper()
	var one bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	_, _ = zw.Write(bytes.Repeat([]byte("0"), 1<<20))
	require.NoError(t, zw.Close())
	var head bytes.Buffer
	zw = gzip.NewWriter(&head)
	_, _ = zw.Write([]byte(`{"sandboxes":["`))
	require.NoError(t, zw.Close())
	return append(head.Bytes(), bytes.Repeat(one.Bytes(), 200)...)
}

// TestHostileAnswerIsRefusedInBoundedMemory serves answers far larger
// than the default limit: each is refused with an error naming the call
// and the limit (or, for an error answer, its status), and the client
// allocates less than maxGrowth meanwhile. Not parallel: the measure
// counts every allocation of the process.
func TestHostileAnswerIsRefusedInBoundedMemory(t *testing.T) {
	bomb := gzipBomb(t)
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter)
		status  int // 0: a 2xx answer, refused as too large
	}{
		{"100 MiB JSON, chunked", func(w http.ResponseWriter) { hugeBody(w, 100<<20) }, 0},
		{"100 MiB JSON with its length", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(100<<20))
			hugeBody(w, 100<<20)
		}, 0},
		{"gzip bomb", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(bomb)
		}, 0},
		{"100 MiB error body", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadRequest)
			hugeBody(w, 100<<20)
		}, http.StatusBadRequest},
		{"gzip bomb as error body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write(bomb)
		}, http.StatusConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				w.Header().Set("Content-Type", "application/json")
				tt.handler(w)
			})
			c := newClient(t, srv.URL)
			var err error
			grew := benchdata.Allocated(func() {
				err = c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes", Op: "list sandboxes"}, new(map[string]any))
			})
			t.Logf("allocated %.1f MiB", float64(grew)/(1<<20))
			assert.Less(t, grew, uint64(maxGrowth), "a hostile answer must cost bounded memory")
			if tt.status != 0 {
				var ae *apierr.Error
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.status, ae.StatusCode, "the error still says the status")
				return
			}
			var tl *apierr.ResponseTooLargeError
			require.ErrorAs(t, err, &tl)
			assert.ErrorIs(t, err, apierr.ErrResponseTooLarge)
			assert.Equal(t, int64(DefaultMaxResponseSize), tl.Limit)
			assert.Contains(t, err.Error(), "list sandboxes")
			assert.Contains(t, err.Error(), "GET /v2/sandboxes")
			assert.Contains(t, err.Error(), strconv.Itoa(DefaultMaxResponseSize))
		})
	}
}

// TestAnswerLimitIsExact accepts an answer of exactly the limit, refuses
// one byte more, and still tells a body cut short from a long one.
func TestAnswerLimitIsExact(t *testing.T) {
	t.Parallel()
	const limit = 1000
	answer := func(n int) string { return `{"a":"` + strings.Repeat("x", n-len(`{"a":""}`)) + `"}` }
	for _, tt := range []struct {
		name    string
		body    string
		length  string // Content-Length to announce, "" for chunked
		wantErr error
	}{
		{"at the limit, chunked", answer(limit), "", nil},
		{"at the limit, with length", answer(limit), strconv.Itoa(limit), nil},
		{"one byte over, chunked", answer(limit + 1), "", apierr.ErrResponseTooLarge},
		{"one byte over, with length", answer(limit + 1), strconv.Itoa(limit + 1), apierr.ErrResponseTooLarge},
		{"cut short", answer(limit)[:500], strconv.Itoa(limit), errCutShort},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				if tt.length != "" {
					w.Header().Set("Content-Length", tt.length)
				}
				_, _ = w.Write([]byte(tt.body))
			})
			c := newClient(t, srv.URL, func(c *Config) { c.MaxResponseSize = limit })
			var out map[string]string
			err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/x"}, &out)
			switch tt.wantErr {
			case nil:
				require.NoError(t, err)
				assert.Len(t, out["a"], limit-len(`{"a":""}`))
			case errCutShort:
				require.Error(t, err)
				assert.NotErrorIs(t, err, apierr.ErrResponseTooLarge)
				assert.True(t, Transient(err) || errors.Is(err, context.DeadlineExceeded), "a cut answer may be asked again: %v", err)
			default:
				assert.ErrorIs(t, err, tt.wantErr)
			}
		})
	}
}

var errCutShort = errors.New("cut short")

// BenchmarkReadAnswer reads answers of API sizes, with and without a
// Content-Length, beside io.ReadAll of the same bodies.
func BenchmarkReadAnswer(b *testing.B) {
	for _, size := range []int{1 << 10, 32 << 10} {
		body := bytes.Repeat([]byte("x"), size)
		for _, known := range []bool{false, true} {
			length := int64(-1)
			if known {
				length = int64(size)
			}
			name := fmt.Sprintf("%dKiB/length=%v", size>>10, known)
			b.Run(name+"/ReadAnswer", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					resp := &http.Response{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: length}
					if _, err := ReadAnswer(resp, DefaultMaxResponseSize, "", "/x"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/ReadAll", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := io.ReadAll(bytes.NewReader(body)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
