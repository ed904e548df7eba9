package sandboxtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"regexp"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// A Script plays registered handlers instead of running processes. Here it is
// driven directly through its Executor interface; in a test it is given to
// the fake server, which calls it for every command a client runs.
func ExampleScript() {
	script := sandboxtest.NewScript()
	script.
		Handle(sandboxtest.MatchArgs("node", "--version"), sandboxtest.Reply{Stdout: "v24.0.0\n"}).
		Handle(sandboxtest.MatchRegexp(regexp.MustCompile(`^npm (ci|install)\b`)), sandboxtest.Steps{}.
			Stdout("added 1 package\n").
			Sleep(10*time.Millisecond).
			Stderr("npm warn deprecated\n").
			Exit(0)).
		Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())

	// A per-test override wins over what was registered before.
	restore := script.Override(sandboxtest.MatchArgs("node", "--version"), sandboxtest.Reply{Stderr: "node: not installed\n", ExitCode: 1})
	defer restore()

	run := func(name string, args ...string) {
		var stdout, stderr bytes.Buffer
		p, err := script.Start(context.Background(), &local.Cmd{
			Name: name, Args: args, Cwd: "/vercel/sandbox",
			Stdout: &stdout, Stderr: &stderr,
		})
		if err != nil {
			fmt.Println("start:", err)
			return
		}
		code, _ := p.Wait()
		fmt.Printf("%s: exit %d, stdout %q, stderr %q\n", name, code, stdout.String(), stderr.String())
	}
	run("npm", "ci")
	run("node", "--version")
	run("echo", "hello")
	run("python3", "-V")

	fmt.Println("calls:", len(script.Calls()))
	for _, c := range script.Unmatched() {
		fmt.Println("unmatched:", c.CommandLine())
	}
	// Output:
	// npm: exit 0, stdout "added 1 package\n", stderr "npm warn deprecated\n"
	// node: exit 1, stdout "", stderr "node: not installed\n"
	// echo: exit 0, stdout "hello\n", stderr ""
	// python3: exit 127, stdout "", stderr "python3: command not found (sandboxtest.Script: no handler matched \"python3 -V\", 4 registered)\n"
	// calls: 4
	// unmatched: python3 -V
}

// The file calls that run commands work on a scripted server as they do
// on Vercel: the Script plays find, mktemp, rm and the like itself, on
// the sandbox's files, unless a handler of the test matches first.
func ExampleScript_fileCalls() {
	ctx := context.Background()
	script := sandboxtest.NewScript()
	srv, client, err := local.Listen(ctx, local.WithExecutor(script))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	fsys := sb.FS()
	if err := fsys.WriteFile(ctx, "src/main.go", []byte("package main\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	fi, err := fsys.Stat(ctx, "src/main.go")
	fmt.Println(fi.Name(), fi.Size(), fi.Mode(), err)
	for e, err := range fsys.Walk(ctx, "src") {
		fmt.Println("walk:", e.Path, err)
	}
	dir, err := fsys.MkdirTemp(ctx, "", "build-*")
	fmt.Println(strings.HasPrefix(dir, "/tmp/build-"), err)
	fmt.Println(fsys.RemoveAll(ctx, "src"))
	_, err = fsys.Stat(ctx, "src")
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	fmt.Println("unmatched:", len(script.Unmatched()))
	// Output:
	// main.go 13 -rw-r--r-- <nil>
	// walk: src/main.go <nil>
	// true <nil>
	// <nil>
	// true
	// unmatched: 0
}
