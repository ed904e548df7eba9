//go:build linux

package local_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// The capacity measurement: how much one server holds and what each thing
// costs it. It runs only with LOCAL_CAPACITY=1:
//
//	LOCAL_CAPACITY=1 go test ./sandbox/local -run '^TestCapacity$' -v -timeout 30m
//
// LOCAL_CAPACITY_SANDBOXES (default 1000), LOCAL_CAPACITY_COMMANDS (default
// 500) and LOCAL_CAPACITY_STREAMS (default 1000) set the sizes. The server
// runs in the test's process, commands as real processes through the host
// executor; the load comes from a second process (the same test binary),
// so that the figures are the server's alone.
const (
	capacityEnv       = "LOCAL_CAPACITY"
	capacityClientEnv = "LOCAL_CAPACITY_CLIENT" // set in the client process: URL and token
)

// capacityFigures is what the server holds at one moment.
type capacityFigures struct {
	heap       uint64 // Go heap in use and goroutine stacks, after a collection
	rss        uint64 // resident memory of the server process
	goroutines int
	threads    int // of the operating system
	fds        int
	procs      int    // processes the server started that still run
	procsPSS   uint64 // their proportional share of memory, summed
}

// measureCapacity measures the server, leaving out the process client.
func measureCapacity(client int) capacityFigures {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f := capacityFigures{
		heap:       ms.HeapInuse + ms.StackInuse,
		rss:        procKiB("/proc/self/status", "VmRSS:") << 10,
		goroutines: runtime.NumGoroutine(),
		threads:    int(procKiB("/proc/self/status", "Threads:")),
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		f.fds = len(ents)
	}
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == self && e.Name() != strconv.Itoa(client) {
			f.procs++
			f.procsPSS += procKiB("/proc/"+e.Name()+"/smaps_rollup", "Pss:") << 10
		}
	}
	return f
}

// procKiB reads the figure in KiB that follows key in a /proc file.
func procKiB(path, key string) uint64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// TestCapacity prints what a server holds: idle sandboxes, running
// commands and followed log streams, and what each costs in memory,
// goroutines and file descriptors. See capacityEnv.
func TestCapacity(t *testing.T) {
	if v := os.Getenv(capacityClientEnv); v != "" {
		capacityClient(t, v)
		return
	}
	if os.Getenv(capacityEnv) != "1" {
		t.Skip("set " + capacityEnv + "=1 to measure the capacity of one server")
	}
	sandboxes := envSize(t, "LOCAL_CAPACITY_SANDBOXES", 1000)
	commands := envSize(t, "LOCAL_CAPACITY_COMMANDS", 500)
	streams := envSize(t, "LOCAL_CAPACITY_STREAMS", 1000)
	if commands > sandboxes {
		t.Fatalf("%d commands for %d sandboxes: at most one command a sandbox", commands, sandboxes)
	}
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))

	child := exec.Command(os.Args[0], "-test.run=^TestCapacity$", "-test.v")
	child.Env = append(os.Environ(), capacityClientEnv+"="+strings.Join([]string{
		srv.URL(), srv.Token(), strconv.Itoa(sandboxes), strconv.Itoa(commands), strconv.Itoa(streams)}, " "))
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	lines := startReading(t, child)
	// step waits for the client's next "capacity: PHASE" line.
	step := func(phase string) {
		t.Helper()
		for lines.Scan() {
			l := lines.Text()
			if !strings.HasPrefix(l, "capacity: ") {
				t.Log("client: " + l)
				continue
			}
			if got := strings.TrimPrefix(l, "capacity: "); got != phase {
				t.Fatalf("the client reports %q, want %q", got, phase)
			}
			return
		}
		t.Fatalf("the client ended before %s: %v", phase, lines.Err())
	}

	var rlim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rlim)
	t.Logf("GOMAXPROCS %d, %d CPUs, open file limit %d, Go %s", runtime.GOMAXPROCS(0), runtime.NumCPU(), rlim.Cur, runtime.Version())
	report := func(what string, n int, before, after capacityFigures) {
		per := func(a, b uint64) string {
			if n == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f KiB", (float64(b)-float64(a))/float64(n)/1024)
		}
		t.Logf("%-28s heap %7.1f MiB, rss %7.1f MiB, %6d goroutines, %5d threads, %6d fds, %5d processes (%6.1f MiB pss)",
			what, float64(after.heap)/(1<<20), float64(after.rss)/(1<<20), after.goroutines, after.threads, after.fds, after.procs, float64(after.procsPSS)/(1<<20))
		if n > 0 {
			each := func(a, b int) float64 { return float64(b-a) / float64(n) }
			t.Logf("%-28s heap %s, rss %s, %.2f goroutines, %.2f threads, %.2f fds, processes' pss %s each (of %d)",
				"", per(before.heap, after.heap), per(before.rss, after.rss),
				each(before.goroutines, after.goroutines), each(before.threads, after.threads), each(before.fds, after.fds),
				per(before.procsPSS, after.procsPSS), n)
		}
	}
	next := func() { _, _ = io.WriteString(in, "next\n") }
	step("start")
	base := measureCapacity(child.Process.Pid)
	report("server, empty", 0, base, base)
	next()

	step("idle")
	idle := measureCapacity(child.Process.Pid)
	report(fmt.Sprintf("%d idle sandboxes", sandboxes), sandboxes, base, idle)
	next()
	step("running")
	running := measureCapacity(child.Process.Pid)
	report(fmt.Sprintf("+ %d running commands", commands), commands, idle, running)
	next()
	step("streams")
	followed := measureCapacity(child.Process.Pid)
	report(fmt.Sprintf("+ %d followed streams", streams), streams, running, followed)
	mem := srv.Memory()
	t.Logf("requests kept in the request log: %d (dropped %d); commands recorded: %d", mem.Requests, mem.DroppedRequests, mem.Commands)
	next()
	step("done")
}

