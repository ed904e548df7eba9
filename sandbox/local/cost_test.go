//go:build linux

package local_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// costEnv names a sandboxtest-server binary for TestCommandCost, which
// runs only when it is set:
//
//	go build -o "$PWD/server" ./sandbox/sandboxtest/cmd/sandboxtest-server
//	LOCAL_COST_SERVER="$PWD/server" go test ./sandbox/local -run '^TestCommandCost$' -v
//
// LOCAL_COST_COMMANDS (default 300) and LOCAL_COST_SANDBOXES (default 1)
// set how many attached runs of true, over how many sandboxes at once.
// Built from two commits and measured in turn, two servers compare with
// the same client.
const costEnv = "LOCAL_COST_SERVER"

// TestCommandCost starts the server binary named by LOCAL_COST_SERVER with
// the host executor, runs attached runs of true through this client, and
// prints the server's CPU time per command (its own and its children's,
// the commands included) and the wall time per command.
func TestCommandCost(t *testing.T) {
	bin := os.Getenv(costEnv)
	if bin == "" {
		t.Skip("set " + costEnv + " to a sandboxtest-server binary to measure what a command costs it")
	}
	n, sandboxes := envSize(t, "LOCAL_COST_COMMANDS", 300), envSize(t, "LOCAL_COST_SANDBOXES", 1)
	if n < 1 || sandboxes < 1 {
		t.Fatal("LOCAL_COST_COMMANDS and LOCAL_COST_SANDBOXES must be positive")
	}
	srv := exec.Command(bin, "--executor", "host")
	lines := startReading(t, srv)
	if !lines.Scan() {
		t.Fatalf("the server printed no address: %v", lines.Err())
	}
	url := strings.TrimPrefix(lines.Text(), "listening on ")
	go func() {
		for lines.Scan() {
		}
	}()
	c, err := sandbox.NewClient(sandbox.WithBaseURL(url), sandbox.WithToken("cost"), sandbox.WithTeam("team_cost"), sandbox.WithProject("prj_cost"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sbs := make([]*sandbox.Sandbox, sandboxes)
	for i := range sbs {
		if sbs[i], err = c.Create(ctx, sandbox.CreateParams{}); err != nil {
			t.Fatal(err)
		}
	}
	cpu0, start := processCPU(t, srv.Process.Pid), time.Now()
	var wg sync.WaitGroup
	for i, sb := range sbs {
		runs := n/sandboxes + min(1, max(0, n%sandboxes-i))
		wg.Go(func() {
			for range runs {
				res, err := sb.Command("true").Run(ctx)
				if err != nil || res.ExitCode() != 0 {
					t.Errorf("true: %v (exit %v)", err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	wall, cpu := time.Since(start), processCPU(t, srv.Process.Pid)-cpu0
	fmt.Printf("server cpu %.0f µs/command, wall %.0f µs/command (%d attached runs of true, %d sandboxes at once)\n",
		float64(cpu.Microseconds())/float64(n), float64(wall.Microseconds())/float64(n), n, sandboxes)
	_ = srv.Process.Signal(syscall.SIGTERM)
}

// processCPU is the CPU time of process pid and of the children it has
// reaped, from /proc (in clock ticks of 10 ms).
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
