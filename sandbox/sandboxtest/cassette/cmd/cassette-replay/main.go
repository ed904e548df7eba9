// Command cassette-replay serves a cassette (see package cassette) over
// HTTP, so that clients in any language, the official TypeScript SDK
// included, can replay traffic recorded with the Go client.
//
// Usage:
//
//	cassette-replay [--listen 127.0.0.1:0] [--timing SCALE] FILE
//
// Point the client's base URL at the address it prints (with or without
// /api); any token, team and project are accepted. --timing 1 plays stream
// frames at the recorded pace (default 0: at once).
//
// The first line printed on stdout is "listening on http://HOST:PORT".
// A request that matches no recorded interaction gets 500 with a diff
// against the closest one, also printed on stderr. SIGINT or SIGTERM stops
// the server; it then reports how many interactions were not replayed and
// exits with status 0, or 1 when some request was not matched.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/internal/cli"
)

func main() { cli.Main("cassette-replay", run) }

// run serves the cassette until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("cassette-replay", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", "127.0.0.1:0", "address to listen on")
	timing := fl.Float64("timing", 0, "pace of stream frames: 0 at once, 1 as recorded")
	if err := fl.Parse(args); err != nil {
		return cli.ErrUsage
	}
	if fl.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: cassette-replay [--listen ADDR] [--timing SCALE] FILE")
		return cli.ErrUsage
	}
	c, err := cassette.Open(fl.Arg(0), cassette.Replay, cassette.WithTiming(*timing))
	if err != nil {
		return err
	}
	defer c.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	handler := c.Handler()
	var mu sync.Mutex
	seen := 0
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
		// Report misses as they happen.
		mu.Lock()
		defer mu.Unlock()
		if misses := c.Misses(); len(misses) > seen {
			for _, m := range misses[seen:] {
				fmt.Fprintln(stderr, m)
			}
			seen = len(misses)
		}
	})
	srv := &http.Server{Handler: logged, ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	fmt.Fprintf(stdout, "replaying %s: %d interactions\n", fl.Arg(0), c.Len())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err = <-done:
		return err
	case <-ctx.Done():
	}
	_ = srv.Close()
	<-done
	fmt.Fprintf(stdout, "%d of %d interactions not replayed\n", c.Remaining(), c.Len())
	if n := len(c.Misses()); n > 0 {
		return fmt.Errorf("%d requests matched nothing", n)
	}
	return nil
}
