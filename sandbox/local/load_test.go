//go:build unix

package local_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// loadEnv sets how many sandboxes TestLoadOutputArrivesWhole runs at once
// (default 200).
const loadEnv = "LOCAL_LOAD_SANDBOXES"

// loadSeq is the last number that each sandbox's second command prints
// with seq: 23,893 bytes in several frames.
const loadSeq = 5000

// TestLoadOutputArrivesWhole runs many sandboxes at once on one server,
// real processes through the host executor, each running two attached
// commands of known output at the same time as all the others: an echo
// of a line naming the sandbox, and seq 1 5000. Every byte of every
// command must come back, with exit code 0. LOCAL_LOAD_SANDBOXES=1000
// runs it at 1,000 sandboxes.
func TestLoadOutputArrivesWhole(t *testing.T) {
	n := 200
	if v := os.Getenv(loadEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", loadEnv, v)
		}
	}
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var seq bytes.Buffer
	for i := 1; i <= loadSeq; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	var want, got, lost atomic.Int64
	check := func(name string, res *command.Result, err error, expect []byte) error {
		want.Add(int64(len(expect)))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		got.Add(int64(len(res.Stdout)))
		if res.ExitCode() != 0 || !bytes.Equal(res.Stdout, expect) || len(res.Stderr) != 0 {
			lost.Add(1)
			t.Errorf("%s: exit %d, %d bytes of stdout (want %d), stderr %q; stdout starts %q",
				name, res.ExitCode(), len(res.Stdout), len(expect), res.Stderr, head(res.Stdout))
		}
		return nil
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		g.Go(func() error {
			sb, err := c.Create(gctx, sandbox.CreateParams{})
			if err != nil {
				return fmt.Errorf("sandbox %d: create: %w", i, err)
			}
			line := fmt.Sprintf("sandbox %d of %d says hello", i, n)
			var cg errgroup.Group
			cg.Go(func() error {
				res, err := sb.Command("echo", line).Run(gctx)
				return check(fmt.Sprintf("sandbox %d: echo", i), res, err, []byte(line+"\n"))
			})
			cg.Go(func() error {
				res, err := sb.Command("seq", "1", strconv.Itoa(loadSeq)).Run(gctx)
				return check(fmt.Sprintf("sandbox %d: seq", i), res, err, seq.Bytes())
			})
			return cg.Wait()
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sandboxes, %d commands: %d of %d bytes came back, %d commands lost output, in %v",
		n, 2*n, got.Load(), want.Load(), lost.Load(), time.Since(start).Round(time.Millisecond))
	if got.Load() != want.Load() {
		t.Errorf("%d of %d bytes came back", got.Load(), want.Load())
	}
}

// head is the start of b, for a message.
func head(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
