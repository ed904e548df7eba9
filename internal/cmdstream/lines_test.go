package cmdstream

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, r *lineReader) []string {
	t.Helper()
	var out []string
	for {
		line, err := r.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, string(line))
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	r := newLineReader(strings.NewReader("{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\":3}"), 0)
	assert.Equal(t, []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}, readAll(t, r))
}

func TestHugeLine(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 10<<20)
	in := append(append([]byte(`{"d":"`), big...), []byte("\"}\n{}\n")...)
	r := newLineReader(bytes.NewReader(in), 0)
	lines := readAll(t, r)
	require.Len(t, lines, 2)
	assert.Len(t, lines[0], 10<<20+8)
}

func TestMaxLine(t *testing.T) {
	t.Parallel()
	r := newLineReader(strings.NewReader(strings.Repeat("y", 1000)+"\n"), 100)
	_, err := r.Next()
	assert.ErrorIs(t, err, errLineTooLong)
}

// TestLinesAroundBuffer reads lines of about the reader's buffer size,
// which are returned in place or gathered, under a bound and without one.
func TestLinesAroundBuffer(t *testing.T) {
	t.Parallel()
	for _, n := range []int{readerSize - 2, readerSize - 1, readerSize, readerSize + 1, 3*readerSize + 5} {
		line := bytes.Repeat([]byte("z"), n)
		in := bytes.Join([][]byte{line, []byte("a"), line, line}, []byte("\r\n"))
		r := newLineReader(iotest.OneByteReader(bytes.NewReader(in)), 0)
		got := readAll(t, r)
		require.Len(t, got, 4, n)
		assert.Equal(t, []int{n, 1, n, n}, []int{len(got[0]), len(got[1]), len(got[2]), len(got[3])}, n)

		// The bound counts the terminator.
		r = newLineReader(bytes.NewReader(in), n+2)
		got = readAll(t, r)
		assert.Len(t, got, 4, n)

		r = newLineReader(bytes.NewReader(in), n+1)
		_, err := r.Next()
		assert.ErrorIs(t, err, errLineTooLong, n)
	}
}

type failingReader struct{ err error }

func (e failingReader) Read([]byte) (int, error) { return 0, e.err }

func TestReadError(t *testing.T) {
	t.Parallel()
	boom := io.ErrUnexpectedEOF
	r := newLineReader(io.MultiReader(strings.NewReader("{}\n{\"partial"), failingReader{boom}), 0)
	line, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "{}", string(line))
	_, err = r.Next()
	assert.ErrorIs(t, err, boom)
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{}\n{\"a\":1}\n"), 0)
	f.Add([]byte("\n\n\r\n"), 3)
	f.Add([]byte("abc"), 1)
	f.Add([]byte("a\r\r\n\rb\n"), 2)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 {
			max = -max
		}
		r := newLineReader(bytes.NewReader(data), max%64)
		var got [][]byte
		for {
			line, err := r.Next()
			if err != nil {
				if err != io.EOF && err != errLineTooLong {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(bytes.TrimSpace(line)) == 0 {
				t.Fatalf("blank line returned")
			}
			if bytes.ContainsRune(line, '\n') {
				t.Fatalf("line contains newline: %q", line)
			}
			got = append(got, append([]byte(nil), line...))
		}
		if max%64 == 0 {
			// With no bound, the non-blank lines are exactly those of the input.
			var want [][]byte
			for _, l := range bytes.Split(data, []byte("\n")) {
				l = bytes.TrimRight(l, "\r\n")
				if len(bytes.TrimSpace(l)) > 0 {
					want = append(want, l)
				}
			}
			if len(want) != len(got) {
				t.Fatalf("got %d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(bytes.TrimRight(want[i], "\r"), bytes.TrimRight(got[i], "\r")) {
					t.Fatalf("line %d: got %q want %q", i, got[i], want[i])
				}
			}
		}
	})
}
