package cassette_test

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
)

// echoAPI answers every request with its path and a per-path session id.
func echoAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, rt http.RoundTripper, url string) (string, error) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestConcurrentRecordAndReplay(t *testing.T) {
	api := echoAPI(t)
	path := filepath.Join(t.TempDir(), "concurrent.cassette")
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	rt := c.Transport(nil)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := get(t, rt, fmt.Sprintf("%s/v2/items/item-%02d", api.URL, i))
			assert.NoError(t, err)
			assert.Contains(t, body, fmt.Sprintf("item-%02d", i))
		}()
	}
	wg.Wait()
	require.NoError(t, c.Close())
	assert.Equal(t, n, c.Len())

	c, err = cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	rt = c.Transport(nil)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i = n - 1 - i // another order than recorded
			body, err := get(t, rt, fmt.Sprintf("http://replay.test/api/v2/items/item-%02d", i))
			assert.NoError(t, err)
			assert.JSONEq(t, fmt.Sprintf(`{"path":"/v2/items/item-%02d"}`, i), body)
		}()
	}
	wg.Wait()
	assert.Zero(t, c.Remaining())
	// Each interaction answers once.
	_, err = get(t, rt, "http://replay.test/v2/items/item-00")
	var mm *cassette.MismatchError
	require.ErrorAs(t, err, &mm)
	assert.True(t, mm.ClosestUsed)
}

func TestRecordedTransportError(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	path := filepath.Join(t.TempDir(), "err.cassette")
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	_, err = get(t, c.Transport(nil), url+"/v2/sandboxes")
	require.Error(t, err)
	require.NoError(t, c.Close())

	c, err = cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	_, err = get(t, c.Transport(nil), "https://vercel.com/api/v2/sandboxes")
	var re *cassette.ReplayedError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, re.Msg, "refused")
}

// cutAPI streams one NDJSON frame, then cuts the connection.
func cutAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintln(w, `{"stream":"stdout","data":"one\n"}`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRecordedStreamCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.cassette")
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	body, err := get(t, c.Transport(nil), cutAPI(t).URL+"/v2/logs")
	require.Error(t, err)
	assert.Equal(t, "{\"stream\":\"stdout\",\"data\":\"one\\n\"}\n", body)
	require.NoError(t, c.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"end":"error"`)

	c, err = cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	body, err = get(t, c.Transport(nil), "http://replay.test/v2/logs")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.JSONEq(t, `{"stream":"stdout","data":"one\n"}`, body)

	// Served over HTTP the connection is cut after the frame.
	c2, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c2.Close()
	srv2 := cassette.NewServer(c2)
	defer srv2.Close()
	resp, err := http.Get(srv2.URL() + "/v2/logs")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.Error(t, err)
	assert.JSONEq(t, `{"stream":"stdout","data":"one\n"}`, string(b))
}

func TestModesAndLifecycle(t *testing.T) {
	api := echoAPI(t)
	path := filepath.Join(t.TempDir(), "sub", "life.cassette")

	_, err := cassette.Open(path, cassette.Replay)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = cassette.Open(path, cassette.Mode(42))
	require.Error(t, err)
	_, err = cassette.Open(path, cassette.Record, cassette.WithResolution(0))
	require.Error(t, err)
	_, err = cassette.Open(path, cassette.Record, cassette.WithVolatile("session", nil))
	require.Error(t, err)

	c, err := cassette.Open(path, cassette.RecordIfMissing)
	require.NoError(t, err)
	assert.Equal(t, cassette.Record, c.Mode())
	// A recording cassette's handler without an upstream refuses to serve.
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v2/x", nil))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	_, err = get(t, c.Transport(nil), api.URL+"/v2/x")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	_, err = get(t, c.Transport(nil), api.URL+"/v2/x")
	require.ErrorIs(t, err, cassette.ErrClosed)

	c, err = cassette.Open(path, cassette.RecordIfMissing)
	require.NoError(t, err)
	assert.Equal(t, cassette.Replay, c.Mode())
	assert.Equal(t, 1, c.Remaining())
	require.NoError(t, c.Close())

	for s, want := range map[string]cassette.Mode{"record": cassette.Record, "replay": cassette.Replay, "auto": cassette.RecordIfMissing} {
		m, err := cassette.ParseMode(s)
		require.NoError(t, err)
		assert.Equal(t, want, m)
		assert.Equal(t, s, m.String())
	}
}

func TestWithVolatile(t *testing.T) {
	api := echoAPI(t)
	path := filepath.Join(t.TempDir(), "vol.cassette")
	re := `\btest-[0-9]{6}\b`
	c, err := cassette.Open(path, cassette.Record, cassette.WithVolatile("testname", mustRe(re)))
	require.NoError(t, err)
	_, err = get(t, c.Transport(nil), api.URL+"/v2/sandboxes/test-123456")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"path":"/v2/sandboxes/{{testname:1}}"`)

	// Another run picks another random name; it still matches.
	c, err = cassette.Open(path, cassette.Replay, cassette.WithVolatile("testname", mustRe(re)))
	require.NoError(t, err)
	defer c.Close()
	body, err := get(t, c.Transport(nil), "http://replay.test/v2/sandboxes/test-654321")
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":"/v2/sandboxes/test-654321"}`, body)
}

