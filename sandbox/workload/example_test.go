package workload_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

// exampleServer returns a fake with a few scripted commands; a real program
// uses sandbox.NewClient() instead.
func exampleServer() (*sandbox.Client, func()) {
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("npm"), sandboxtest.Reply{Stdout: "added 1 package\n"})
	script.Handle(sandboxtest.MatchName("node"), sandboxtest.Reply{Stdout: "hello\n"})
	script.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{}) // health probes
	script.Handle(sandboxtest.MatchName("agent"), sandboxtest.Steps{}.Stdout("working\n").Block())
	srv, err := local.New(local.WithExecutor(script))
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln) //nolint:errcheck // returns after Close
	c, err := sandbox.NewClient(sandbox.WithBaseURL("http://"+ln.Addr().String()), sandbox.WithToken(srv.Token()), sandbox.WithTeam("team_x"), sandbox.WithProject("prj_x"))
	if err != nil {
		panic(err)
	}
	return c, srv.Close
}

func ExampleRunner() {
	client, done := exampleServer()
	defer done()

	r := &workload.Runner{Client: client}
	rep, err := r.Run(context.Background(), workload.Job{
		Sandbox: sandbox.CreateParams{Runtime: "node24", VCPUs: 4, Timeout: 10 * time.Minute},
		Timeout: 10 * time.Minute,
		Setup: []workload.Step{
			workload.CommandStep("install", &command.Cmd{Name: "npm", Args: []string{"install", "left-pad"}}),
			workload.WriteFilesStep("write script", files.FromBytes("main.mjs", []byte(`console.log("hello")`))),
		},
		Name: "script",
		Execute: func(ctx context.Context, sb *sandbox.Sandbox) (*workload.Usage, error) {
			out, err := sb.Command("node", "main.mjs").Output(ctx)
			fmt.Print(string(out))
			return nil, err
		},
	})
	if err != nil {
		var we *workload.Error
		if errors.As(err, &we) {
			fmt.Println(we.Code, we.UserMessage())
		}
		return
	}
	for _, p := range rep.Phases {
		fmt.Println(p.Phase, p.Step, p.Outcome())
	}
	// Output:
	// hello
	// create  ok
	// setup install ok
	// setup write script ok
	// execute script ok
	// stop  ok
}

func ExampleCodeExecutor() {
	client, done := exampleServer()
	defer done()

	x := &workload.CodeExecutor{Runner: &workload.Runner{Client: client}}
	res, err := x.Execute(context.Background(), workload.CodeInput{Code: `console.log("hello")`, TimeoutMs: 5000})
	fmt.Println(res.OK, *res.ExitCode, res.Stdout == "hello\n", err)

	res, err = x.Execute(context.Background(), workload.CodeInput{Code: "x", VCPUs: 3})
	fmt.Println(res.OK, res.Error.Code, errors.Is(err, workload.ErrInvalidInput))
	// Output:
	// true 0 true <nil>
	// false INVALID_INPUT true
}

func ExampleTask() {
	client, done := exampleServer()
	defer done()
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	task := workload.NewTask(sb, workload.TaskOptions{
		Deadline: time.Now().Add(300 * time.Millisecond),
	})
	_, err = task.Run(ctx, &command.Cmd{Name: "agent"})
	fmt.Println(workload.ErrorCodeOf(err))
	// The deadline passed: no later step runs.
	_, err = task.Run(ctx, &command.Cmd{Name: "node", Args: []string{"cleanup.mjs"}})
	fmt.Println(workload.ErrorCodeOf(err), errors.Is(err, workload.ErrTimeout))
	// Output:
	// SANDBOX_TIMEOUT
	// TASK_ENDED true
}

func ExampleStopTask() {
	client, done := exampleServer()
	defer done()
	ctx := context.Background()

	sb, _ := client.Create(ctx, sandbox.CreateParams{})
	ref := workload.RefOf(sb) // stored by the process that started the task

	// Later, from any process:
	out, err := workload.StopTask(ctx, client, ref)
	fmt.Println(out, err)
	out, err = workload.StopTask(ctx, client, ref)
	fmt.Println(out, err)
	out, err = workload.StopTask(ctx, client, workload.TaskRef{SandboxName: "unknown"})
	fmt.Println(out, err)
	// Output:
	// stopped <nil>
	// already_stopped <nil>
	// not_found <nil>
}

func ExampleAcquire() {
	client, done := exampleServer()
	defer done()
	ctx := context.Background()
	p := sandbox.CreateParams{Name: "kept-alive"}

	for range 2 {
		a, err := workload.Acquire(ctx, client, p, sandbox.HealthParams{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(a.Decision)
	}
	// Output:
	// created
	// reused
}
