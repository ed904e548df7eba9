package conformance_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/conformance"
)

// conformanceCassette is the shipped recording of the conformance suite
// against the fake. Record it again with
//
//	SANDBOXTEST_CASSETTE=record go test -run '^TestConformanceCassette$' ./sandbox/sandboxtest/
//
// after a change to the suite or to what the fake answers.
const conformanceCassette = "testdata/suite.jsonl"

// cassetteOptions are the options of every conformance recording. A
// resolution of ten seconds absorbs the jitter of the suite's short pauses,
// so that two recordings are the same bytes.
func cassetteOptions() []cassette.Option {
	return []cassette.Option{cassette.WithResolution(10 * time.Second)}
}

// cassetteClient returns a client that talks through c's transport: to a
// fresh conformance fake when c records, to nothing but the cassette when
// it replays.
func cassetteClient(t *testing.T, c *cassette.Cassette) *sandbox.Client {
	base := "http://127.0.0.1:1" // never dialled by a replay
	if c.Mode() == cassette.Record {
		base = newConformanceFake(t).URL()
	}
	client, err := sandbox.NewClient(
		sandbox.WithBaseURL(base),
		sandbox.WithToken(local.DefaultToken), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID),
		sandbox.WithTransport(c.Transport(nil)),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}),
	)
	require.NoError(t, err)
	return client
}

// TestConformanceCassette runs the suite from the shipped recording, with
// no server at all: the replay must answer every request the suite makes,
// in the order it makes them, and nothing recorded may be left over.
func TestConformanceCassette(t *testing.T) {
	t.Parallel()
	mode, err := cassette.ModeFromEnv(cassette.Replay)
	require.NoError(t, err)
	c, err := cassette.Open(conformanceCassette, mode, cassetteOptions()...)
	require.NoError(t, err)
	conformance.Run(t, func(t *testing.T) *sandbox.Client { return cassetteClient(t, c) }, conformance.Params{})
	require.NoError(t, c.Close())
	for _, m := range c.Misses() {
		t.Errorf("%v", m)
	}
	if c.Mode() == cassette.Replay {
		assert.Zero(t, c.Remaining(), "recorded interactions the suite did not replay")
	}
}

// TestConformanceCassetteIsReproducible records the suite twice from two
// fresh fakes: the two files must be byte-identical, or re-recording would
// churn the shipped cassette. The filesystem scenario is left out: it
// reports inode numbers and access times, which differ on every run.
func TestConformanceCassetteIsReproducible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := func(t *testing.T, name string) []byte {
		path := filepath.Join(dir, name)
		c, err := cassette.Open(path, cassette.Record, cassetteOptions()...)
		require.NoError(t, err)
		conformance.Run(t, func(t *testing.T) *sandbox.Client { return cassetteClient(t, c) }, conformance.Params{Skip: []string{conformance.ScenarioFilesystem}})
		require.NoError(t, c.Close())
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		return data
	}
	var first, second []byte
	t.Run("first", func(t *testing.T) { first = record(t, "first.jsonl") })
	t.Run("second", func(t *testing.T) { second = record(t, "second.jsonl") })
	require.NotEmpty(t, first)
	if !bytes.Equal(first, second) {
		t.Errorf("two recordings differ (-first +second):\n%s",
			cmp.Diff(strings.Split(string(first), "\n"), strings.Split(string(second), "\n")))
	}
}

// TestConformanceCassetteServed replays the shipped recording over HTTP
// (cassette.NewServer), as a client in another language would use it: the
// suite passes against it with an ordinary client.
func TestConformanceCassetteServed(t *testing.T) {
	t.Parallel()
	c, err := cassette.Open(conformanceCassette, cassette.Replay, cassetteOptions()...)
	require.NoError(t, err)
	srv := cassette.NewServer(c)
	t.Cleanup(srv.Close)
	conformance.Run(t, func(t *testing.T) *sandbox.Client {
		client, err := sandbox.NewClient(
			sandbox.WithBaseURL(srv.URL()),
			sandbox.WithToken(local.DefaultToken), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID),
		)
		require.NoError(t, err)
		return client
	}, conformance.Params{})
	for _, m := range c.Misses() {
		t.Errorf("%v", m)
	}
	assert.Zero(t, c.Remaining(), "recorded interactions the suite did not replay")
}