// tarUpload streams a gzip tar archive with one file of size bytes.
func tarUpload(size int64) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.NoCompression)
		tw := tar.NewWriter(zw)
		err := tw.WriteHeader(&tar.Header{Name: "vercel/sandbox/big.bin", Mode: 0o644, Size: size, Typeflag: tar.TypeReg})
		if err == nil {
			_, err = io.CopyN(tw, zeros{}, size)
		}
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// drainAPI reads and discards request bodies.
func drainAPI(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func uploadThrough(t testing.TB, rt http.RoundTripper, url string, size int64) {
	req, err := http.NewRequest("POST", url+"/v2/sandboxes/sessions/sbx_upload0001/fs/write", tarUpload(size))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func TestUploadRecordedAsEntries(t *testing.T) {
	api := drainAPI(t)
	path := filepath.Join(t.TempDir(), "upload.cassette")
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	uploadThrough(t, c.Transport(nil), api.URL, 3<<20)
	require.NoError(t, c.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"tar":[{"name":"vercel/sandbox/big.bin","mode":"0644","size":3145728,"sha256":"`)
	assert.Less(t, len(raw), 4096, "the content itself is not stored")

	c, err = cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	uploadThrough(t, c.Transport(nil), "http://replay.test", 3<<20)
	req, _ := http.NewRequest("POST", "http://replay.test/v2/sandboxes/sessions/sbx_upload0001/fs/write", tarUpload(3<<20-1))
	req.Header.Set("Content-Type", "application/gzip")
	_, err = c.Transport(nil).RoundTrip(req)
	var mm *cassette.MismatchError
	require.ErrorAs(t, err, &mm)
	assert.True(t, strings.Contains(mm.Diff, "size=3145727"), mm.Diff)
}

// BenchmarkRecordUpload records a 64 MiB streamed upload; B/op shows that
// the recorder does not hold the body.
func BenchmarkRecordUpload(b *testing.B) {
	api := drainAPI(b)
	const size = 64 << 20
	c, err := cassette.Open(filepath.Join(b.TempDir(), "bench.cassette"), cassette.Record)
	require.NoError(b, err)
	rt := c.Transport(nil)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		uploadThrough(b, rt, api.URL, size)
	}
	require.NoError(b, c.Close())
}

func TestMismatchErrorIs(t *testing.T) {
	err := error(&cassette.MismatchError{Method: "GET", Path: "/x"})
	assert.True(t, errors.Is(err, cassette.ErrNoMatch))
	assert.Contains(t, err.Error(), "cassette is empty")
}

func TestSaveWhileRecording(t *testing.T) {
	release := make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintln(w, `{"n":1}`)
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprintln(w, `{"n":2}`)
	}))
	defer api.Close()
	defer close(release)
	path := filepath.Join(t.TempDir(), "partial.cassette")
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	req, _ := http.NewRequest("GET", api.URL+"/v2/logs", nil)
	resp, err := c.Transport(nil).RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 100)
	n, err := resp.Body.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "{\"n\":1}\n", string(buf[:n]))

	// A stream still open is saved with the frames read so far.
	require.NoError(t, c.Save())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"stream":{"frames":1,"end":"closed"}`)
	assert.Contains(t, string(raw), `{"seq":1,"frame":1,"at":0,"json":{"n":1}}`)
}

func TestDownloadClosedEarlyIsNotReplayed(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(make([]byte, 1<<20))
	}))
	defer api.Close()
	path := filepath.Join(t.TempDir(), "download.cassette")
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	req, _ := http.NewRequest("POST", api.URL+"/v2/sandboxes/sessions/sbx_abcdef12/fs/read", nil)
	resp, err := c.Transport(nil).RoundTrip(req)
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, 10))
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, c.Close())

	c, err = cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	req, _ = http.NewRequest("POST", "http://replay.test/v2/sandboxes/sessions/sbx_abcdef12/fs/read", nil)
	resp, err = c.Transport(nil).RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	require.ErrorContains(t, err, "was not recorded")
}
