package cassette_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
)

// The official TypeScript SDK is recorded through the recording proxy
// against the fake and then replayed from the cassette server with no
// fake present. It needs node and `npm ci` in ../testdata/tssdk:
//
//	SANDBOXTEST_TSSDK=1 go test ./sandbox/sandboxtest/cassette -run TestOfficialTypeScriptSDK -v
func TestOfficialTypeScriptSDK(t *testing.T) {
	if os.Getenv("SANDBOXTEST_TSSDK") != "1" {
		t.Skip("set SANDBOXTEST_TSSDK=1 to record and replay the official @vercel/sandbox SDK (needs node and `npm ci` in ../testdata/tssdk)")
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not on PATH")
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "tssdk"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", "@vercel", "sandbox", "package.json"))
	require.NoError(t, err, "the SDK is not installed: run `npm ci` in %s", dir)

	const token = "tssdk-cassette-token"
	path := filepath.Join(t.TempDir(), "tssdk.cassette")
	// The script names its sandbox conformance-<pid>-<time>.
	name := cassette.WithVolatile("conformance", regexp.MustCompile(`\bconformance-[0-9]+-[a-z0-9]+\b`))

	runScript := func(t *testing.T, baseURL string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "conformance.mjs")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SANDBOXTEST_URL="+baseURL, "SANDBOXTEST_TOKEN="+token)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "conformance.mjs failed:\n%s", out)
		require.Contains(t, string(out), "\nPASS ", string(out))
		return string(out)
	}

	t.Run("record", func(t *testing.T) {
		fake := sandboxtest.NewServer(t,
			local.WithExecutor(hostexec.New()),
			local.WithHostPaths(true),
			local.WithToken(token),
		)
		c, err := cassette.Open(path, cassette.Record, cassette.WithUpstream(fake.URL()), name)
		require.NoError(t, err)
		proxy := cassette.NewServer(c)
		t.Log(runScript(t, proxy.URL()))
		proxy.Close()
		require.NoError(t, c.Close())
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), token)
	})
	t.Run("replay", func(t *testing.T) {
		c, err := cassette.Open(path, cassette.Replay, name)
		require.NoError(t, err)
		defer c.Close()
		srv := cassette.NewServer(c)
		defer srv.Close()
		t.Log(runScript(t, srv.URL()))
		for _, m := range c.Misses() {
			t.Errorf("%v", m)
		}
		assert.Zero(t, c.Remaining(), "every recorded interaction is replayed")
	})
}
