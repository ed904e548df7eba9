package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"strings"
	"text/template"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// exampleSandbox starts an in-process fake whose commands are real
// processes (account tools are played, never run on the host), creates a
// sandbox holding a few files and returns it. Against the real API, use
// sandbox.NewClient() and Client.Create instead.
func exampleSandbox() (*sandbox.Sandbox, *sandbox.Client, func()) {
	client, stop := fakeWith(sandboxtest.NewAccounts().Executor(hostexec.New()))
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	err = sb.FS().WriteFiles(ctx, []files.Entry{
		files.FromBytes("app/main.go", []byte("package main\n")),
		files.FromBytes("app/README.md", []byte("# app\n")),
		files.FromBytes("app/web/index.tmpl", []byte(`{{define "index"}}Hello, {{.}}!{{end}}`)),
	}, files.WriteParams{})
	if err != nil {
		log.Fatal(err)
	}
	return sb, client, stop
}

func ExampleFileSystem_Stat() {
	sb, _, stop := exampleSandbox()
	defer stop()
	fi, err := sb.FS().Stat(context.Background(), "app/main.go")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fi.Name(), fi.Size(), fi.Mode())
	_, err = sb.FS().Stat(context.Background(), "app/missing.go")
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// main.go 13 -rw-r--r--
	// true
}

func ExampleFileSystem_Lstat() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	if err := sb.FS().Symlink(ctx, "main.go", "app/entry"); err != nil {
		log.Fatal(err)
	}
	fi, err := sb.FS().Lstat(ctx, "app/entry")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fi.Mode().Type() == fs.ModeSymlink, fi.Sys().(*sandbox.FileStat).LinkTarget)
	// Output: true main.go
}

func ExampleFileSystem_ReadDir() {
	sb, _, stop := exampleSandbox()
	defer stop()
	entries, err := sb.FS().ReadDir(context.Background(), "app")
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Println(e.Name(), e.IsDir())
	}
	// Output:
	// README.md false
	// main.go false
	// web true
}

func ExampleFileSystem_Walk() {
	sb, _, stop := exampleSandbox()
	defer stop()
	n := 0
	for e, err := range sb.FS().Walk(context.Background(), "app") {
		if err != nil {
			log.Fatal(err)
		}
		if !e.IsDir() {
			n++
		}
	}
	fmt.Println(n, "files")
	// Output: 3 files
}

func ExampleFileSystem_Remove() {
	sb, _, stop := exampleSandbox()
	defer stop()
	err := sb.FS().Remove(context.Background(), "app/web")
	fmt.Println(err != nil, "(the directory is not empty)")
	fmt.Println(sb.FS().Remove(context.Background(), "app/README.md"))
	// Output:
	// true (the directory is not empty)
	// <nil>
}

func ExampleFileSystem_RemoveAll() {
	sb, _, stop := exampleSandbox()
	defer stop()
	fmt.Println(sb.FS().RemoveAll(context.Background(), "app"))
	_, err := sb.FS().Stat(context.Background(), "app")
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// <nil>
	// true
}

func ExampleFileSystem_Rename() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	if err := sb.FS().Rename(ctx, "app/README.md", "app/README.txt"); err != nil {
		log.Fatal(err)
	}
	_, err := sb.FS().Stat(ctx, "app/README.txt")
	fmt.Println(err)
	// Output: <nil>
}

func ExampleFileSystem_Chmod() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	if err := sb.FS().Chmod(ctx, "app/main.go", 0o600); err != nil {
		log.Fatal(err)
	}
	fi, _ := sb.FS().Stat(ctx, "app/main.go")
	fmt.Println(fi.Mode())
	// Output: -rw-------
}

func ExampleFileSystem_Chown() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	fi, _ := sb.FS().Stat(ctx, "app/main.go")
	st := fi.Sys().(*sandbox.FileStat)
	// Keep the owner, set the group (-1 leaves a value unchanged).
	fmt.Println(sb.FS().Chown(ctx, "app/main.go", -1, st.GID))
	// Output: <nil>
}

func ExampleFileSystem_Symlink() {
	sb, _, stop := exampleSandbox()
	defer stop()
	err := sb.FS().Symlink(context.Background(), "main.go", "app/README.md")
	fmt.Println(errors.Is(err, fs.ErrExist))
	// Output: true
}

func ExampleFileSystem_Readlink() {
	sb, _, stop := exampleSandbox()
	defer stop()
	ctx := context.Background()
	if err := sb.FS().Symlink(ctx, "web/index.tmpl", "app/current"); err != nil {
		log.Fatal(err)
	}
	target, err := sb.FS().Readlink(ctx, "app/current")
	fmt.Println(target, err)
	// Output: web/index.tmpl <nil>
}

func ExampleFileSystem_MkdirTemp() {
	sb, _, stop := exampleSandbox()
	defer stop()
	dir, err := sb.FS().MkdirTemp(context.Background(), "app", "build-*.d")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(dir, "app/build-"), strings.HasSuffix(dir, ".d"))
	// Output: true true
}

func ExampleFileSystem_DirFS() {
	sb, _, stop := exampleSandbox()
	defer stop()
	// The view carries the context of its calls.
	fsys := sb.FS().DirFS(context.Background(), "app")
	matches, err := fs.Glob(fsys, "*.md")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(matches)
	tmpl := template.Must(template.ParseFS(fsys, "web/*.tmpl"))
	var out strings.Builder
	if err := tmpl.ExecuteTemplate(&out, "index", "gopher"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.String())
	// Output:
	// [README.md]
	// Hello, gopher!
}
