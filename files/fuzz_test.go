package files

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/tarx"
)

// FuzzTarRoundTrip writes entries with fuzzed names, contents and modes and
// checks that listing the archive gives back the same names and contents,
// and that extraction either reproduces them or fails cleanly.
func FuzzTarRoundTrip(f *testing.F) {
	f.Add("hello.txt\n/etc/app.conf", []byte("hello"), uint16(0o644))
	f.Add("a/../b\n../x\nb", []byte{}, uint16(0o755))
	f.Add(strings.Repeat("long/", 40)+"name\nnäme/日本", []byte("x\x00y"), uint16(0o4777))
	f.Add("dup\n./dup", []byte("d"), uint16(0o600))
	f.Add("a\na/b", []byte("d"), uint16(0))
	f.Add("/\n\x00", []byte("d"), uint16(0o644))
	f.Fuzz(func(t *testing.T, names string, content []byte, mode uint16) {
		list := strings.Split(names, "\n")
		if len(list) > 16 || len(content) > 1<<16 {
			return
		}
		var entries []Entry
		want := map[string]string{}
		for i, n := range list {
			// Each entry gets a different slice of the content.
			c := content[min(i, len(content)):]
			entries = append(entries, FromBytes(n, c).WithMode(fileModeBits(mode)))
			if name, err := archiveName(cwd, n); err == nil {
				want[name] = string(c)
			}
		}
		var buf bytes.Buffer
		err := WriteTarGz(context.Background(), &buf, cwd, entries, atLevel(gzip.BestSpeed))
		if err != nil {
			if !errors.Is(err, apierr.ErrInvalidInput) {
				t.Fatalf("write: unexpected error %v", err)
			}
			if buf.Len() != 0 {
				t.Fatalf("write: %d bytes written before a validation error", buf.Len())
			}
			return
		}
		if len(want) != len(list) {
			t.Fatalf("write accepted %d entries with %d distinct valid names", len(list), len(want))
		}
		got := map[string]string{}
		err = tarx.Walk(bytes.NewReader(buf.Bytes()), func(h tarx.Header, r io.Reader) error {
			checkName(t, h.Name)
			if h.Mode != tarMode(fileModeBits(mode)) {
				t.Fatalf("%s: mode %#o, want %#o", h.Name, h.Mode, tarMode(fileModeBits(mode)))
			}
			var b bytes.Buffer
			_, err := b.ReadFrom(r)
			got[h.Name] = b.String()
			return err
		})
		if err != nil {
			t.Fatalf("walk: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("archive has %d entries, want %d", len(got), len(want))
		}
		for name, c := range want {
			if got[name] != c {
				t.Fatalf("%s: content %q, want %q", name, got[name], c)
			}
		}

		// Extraction must reproduce the files inside its root or fail.
		root := t.TempDir()
		sandbox := filepath.Join(root, "sandbox")
		if err := os.Mkdir(sandbox, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err = tarx.Extract(context.Background(), bytes.NewReader(buf.Bytes()), sandbox, tarx.Options{})
		if entries, _ := os.ReadDir(root); len(entries) != 1 {
			t.Fatalf("extraction wrote outside its root: %v", entries)
		}
		if err != nil {
			return // e.g. a name component longer than the file system allows
		}
		for name, c := range want {
			if fileModeBits(mode)&0o400 == 0 {
				continue // not readable by its owner
			}
			b, err := os.ReadFile(filepath.Join(sandbox, filepath.FromSlash(name)))
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			if string(b) != c {
				t.Fatalf("%s: extracted %q, want %q", name, b, c)
			}
		}
	})
}

// fileModeBits turns fuzzed bits into a valid entry mode.
func fileModeBits(m uint16) os.FileMode { return os.FileMode(m & 0o7777) }
