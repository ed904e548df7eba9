// Command task-control shows how a task system controls work running in a
// sandbox:
//
//  1. stop from another process: the task's sandbox name and session id are
//     stored; a stopper that knows only those (a new client, a store read
//     from disk) marks the task stopped, even if terminating the sandbox
//     then fails, and stops it (410, already stopped, counts as success).
//     The running task polls its stop flag and ends within 2 s, its
//     command killed;
//
//  2. an inactivity timeout: a command silent for too long is killed
//     (60 s by default; 1 s here);
//
//  3. an overall deadline that kills the command, stops the sandbox, and
//     refuses every later step;
//
//  4. reuse or recreate: a health probe decides whether a kept-alive
//     sandbox is reused, resumed (its session stopped: 410) or created.
//
//     go run ./examples/task-control                       # all four demos
//     go run ./examples/task-control stop -store F -task T # stop a task from another process
//
// With Vercel credentials it uses Vercel; without them, the embedded local
// server (local processes, no isolation). The store is a JSON file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/examples/internal/backend"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func main() {
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "stop" {
		fs := flag.NewFlagSet("stop", flag.ExitOnError)
		storePath := fs.String("store", "", "the task store (JSON file)")
		task := fs.String("task", "", "the task id")
		_ = fs.Parse(os.Args[2:])
		client, err := sandbox.NewClient() // credentials from the environment
		if err != nil {
			log.Fatalf("task-control: %v", err)
		}
		if err := stopTask(ctx, os.Stdout, &Store{Path: *storePath}, client, *task); err != nil {
			log.Fatalf("task-control: %v", err)
		}
		return
	}
	local := backend.LocalFlag()
	flag.Parse()
	dir, err := os.MkdirTemp("", "task-control-")
	if err != nil {
		log.Fatalf("task-control: %v", err)
	}
	defer os.RemoveAll(dir)
	env, closeFn, err := connect(ctx, os.Stderr, *local)
	if err != nil {
		log.Fatalf("task-control: %v", err)
	}
	defer closeFn()
	if err := run(ctx, os.Stdout, env, &Store{Path: filepath.Join(dir, "tasks.json")}); err != nil {
		closeFn()
		os.RemoveAll(dir)
		log.Fatalf("task-control: %v", err)
	}
}

// Env is where the demo runs: NewClient makes an independent client, as
// another process would have.
type Env struct {
	NewClient func(opts ...sandbox.Option) (*sandbox.Client, error)
	// Inactivity is the inactivity timeout of demo 2.
	Inactivity time.Duration
}

// connect opens Vercel when credentials are found, and an embedded local
// server otherwise (see package backend); it says which on w.
func connect(ctx context.Context, w io.Writer, forceLocal bool) (Env, func(), error) {
	b, err := backend.Open(ctx, w, forceLocal)
	if err != nil {
		return Env{}, nil, err
	}
	return Env{NewClient: b.NewClient, Inactivity: time.Second}, b.Close, nil
}

// Record is a task as the store keeps it.
type Record struct {
	Ref           workload.TaskRef `json:"ref"`
	Status        string           `json:"status"` // running, stopped, done, failed
	StopRequested bool             `json:"stopRequested"`
	StopOutcome   string           `json:"stopOutcome,omitempty"`
	StopError     string           `json:"stopError,omitempty"`
}

// Store keeps task records in a JSON file, standing in for a database
// shared by several processes. (A real one would use transactions; this one
// only serialises the callers of one Store value.)
type Store struct {
	Path string
	mu   sync.Mutex
}

func (s *Store) load() (map[string]Record, error) {
	m := map[string]Record{}
	b, err := os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	return m, json.Unmarshal(b, &m)
}

// Update applies fn to the task's record and saves it.
func (s *Store) Update(id string, fn func(*Record)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return err
	}
	r := m[id]
	fn(&r)
	m[id] = r
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.Path)
}

// Get returns the task's record.
func (s *Store) Get(id string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return Record{}, err
	}
	r, ok := m[id]
	if !ok {
		return r, fmt.Errorf("no task %q", id)
	}
	return r, nil
}

