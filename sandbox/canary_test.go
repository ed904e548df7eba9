package sandbox_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// newCanary returns a random token, unique to the test, that must never
// be seen outside the Authorization header.
func newCanary(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "canary_" + hex.EncodeToString(b)
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestCanaryTokenNeverLeaks configures a random token and checks that no
// error, log line, request log, formatted value or panic shows it, across
// successful calls and 401, 403, 500, malformed-answer and cut-stream
// failures, including answers that echo the Authorization header back.
func TestCanaryTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	canary := newCanary(t)
	var serverLog, clientLog lockedBuffer
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	srv := sandboxtest.NewServer(t, local.WithToken(canary), local.WithExecutor(script),
		local.WithLogger(debugLogger(&serverLog)))

	// fault selects what the middleware does to the next request; it
	// answers like a server that echoes the request's Authorization header.
	var fault atomic.Value
	fault.Store("")
	echo := func(status int, ctype, body string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ctype}},
			Body: io.NopCloser(strings.NewReader(body))}
	}
	mw := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		authz := req.Header.Get("Authorization")
		require.Equal(t, "Bearer "+canary, authz, "the token is sent")
		switch fault.Load().(string) {
		case "401":
			return echo(401, "application/json", `{"error":{"code":"unauthorized","message":"invalid `+authz+`"}}`), nil
		case "401escaped":
			esc := strings.ReplaceAll(authz, "_", `\u005f`)
			return echo(401, "application/json", `{"error":{"code":"unauthorized","message":"invalid `+esc+`"}}`), nil
		case "500":
			return echo(500, "text/html", "<html>proxy error; request had Authorization: "+authz+"</html>"), nil
		case "decode":
			return echo(200, "application/json", `{"sandbox": {"name": "`+authz), nil
		case "cut":
			resp, err := next(req)
			if err == nil && strings.HasSuffix(req.URL.Path, "/cmd") {
				// Keep the first NDJSON frame only.
				br := bufio.NewReader(resp.Body)
				first, _ := br.ReadBytes('\n')
				_ = resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(first))
			}
			return resp, err
		}
		return next(req)
	}
	c := srv.Client(sandbox.WithLogger(debugLogger(&clientLog)), sandbox.WithMiddleware(mw), noReattach)
	ctx := context.Background()

	var errs []error
	check := func(what string, err error) {
		t.Helper()
		require.Error(t, err, what)
		errs = append(errs, err)
	}

	// Successful calls, so that both logs have lines.
	sb, err := c.Create(ctx, sandbox.CreateParams{Name: "canary"})
	require.NoError(t, err)
	out, err := sb.Command("echo", "hello").Output(ctx)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(out))
	require.NoError(t, sb.FS().WriteFiles(ctx, []files.Entry{files.FromBytes("a.txt", []byte("a"))}, files.WriteParams{}))

	fault.Store("401")
	_, err = c.Get(ctx, "canary")
	assert.ErrorIs(t, err, sandbox.ErrUnauthorized)
	check("401", err)
	fault.Store("401escaped")
	_, err = c.Get(ctx, "canary")
	assert.ErrorIs(t, err, sandbox.ErrUnauthorized)
	check("401 with the token JSON-escaped", err)
	fault.Store("500")
	_, err = c.Get(ctx, "canary")
	assert.ErrorIs(t, err, sandbox.ErrServer)
	check("500", err)
	fault.Store("decode")
	_, err = c.Get(ctx, "canary")
	var de *sandbox.DecodeError
	require.ErrorAs(t, err, &de)
	check("malformed answer", err)
	errs = append(errs, fmt.Errorf("excerpt %s", de.Excerpt))
	fault.Store("cut")
	_, err = sb.Command("echo", "cut").Run(ctx)
	assert.ErrorIs(t, err, sandbox.ErrStreamEnded)
	check("cut stream", err)
	fault.Store("")

	// 403 from the fake itself: the canary is not the token it accepts.
	other := sandboxtest.NewServer(t, local.WithToken("tok_other"), local.WithLogger(debugLogger(&serverLog)))
	oc, err := sandbox.NewClient(sandbox.WithBaseURL(other.URL()),
		sandbox.WithToken(canary), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID),
		sandbox.WithLogger(debugLogger(&clientLog)))
	require.NoError(t, err)
	_, err = oc.Create(ctx, sandbox.CreateParams{})
	assert.ErrorIs(t, err, sandbox.ErrForbidden)
	check("403", err)

	// A plain-http base URL to another host is refused before any request.
	_, err = sandbox.NewClient(sandbox.WithBaseURL("http://203.0.113.7/api"), sandbox.WithToken(canary), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
	check("plain http", err)

	// A panic that carries a client error.
	panicked := func() (msg string) {
		defer func() { msg = fmt.Sprint(recover()) }()
		sandboxtest.NewServer(fatalTB{t}, local.WithToken(canary)).Client(sandbox.WithBaseURL("http://203.0.113.7/api"))
		return ""
	}()
	assert.Contains(t, panicked, "BaseURL")

	var texts []string
	for _, err := range errs {
		texts = append(texts, err.Error(), fmt.Sprintf("%v|%+v|%#v", err, err, err))
		for e := err; e != nil; e = errors.Unwrap(e) {
			texts = append(texts, fmt.Sprintf("%+v|%#v", e, e))
		}
	}
	prov := auth.Static(auth.Credentials{Token: canary, TeamID: "team", ProjectID: "prj"})
	cr, err := prov.Credentials(ctx)
	require.NoError(t, err)
	reqs, err := json.Marshal(srv.Requests())
	require.NoError(t, err)
	texts = append(texts,
		panicked,
		fmt.Sprintf("%v|%+v|%#v", c, c, c),
		fmt.Sprintf("%v|%+v|%#v", sb, sb, sb),
		fmt.Sprintf("%v|%+v|%#v", prov, prov, prov),
		fmt.Sprintf("%v|%+v|%#v|%s", cr, cr, cr, cr),
		fmt.Sprintf("%+v", srv.Requests()),
		string(reqs),
	)
	for i, s := range texts {
		assert.NotContains(t, s, canary, "text %d", i)
	}
	assert.NotContains(t, serverLog.String(), canary, "server log")
	assert.NotContains(t, clientLog.String(), canary, "client log")

	// The checks above looked at something.
	assert.Contains(t, serverLog.String(), "local: request")
	assert.Contains(t, clientLog.String(), "request done")
	assert.Contains(t, clientLog.String(), "retrying request")
	assert.Contains(t, string(reqs), "/cmd")
	assert.Contains(t, fmt.Sprintf("%+v", cr), "team")
}

