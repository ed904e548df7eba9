package files_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"

	"github.com/sbx-go/vercel-sandbox/files"
)

// Write a tar.gz of two entries, as fs/write expects it, and list it.
func Example() {
	entries := []files.Entry{
		files.FromBytes("hello.txt", []byte("hello, sandbox\n")),
		files.FromBytes("/etc/app.conf", []byte("debug = true\n")).WithMode(0o600),
	}
	var buf bytes.Buffer
	if err := files.WriteTarGz(context.Background(), &buf, "/vercel/sandbox", entries, files.WriteParams{}); err != nil {
		log.Fatal(err)
	}

	zr, err := gzip.NewReader(&buf)
	if err != nil {
		log.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %d bytes mode %#o\n", h.Name, h.Size, h.Mode)
	}
	// Output:
	// vercel/sandbox/hello.txt 15 bytes mode 0644
	// etc/app.conf 13 bytes mode 0600
}

// Archive a local project, without its .git directory and following links
// that stay inside it, into a file.
func ExampleFromDir() {
	entries, err := files.FromDir("app", "./myproject", files.TreeParams{
		Symlinks: files.FollowSymlinks,
		Filter:   func(rel string, d fs.DirEntry) bool { return d.Name() != ".git" },
	})
	if err != nil {
		log.Fatal(err)
	}
	out, err := os.Create("myproject.tar.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	err = files.WriteTarGz(context.Background(), out, "/vercel/sandbox", entries,
		files.WriteParams{Level: gzip.BestSpeed, Progress: func(p files.Progress) {
			fmt.Fprintf(os.Stderr, "%d/%d bytes (%s)\n", p.Bytes, p.TotalBytes, p.Name)
		}})
	if err != nil {
		log.Fatal(err)
	}
}