// stopTask is the stop endpoint of the task system: it marks the task
// stopped first, so that the task counts as stopped even when terminating
// its sandbox fails, then stops the sandbox by its stored ids only.
func stopTask(ctx context.Context, out io.Writer, store *Store, client *sandbox.Client, id string) error {
	rec, err := store.Get(id)
	if err != nil {
		return err
	}
	if err := store.Update(id, func(r *Record) { r.StopRequested, r.Status = true, "stopped" }); err != nil {
		return err
	}
	outcome, err := workload.StopTask(ctx, client, rec.Ref)
	uerr := store.Update(id, func(r *Record) {
		r.StopOutcome = string(outcome)
		if err != nil {
			r.StopError = string(workload.ErrorCodeOf(err)) // a code, not server text
		}
	})
	if err != nil {
		fmt.Fprintf(out, "    task %s marked stopped; terminating its sandbox failed (%s), recorded for a retry\n", id, workload.ErrorCodeOf(err))
		return uerr
	}
	fmt.Fprintf(out, "    task %s marked stopped; sandbox: %s\n", id, outcome)
	return uerr
}

func step(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "==> "+format+"\n", args...)
}

func run(ctx context.Context, out io.Writer, env Env, store *Store) error {
	client, err := env.NewClient()
	if err != nil {
		return err
	}
	for _, demo := range []func(context.Context, io.Writer, Env, *Store, *sandbox.Client) error{
		demoStop, demoInactivity, demoDeadline, demoReuse,
	} {
		if err := demo(ctx, out, env, store, client); err != nil {
			return err
		}
	}
	return nil
}