// TestPlainHTTPRefused checks that credentials never travel in clear
// text: a plain-http base URL is accepted for loopback addresses only.
func TestPlainHTTPRefused(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://api.vercel.com", "http://10.0.0.1:8080/api", "http://localhost.example.com",
		"http://[2001:db8::1]/", "http://api.localhost:3000", "http://localhost.:3000"} {
		_, err := sandbox.NewClient(sandbox.WithBaseURL(u), sandbox.WithToken("tok_plain_http_refused"), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
		var ie *sandbox.InsecureURLError
		require.ErrorAs(t, err, &ie, u)
		assert.Equal(t, "BaseURL", ie.Field, u)
		assert.ErrorIs(t, err, sandbox.ErrInvalidInput, u)
		assert.ErrorIs(t, err, sandbox.ErrInsecureURL, u)
	}
	for _, u := range []string{"http://127.0.0.1:1", "http://localhost:3000/api", "http://LOCALHOST:3000", "http://[::1]:8080", "https://api.example.com"} {
		_, err := sandbox.NewClient(sandbox.WithBaseURL(u), sandbox.WithToken("tok"), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
		assert.NoError(t, err, u)
	}
}

// tarGzOf builds a gzip-compressed tar archive of the given headers, each
// regular file holding "escaped".
func tarGzOf(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len("escaped"))
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte("escaped"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// TestFakeRejectsEscapingArchives uploads raw archives whose entries leave
// the extraction directory: the fake answers 400 and writes nothing
// outside the sandbox (nor anything at all for the refused entry).
func TestFakeRejectsEscapingArchives(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	srv := sandboxtest.NewServer(t, local.WithDir(root))
	sb, err := srv.Client().Create(context.Background(), sandbox.CreateParams{Name: "confined"})
	require.NoError(t, err)
	url := srv.URL() + "/v2/sandboxes/sessions/" + sb.SessionID() + "/fs/write?teamId=" + local.TeamID

	reg := func(name string) *tar.Header { return &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg} }
	cases := map[string][]*tar.Header{
		"parent":             {reg("../x")},
		"deep parent":        {reg("../../../../../../x")},
		"through the root":   {reg("vercel/sandbox/../../../x")},
		"absolute":           {reg("/x")},
		"absolute tmp":       {reg(filepath.Join(base, "x"))},
		"symlink then write": {{Name: "vercel/sandbox/l", Typeflag: tar.TypeSymlink, Linkname: base}, reg("vercel/sandbox/l/x")},
		"hard link":          {{Name: "vercel/sandbox/h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}},
	}
	for name, hdrs := range cases {
		req, err := http.NewRequest("POST", url, bytes.NewReader(tarGzOf(t, hdrs...)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Content-Type", "application/gzip")
		req.Header.Set("X-Cwd", "/")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, name)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", name, body)
	}

	// Nothing named x anywhere: not beside the server's directory, not in
	// it, not in the filesystem root.
	entries, err := os.ReadDir(base)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the server's directory is in %s", base)
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "x" {
			t.Errorf("%s was written", p)
		}
		return err
	}))
	_, err = os.Lstat("/x")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "/x: %v", err)

	// A backslash is a byte of a Linux file name, not a separator: the
	// entry is one file at the root of the sandbox.
	req, err := http.NewRequest("POST", url, bytes.NewReader(tarGzOf(t, reg(`..\..\x`))))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("X-Cwd", "/")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	host, err := srv.HostPath("confined", `/..\..\x`)
	require.NoError(t, err)
	_, err = os.Lstat(host)
	require.NoError(t, err)
	entries, err = os.ReadDir(base)
	require.NoError(t, err)
	require.Len(t, entries, 1, "still only the server's directory is in %s", base)
}