// envSize is the positive number in the variable name, or def.
func envSize(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

// capacityClient is the client process of TestCapacity: it creates the
// sandboxes, starts the commands, opens the streams, and after each says
// so on standard output and waits for a line on standard input.
func capacityClient(t *testing.T, spec string) {
	f := strings.Fields(spec)
	if len(f) != 5 {
		t.Fatalf("%s=%q", capacityClientEnv, spec)
	}
	url, token := f[0], f[1]
	sandboxes, _ := strconv.Atoi(f[2])
	commands, _ := strconv.Atoi(f[3])
	streams, _ := strconv.Atoi(f[4])
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := func(ctx context.Context, method, path string, body any) (*http.Response, error) {
		var rd io.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			rd = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, method, url+path+"?teamId=team_test", rd)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err == nil && resp.StatusCode != http.StatusOK {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
		}
		return resp, err
	}
	decode := func(resp *http.Response, err error, v any) error {
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(v)
	}
	stdin := bufio.NewScanner(os.Stdin)
	phase := func(name string) {
		// Only the streams keep a connection: the server counts no idle one.
		hc.CloseIdleConnections()
		time.Sleep(time.Second)
		fmt.Printf("capacity: %s\n", name)
		if name != "done" && !stdin.Scan() {
			t.Fatal("the server's test ended")
		}
	}

	phase("start")
	sids := make([]string, sandboxes)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range sids {
		g.Go(func() error {
			var r createReply
			resp, err := call(ctx, "POST", "/api/v3/sandboxes", map[string]any{"projectId": "prj_test", "ports": []int{}, "timeout": time.Hour.Milliseconds()}) // outlives a long measurement
			err = decode(resp, err, &r)
			sids[i] = r.Session.ID
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	phase("idle")

	cids := make([]string, commands)
	for i := range cids {
		g.Go(func() error {
			var r struct{ Command struct{ ID string } }
			resp, err := call(ctx, "POST", sessPath(sids[i], "/cmd"), map[string]any{
				"command": "sleep", "args": []string{"3600"}, "env": map[string]string{}, "sudo": false})
			err = decode(resp, err, &r)
			cids[i] = r.Command.ID
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	phase("running")

	var mu sync.Mutex
	var open []io.Closer
	for i := range streams {
		g.Go(func() error {
			c := i % max(commands, 1)
			resp, err := call(ctx, "GET", sessPath(sids[c], "/cmd/", cids[c], "/logs"), nil)
			if err != nil {
				return err
			}
			mu.Lock()
			open = append(open, resp.Body)
			mu.Unlock()
			return nil
		})
	}
	if commands > 0 {
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	phase("streams")
	for _, c := range open {
		c.Close()
	}
	phase("done")
}

// startReading starts c with its stdout read through the returned scanner
// and its stderr on the test's; c is killed and waited for when the test
// ends.
func startReading(t *testing.T, c *exec.Cmd) *bufio.Scanner {
	t.Helper()
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return bufio.NewScanner(out)
}
