package sandbox_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// fake starts an in-process fake of the API whose commands are played by
// script, and returns a client aimed at it. Against the real API, use
// sandbox.NewClient() with credentials from the environment instead.
func fake(script *sandboxtest.Script) (*sandbox.Client, func()) {
	return fakeWith(script)
}

// fakeWith is fake with any executor.
func fakeWith(exec local.Executor) (*sandbox.Client, func()) {
	srv, err := local.New(local.WithExecutor(exec))
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
	return client, srv.Close
}

func ExampleClient_Create() {
	client, stop := fake(sandboxtest.NewScript())
	defer stop()
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{
		Name:  "demo",
		Ports: []int{3000},
		Env:   map[string]string{"NODE_ENV": "production"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sb.Name(), sb.Session().Status, sb.Cwd())
	for _, r := range sb.Routes() {
		fmt.Println("port", r.Port, "exposed")
	}
	// Output:
	// demo running /vercel
	// port 3000 exposed
}

// Run a command and stream its output, as os/exec does locally.
func ExampleSandbox_Command() {
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	client, stop := fake(script)
	defer stop()
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	cmd := sb.Command("echo", "hello")
	cmd.Stdout = os.Stdout // output is streamed as it arrives
	res, err := cmd.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit code:", res.ExitCode())
	// Output:
	// hello
	// exit code: 0
}

// Start a command detached, and wait for it: its result holds its output,
// as that of Run does.
func ExampleSandbox_Command_start() {
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("npm"), sandboxtest.Steps{}.
		Stdout("building...\n").
		Stderr("npm warn deprecated\n").
		Stdout("done\n"))
	client, stop := fake(script)
	defer stop()
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	h, err := sb.Command("npm", "run", "build").Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// h.Ref().String() can be stored and reattached from another process
	// with command.ParseRef and Client.Attach.
	res, err := h.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit code:", res.ExitCode())
	fmt.Printf("stdout: %q\nstderr: %q\n", res.Stdout, res.Stderr)
	// Output:
	// exit code: 0
	// stdout: "building...\ndone\n"
	// stderr: "npm warn deprecated\n"
}

func ExampleFileSystem_WriteFiles() {
	client, stop := fake(sandboxtest.NewScript())
	defer stop()
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	err = sb.FS().WriteFiles(ctx, []files.Entry{
		files.FromBytes("app/main.py", []byte("print('hi')\n")),
		files.FromBytes("app/run.sh", []byte("#!/bin/sh\npython3 main.py\n")).WithMode(0o755),
		files.FromBytes("/etc/app.conf", []byte("debug=false\n")),
	}, files.WriteParams{})
	if err != nil {
		log.Fatal(err)
	}
	data, err := sb.FS().ReadFile(ctx, "app/main.py")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", data)
	data, err = sb.FS().ReadFile(ctx, "/etc/app.conf")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", data)
	// Output:
	// print('hi')
	// debug=false
}

func ExampleClient_StopSession() {
	client, stop := fake(sandboxtest.NewScript())
	defer stop()
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "worker"})
	if err != nil {
		log.Fatal(err)
	}
	// Another process knows only the session id it stored.
	sessionID := sb.SessionID()

	res, err := client.StopSession(ctx, sessionID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Session.Status, res.Session.ID == sessionID)
	// Stopping again is not an error.
	res, err = client.Stop(ctx, "worker")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Session.Status, "already stopped:", res.AlreadyStopped)
	// Output:
	// stopped true
	// stopped already stopped: true
}

func ExampleSandbox_Health() {
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	client, stop := fake(script)
	defer stop()
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	h, err := sb.Health(ctx, sandbox.HealthParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.State, "recreate:", h.ShouldRecreate)

	if _, err := sb.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	h, err = sb.Health(ctx, sandbox.HealthParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.State, "recreate:", h.ShouldRecreate)
	// Output:
	// healthy recreate: false
	// stopped recreate: true
}