// TestUploadSkipsSymlinksOutOfTree uploads a local directory holding a
// link to a secret file outside it: by default the link is left out, and
// FollowSymlinks refuses it; the secret never reaches the server.
func TestUploadSkipsSymlinksOutOfTree(t *testing.T) {
	t.Parallel()
	canary := newCanary(t)
	base := t.TempDir()
	secret := filepath.Join(base, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte(canary), 0o600))
	dir := filepath.Join(base, "project")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "abs-link")))
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "rel-link")))

	var uploaded lockedBuffer
	srv := sandboxtest.NewServer(t)
	c := srv.Client(sandbox.WithMiddleware(func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		if strings.HasSuffix(req.URL.Path, "/fs/write") && req.Body != nil {
			data, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			zr, err := gzip.NewReader(bytes.NewReader(data))
			require.NoError(t, err)
			_, err = io.Copy(&uploaded, zr)
			require.NoError(t, err)
			req.Body = io.NopCloser(bytes.NewReader(data))
		}
		return next(req)
	}))
	ctx := context.Background()
	sb, err := c.Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)

	entries, err := files.FromDir("app", dir, files.TreeParams{})
	require.NoError(t, err)
	require.NoError(t, sb.FS().WriteFiles(ctx, entries, files.WriteParams{}))
	assert.Contains(t, uploaded.String(), "package main", "the upload was seen")

	_, err = files.FromDir("app", dir, files.TreeParams{Symlinks: files.FollowSymlinks})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)

	assert.NotContains(t, uploaded.String(), canary)
	for _, name := range []string{"app/abs-link", "app/rel-link"} {
		_, err := sb.FS().Open(ctx, name)
		assert.ErrorIs(t, err, sandbox.ErrNotFound, name)
	}
	rc, err := sb.FS().Open(ctx, "app/main.go")
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	rc.Close()
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(got))
}