// demoStop: a task stopped by another process through the store.
func demoStop(ctx context.Context, out io.Writer, env Env, store *Store, client *sandbox.Client) error {
	step(out, "1. stop from another process")
	sb, err := workload.Create(ctx, client, sandbox.CreateParams{Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	const id = "task-1"
	if err := store.Update(id, func(r *Record) { *r = Record{Ref: workload.RefOf(sb), Status: "running"} }); err != nil {
		return err
	}
	task := workload.NewTask(sb, workload.TaskOptions{
		PollInterval: 200 * time.Millisecond,
		StopRequested: func(context.Context) (bool, error) {
			r, err := store.Get(id)
			return r.StopRequested, err
		},
	})

	// The other process: its own client and store handle, and only the ids.
	var requested time.Time
	var wg sync.WaitGroup
	wg.Add(1)
	stopErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		time.Sleep(time.Second)
		other, err := env.NewClient()
		if err != nil {
			stopErr <- err
			return
		}
		requested = time.Now()
		fmt.Fprintln(out, "    another process requests the stop")
		stopErr <- stopTask(ctx, out, &Store{Path: store.Path}, other, id)
	}()
	fmt.Fprintf(out, "    task %s runs in sandbox %s, session %s\n", id, sb.Name(), sb.SessionID())
	_, err = task.Run(ctx, &command.Cmd{Name: "sh", Args: []string{"-c", "while :; do echo working; sleep 0.3; done"}})
	ended := time.Now()
	wg.Wait()
	if err := <-stopErr; err != nil {
		return err
	}
	if !errors.Is(err, workload.ErrStopped) {
		return fmt.Errorf("the task should have been stopped, got %v", err)
	}
	fmt.Fprintf(out, "    the task ended %s after the stop request: %s (within 2 s: %t)\n",
		ended.Sub(requested).Round(10*time.Millisecond), workload.ErrorCodeOf(err), ended.Sub(requested) < 2*time.Second)

	// Stopping again: already stopped is success.
	if err := stopTask(ctx, out, store, client, id); err != nil {
		return err
	}
	// Terminating can fail (here: the API is unreachable); the task is
	// marked stopped all the same.
	const id2 = "task-2"
	if err := store.Update(id2, func(r *Record) { *r = Record{Ref: workload.TaskRef{SessionID: "sbx_unreachable"}, Status: "running"} }); err != nil {
		return err
	}
	broken, err := env.NewClient(sandbox.WithRetryPolicy(sandbox.RetryPolicy{MaxRetries: -1}),
		sandbox.WithMiddleware(func(*http.Request, sandbox.RoundTripFunc) (*http.Response, error) {
			return nil, errors.New("connection refused")
		}))
	if err != nil {
		return err
	}
	if err := stopTask(ctx, out, store, broken, id2); err != nil {
		return err
	}
	rec, err := store.Get(id2)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    store: task %s status=%s stopError=%s\n", id2, rec.Status, rec.StopError)
	return nil
}

// demoInactivity: a command that goes silent is killed.
func demoInactivity(ctx context.Context, out io.Writer, env Env, _ *Store, client *sandbox.Client) error {
	step(out, "2. inactivity timeout (default %s; %s here)", workload.DefaultInactivityTimeout, env.Inactivity)
	sb, err := workload.Create(ctx, client, sandbox.CreateParams{Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	task := workload.NewTask(sb, workload.TaskOptions{InactivityTimeout: env.Inactivity})
	start := time.Now()
	_, err = task.Run(ctx, &command.Cmd{Name: "sh", Args: []string{"-c", "echo 'thinking...'; sleep 600"}})
	if !errors.Is(err, workload.ErrInactive) {
		return fmt.Errorf("expected an inactivity timeout, got %v", err)
	}
	fmt.Fprintf(out, "    the silent command was killed after %s: %s; sandbox stopped: %t\n",
		time.Since(start).Round(100*time.Millisecond), workload.ErrorCodeOf(err), task.StopErr() == nil)
	return nil
}

// demoDeadline: the deadline kills the command and no later step runs.
func demoDeadline(ctx context.Context, out io.Writer, _ Env, _ *Store, client *sandbox.Client) error {
	step(out, "3. overall deadline")
	sb, err := workload.Create(ctx, client, sandbox.CreateParams{Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	task := workload.NewTask(sb, workload.TaskOptions{Deadline: time.Now().Add(2 * time.Second)})
	_, err = task.Run(ctx, &command.Cmd{Name: "sh", Args: []string{"-c", "echo 'long work'; sleep 600"}})
	fmt.Fprintf(out, "    long step: %s\n", workload.ErrorCodeOf(err))
	followUpRan := false
	err = task.Do(ctx, "publish results", func(ctx context.Context, sb *sandbox.Sandbox) error {
		followUpRan = true
		return sb.FS().WriteFile(ctx, "published.txt", []byte("too late"), 0o644)
	})
	fmt.Fprintf(out, "    follow-up step: %s (ran: %t)\n", workload.ErrorCodeOf(err), followUpRan)
	if followUpRan || !errors.Is(err, workload.ErrTaskEnded) {
		return errors.New("a step ran after the deadline")
	}
	h, err := client.Health(ctx, sb.Name(), sandbox.HealthParams{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    sandbox after the deadline: %s\n", h.State)
	return nil
}

// demoReuse: a health probe decides between reuse and recreation.
func demoReuse(ctx context.Context, out io.Writer, _ Env, _ *Store, client *sandbox.Client) error {
	step(out, "4. reuse or recreate a kept-alive sandbox")
	p := sandbox.CreateParams{Name: sandbox.NewName("keepalive-"), Timeout: 5 * time.Minute}
	var last *sandbox.Sandbox
	for i, before := range []func() error{
		func() error { return nil },
		func() error { return nil },
		func() error { // the session stops (timeout, or another process)
			_, err := workload.StopTask(ctx, client, workload.RefOf(last))
			return err
		},
	} {
		if err := before(); err != nil {
			return err
		}
		a, err := workload.Acquire(ctx, client, p, sandbox.HealthParams{})
		if err != nil {
			return err
		}
		last = a.Sandbox
		fmt.Fprintf(out, "    round %d: probe %s -> %s (session %s)\n", i+1, a.Health.State, a.Decision, a.Sandbox.SessionID())
	}
	_, err := workload.StopTask(ctx, client, workload.RefOf(last))
	if err == nil {
		err = client.Delete(context.WithoutCancel(ctx), p.Name, sandbox.DeleteParams{})
	}
	return err
}
