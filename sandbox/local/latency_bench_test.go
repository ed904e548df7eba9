package local_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// BenchmarkLineLatency is the time from a command's write of one line to
// the moment a reader of its attached run has that line decoded: the
// command writes the next line only once the reader has the last one, so
// no batching can hide a delay. It reports the median and the 99th
// percentile in µs per line, over b.N lines.
func BenchmarkLineLatency(b *testing.B) {
	got := make(chan struct{})
	lines := b.N
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("ping"), sandboxtest.HandlerFunc(func(ctx context.Context, cmd *local.Cmd, _ <-chan int) int {
		for range lines {
			stamp := strconv.FormatInt(time.Now().UnixNano(), 10) + "\n"
			if _, err := cmd.Stdout.Write([]byte(stamp)); err != nil {
				return 1
			}
			select {
			case <-got:
			case <-ctx.Done():
				return 1
			}
		}
		return 0
	}))
	srv := sandboxtest.NewServer(b, local.WithExecutor(script))
	sb, err := srv.Client().Create(context.Background(), sandbox.CreateParams{})
	if err != nil {
		b.Fatal(err)
	}
	url := srv.URL() + "/v2/sandboxes/sessions/" + sb.SessionID() + "/cmd?teamId=" + local.TeamID
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"command":"ping","args":[],"env":{},"sudo":false,"wait":true,"logs":true}`))
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	req.Header.Set("Content-Type", "application/json")
	b.ResetTimer()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	took := make([]time.Duration, 0, lines)
	sc := bufio.NewScanner(resp.Body)
	for len(took) < lines && sc.Scan() {
		var f struct {
			Data string `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &f) != nil || f.Data == "" {
			continue
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(f.Data), 10, 64)
		if err != nil {
			b.Fatalf("frame %q: %v", f.Data, err)
		}
		took = append(took, time.Duration(time.Now().UnixNano()-ns))
		got <- struct{}{}
	}
	if len(took) < lines {
		b.Fatalf("got %d lines of %d: %v", len(took), lines, sc.Err())
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e3, "µs-median")
	b.ReportMetric(float64(took[len(took)*99/100])/1e3, "µs-p99")
}
