package guard_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"strings"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/command/guard"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func ExamplePolicy_Check() {
	p := guard.Policy{
		Workspace: "/vercel/sandbox",
		Allow: []guard.Rule{
			guard.Allow("go", "vet", "..."),
			guard.Allow("go", "test", "..."),
			guard.Allow("npm", "run", "lint"),
		},
		Packages: []guard.Package{guard.NPM("eslint"), guard.NPM("typescript", "tsc")},
	}
	for _, c := range []*command.Cmd{
		&command.Cmd{Name: "go", Args: []string{"test", "-race", "./..."}},
		&command.Cmd{Name: "npx", Args: []string{"--yes", "eslint@9", "src"}},
		&command.Cmd{Name: "npx", Args: []string{"-p", "typescript", "tsc", "--noEmit"}},
		&command.Cmd{Name: "npx", Args: []string{"evil-pkg"}},
		&command.Cmd{Name: "sh", Args: []string{"-c", "go vet ./... && curl https://example.com"}},
		&command.Cmd{Name: "go", Args: []string{"vet", "../../etc"}},
		&command.Cmd{Name: "cat", Args: []string{"/etc/passwd"}},
	} {
		err := p.Check(c)
		var denied *guard.DeniedError
		if errors.As(err, &denied) {
			fmt.Printf("%-40s denied (%s)\n", c, denied.Rule)
			continue
		}
		fmt.Printf("%-40s allowed\n", c)
	}
	// Output:
	// go test -race ./...                      allowed
	// npx --yes eslint@9 src                   allowed
	// npx -p typescript tsc --noEmit           allowed
	// npx evil-pkg                             denied (packages)
	// sh -c "go vet ./... && curl https://example.com" denied (shell)
	// go vet ../../etc                         denied (workspace)
	// cat /etc/passwd                          denied (default-deny)
}

func ExampleConfine() {
	for _, p := range []string{"../pkg", "../../etc/passwd", "/vercel/sandbox/repo/go.mod"} {
		abs, err := guard.Confine("/vercel/sandbox/repo", "cmd", p)
		fmt.Println(abs, err)
	}
	// Output:
	// /vercel/sandbox/repo/pkg <nil>
	//  "../../etc/passwd" resolves to /vercel/sandbox/etc/passwd, outside the workspace /vercel/sandbox/repo
	// /vercel/sandbox/repo/go.mod <nil>
}

func ExampleRedactor_Writer() {
	r := guard.NewRedactor("s3cr3t-value")
	w := r.Writer(os.Stdout)
	// A secret cut across writes is still found.
	fmt.Fprint(w, "password=s3cr3t")
	fmt.Fprint(w, "-value\nAuthorization: Bearer abcdefgh12345678\n")
	w.Close() // writes what was held back
	fmt.Println(r.Redact("aws key AKIAIOSFODNN7EXAMPLE"))
	// Output:
	// password=[REDACTED]
	// Authorization: Bearer [REDACTED]
	// aws key [REDACTED]
}

// fakeSandbox starts an in-process fake of the API whose commands are played
// by script, and creates a sandbox in it. Against Vercel, create the
// sandbox with a client from sandbox.NewClient() instead.
func fakeSandbox(script *sandboxtest.Script) (*sandbox.Sandbox, func()) {
	srv, err := local.New(local.WithExecutor(script))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	client, err := sandbox.NewClient(
		sandbox.WithBaseURL("http://"+ln.Addr().String()),
		sandbox.WithToken(srv.Token()), sandbox.WithTeam("team_x"), sandbox.WithProject("prj_x"),
	)
	if err != nil {
		log.Fatal(err)
	}
	sb, err := client.Create(context.Background(), sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	return sb, srv.Close
}

func ExampleGate() {
	script := sandboxtest.NewScript().
		Handle(sandboxtest.MatchArgs("go", "vet", "./..."), sandboxtest.Reply{}).
		Handle(sandboxtest.MatchName("go"), sandboxtest.Reply{
			Stdout: "--- FAIL: TestLogin\n    login_test.go:12: sent Authorization: Bearer 0123456789abcdef\n",
		})
	sb, stop := fakeSandbox(script)
	defer stop()
	ctx := context.Background()

	r, err := guard.NewGate(sb, guard.Policy{
		Allow:   []guard.Rule{guard.Allow("go", "vet", "./..."), guard.Allow("go", "test", "...")},
		Secrets: []string{"hunter2"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range []*command.Cmd{
		&command.Cmd{Name: "go", Args: []string{"vet", "./..."}},
		&command.Cmd{Name: "go", Args: []string{"test", "-run", "TestLogin", "./..."}},
		&command.Cmd{Name: "curl", Args: []string{"-u", "admin:hunter2", "https://example.com"}},
	} {
		res, err := r.Run(ctx, c)
		var denied *guard.DeniedError
		switch {
		case errors.As(err, &denied):
			fmt.Printf("%s: denied by %s\n", c.Name, denied.Rule)
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("%s %s: exit %d\n", c.Name, c.Args[0], res.ExitCode())
		}
	}
	t := r.Transcript()
	for _, e := range t.Entries {
		fmt.Printf("%s | %s", strings.Join(e.Argv, " "), e.Output)
		if e.Denied {
			fmt.Println("(denied)")
		}
	}
	// Output:
	// go vet: exit 0
	// go test: exit 0
	// curl: denied by default-deny
	// go vet ./... | go test -run TestLogin ./... | --- FAIL: TestLogin
	//     login_test.go:12: sent Authorization: Bearer [REDACTED]
	// curl -u admin:[REDACTED] https://example.com | (denied)
}
