package backend

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrefixed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"empty", nil, ""},
		{"empty write", []string{""}, ""},
		{"one line", []string{"a\n"}, "> a\n"},
		{"no final newline", []string{"a\nb"}, "> a\n> b"},
		{"lines across writes", []string{"a", "b\nc", "", "\n", "d\n"}, "> ab\n> c\n> d\n"},
		{"empty lines", []string{"\n\n"}, "> \n> \n"},
		{"newline alone then text", []string{"\n", "x"}, "> \n> x"},
		{"split character", []string{"caf\xc3", "\xa9\n"}, "> café\n"},
		{"invalid bytes pass through", []string{"\xff\xfe\n"}, "> \xff\xfe\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := Prefixed(&out, "> ")
			for _, s := range tc.writes {
				n, err := w.Write([]byte(s))
				require.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			assert.Equal(t, tc.want, out.String())
		})
	}
}

// failAfter accepts limit bytes, then fails.
type failAfter struct {
	out   bytes.Buffer
	limit int
}

var errFull = errors.New("full")

func (f *failAfter) Write(b []byte) (int, error) {
	room := f.limit - f.out.Len()
	if room >= len(b) {
		return f.out.Write(b)
	}
	f.out.Write(b[:max(room, 0)])
	return max(room, 0), errFull
}

func TestPrefixedWriteError(t *testing.T) {
	for _, tc := range []struct {
		limit int
		wantN int
	}{
		{0, 0},  // nothing written
		{1, 0},  // part of the prefix
		{2, 0},  // the prefix only
		{4, 2},  // "> ab"
		{6, 3},  // "> ab\n>": the prefix of the next line is not input
		{8, 4},  // "> ab\n> c"
		{99, 5}, // everything
	} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			f := &failAfter{limit: tc.limit}
			n, err := Prefixed(f, "> ").Write([]byte("ab\ncd"))
			assert.Equal(t, tc.wantN, n)
			if tc.wantN < 5 {
				assert.ErrorIs(t, err, errFull)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// shortWriter reports fewer bytes than given, without an error.
type shortWriter struct{}

func (shortWriter) Write(b []byte) (int, error) { return len(b) / 2, nil }

func TestPrefixedShortWrite(t *testing.T) {
	_, err := Prefixed(shortWriter{}, "> ").Write([]byte("abcd\n"))
	assert.ErrorIs(t, err, io.ErrShortWrite)
}

func TestPrefixedConcurrent(t *testing.T) {
	var out bytes.Buffer
	w := Prefixed(&out, "| ")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				fmt.Fprintf(w, "writer %d line %d\n", i, j)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 8*50)
	for _, l := range lines {
		assert.Regexp(t, `^\| writer \d line \d+$`, l)
	}
}
