package sandboxtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func ExampleAccounts() {
	accounts := sandboxtest.NewAccounts()
	script := accounts.Install(sandboxtest.NewScript())
	ctx := context.Background()
	srv, client, err := local.Listen(ctx, local.WithExecutor(script))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	u, err := sb.CreateUser(ctx, "alice")
	if err != nil {
		log.Fatal(err)
	}
	out, _ := u.Command("whoami").Output(ctx)
	fmt.Printf("%q %v\n", out, accounts.Users())
	// Output: "alice\n" [alice root vercel-sandbox]
}

func ExampleAccounts_Executor() {
	// Real processes for everything but the account tools and sudo, which
	// are played: the host's users are never touched.
	exec := sandboxtest.NewAccounts().Executor(hostexec.New())
	ctx := context.Background()
	srv, client, err := local.Listen(ctx, local.WithExecutor(exec))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	g, err := sb.CreateGroup(ctx, "devs")
	fmt.Println(g.SharedDir, err)
	out, _ := sb.Command("echo", "a real echo").Output(ctx)
	fmt.Printf("%s", out)
	// Output:
	// /shared/devs <nil>
	// a real echo
}
