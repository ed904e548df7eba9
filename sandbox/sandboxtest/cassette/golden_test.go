package cassette_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
)

// exampleCassette is replayed by Example_sandboxClient.
const exampleCassette = "testdata/hello.cassette"

// exampleScenario is what testdata/hello.cassette holds: create a sandbox,
// run echo in it, stop it.
func exampleScenario(ctx context.Context, client *sandbox.Client) (*command.Result, error) {
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "hello", Runtime: "node24"})
	if err != nil {
		return nil, err
	}
	res, err := sb.Command("echo", "hello", "from", "a", "cassette").Run(ctx)
	if err != nil {
		return nil, err
	}
	_, err = sb.Stop(ctx)
	return res, err
}

// TestExampleCassetteIsCurrent records the example scenario again and
// compares it with the file in testdata, byte for byte. With
// SANDBOXTEST_CASSETTE=record it rewrites the file instead.
func TestExampleCassetteIsCurrent(t *testing.T) {
	srv := sandboxtest.NewServer(t, local.WithSeed(1), local.WithClock(fixedClock()))
	srv.Script().Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	path := filepath.Join(t.TempDir(), "hello.cassette")
	c, err := cassette.Open(path, cassette.Record, cassette.WithResolution(time.Second))
	require.NoError(t, err)
	_, err = exampleScenario(context.Background(), srv.Client(sandbox.WithTransport(c.Transport(nil))))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	// The server reports the host's architecture; the file holds amd64,
	// as hosted Vercel's.
	got = bytes.ReplaceAll(got, []byte(`"architecture":"`+runtime.GOARCH+`"`), []byte(`"architecture":"amd64"`))

	if os.Getenv(cassette.EnvVar) == "record" {
		require.NoError(t, os.WriteFile(exampleCassette, got, 0o644))
		return
	}
	want, err := os.ReadFile(exampleCassette)
	require.NoError(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date (run with %s=record to rewrite it):\n%s", exampleCassette, cassette.EnvVar, cmp.Diff(string(want), string(got)))
	}
}
