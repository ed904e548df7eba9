package cassette

import (
	"github.com/sbx-go/vercel-sandbox/internal/redact"

	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizerRoundTrip(t *testing.T) {
	rec := newNormalizer(100, nil, nil)
	in := "see sbx_abcd1234 and {{x}} and cmd_zzzz9999 then sbx_abcd1234, sbx_other999"
	got := rec.str(in)
	assert.Equal(t, "see {{session:1}} and {{lb}}x}} and {{command:1}} then {{session:1}}, {{session:2}}", got)

	play := newNormalizer(100, nil, nil)
	out := play.expand(got)
	assert.Equal(t, "see sbx_replay0000000000000000000001 and {{x}} and cmd_replay0000000000000000000001 then sbx_replay0000000000000000000001, sbx_replay0000000000000000000002", out)
	// What the replay made up maps back to the same placeholders.
	assert.Equal(t, got, play.str(out))
	// A value met for the first time in a request gets the next number.
	assert.Equal(t, "{{session:3}}", play.str("sbx_fresh1234"))
}

func TestNormalizerSecrets(t *testing.T) {
	n := newNormalizer(100, nil, []string{"hunter2hunter2"})
	v, err := decodeJSON([]byte(`{"env":{"GITHUB_TOKEN":"ghp_abc123","PLAIN":"ok"},"password":"pw-123456","args":["hunter2hunter2","eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."],"teamId":"t1","projectId":"p1"}`))
	require.NoError(t, err)
	got := string(canonical(n.json(v, "")))
	assert.Equal(t, `{"args":["{{secret}}","{{jwt}}"],"env":{"GITHUB_TOKEN":"{{secret}}","PLAIN":"ok"},"password":"{{secret}}","projectId":"{{project}}","teamId":"{{team}}"}`, got)
	// A secret learned from a key is redacted wherever it shows up later.
	assert.Equal(t, "token={{secret}}", n.str("token=ghp_abc123"))
	assert.Equal(t, []byte("a REDACTED b"), n.redactBytes([]byte("a hunter2hunter2 b")))
	assert.Equal(t, "clone https://bot:{{secret}}@github.com/x/y.git", n.str("clone https://bot:s3cr3t@github.com/x/y.git"))
	assert.Equal(t, "see https://github.com/x/y.git", n.str("see https://github.com/x/y.git"))
	assert.Equal(t, "git://u:{{secret}}@h/r", n.str("git://u:pa:ss@h/r"))
}

func TestSecretKeys(t *testing.T) {
	for key, want := range map[string]bool{
		"token": true, "GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "password": true,
		"api_key": true, "apiKey": true, "Authorization": true, "DB_CREDENTIALS": true,
		"PATH": false, "name": false, "sessionId": false, "HOME": false,
	} {
		assert.Equal(t, want, redact.IsSecretName(key), key)
	}
}

func TestNormalizerTimes(t *testing.T) {
	n := newNormalizer(100, nil, nil)
	v, err := decodeJSON([]byte(`{"a":{"createdAt":1767000000123,"expiresAt":1767000300150,"durationMs":1234,"timeout":300000,"requestedAt":1766999999000}}`))
	require.NoError(t, err)
	got := string(canonical(n.json(v, "")))
	assert.Equal(t, `{"a":{"createdAt":"{{time:+0}}","durationMs":1200,"expiresAt":"{{time:+300000}}","requestedAt":"{{time:-1200}}","timeout":300000}}`, got)

	play := newNormalizer(100, nil, nil)
	play.timeBase, play.haveBase = 2000000000000, true
	back, err := decodeJSON([]byte(got))
	require.NoError(t, err)
	assert.Equal(t, `{"a":{"createdAt":2000000000000,"durationMs":1200,"expiresAt":2000000300000,"requestedAt":1999999998800,"timeout":300000}}`, string(canonical(play.expandJSON(back))))
}

func TestLineDiff(t *testing.T) {
	a := "POST /x\nbody {\n  \"a\": 1,\n  \"b\": 2\n}\n"
	b := "POST /x\nbody {\n  \"a\": 1,\n  \"b\": 3\n}\n"
	assert.Equal(t, "  POST /x\n  body {\n    \"a\": 1,\n-   \"b\": 2\n+   \"b\": 3\n  }\n", lineDiff(a, b))
	assert.Equal(t, 2, diffCost(a, b))
	assert.Equal(t, 0, diffCost(a, a))
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o755}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "dir/link", Typeflag: tar.TypeSymlink, Linkname: "target", Mode: 0o777}))
	for _, name := range []string{"dir/a.txt", "b.bin"} {
		data := files[name]
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(data))}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestSummarize(t *testing.T) {
	archive := tarGz(t, map[string]string{"dir/a.txt": "hello", "b.bin": "\x00\x01"})
	bd := summarize(bytes.NewReader(archive), "application/gzip", false)
	assert.Equal(t, []tarEntry{
		{Name: "dir/", Type: "dir", Mode: "0755"},
		{Name: "dir/link", Type: "symlink", Mode: "0777", Link: "target"},
		{Name: "dir/a.txt", Mode: "0600", Size: 5, SHA256: sum("hello")},
		{Name: "b.bin", Mode: "0600", Size: 2, SHA256: sum("\x00\x01")},
	}, bd.Tar)
	assert.True(t, bd.Gzip)
	assert.Nil(t, bd.Size, "the compressed bytes vary with time; only entries count")

	// Not an archive after all: size and hash.
	bd = summarize(strings.NewReader("plain bytes"), "application/gzip", false)
	assert.Nil(t, bd.Tar)
	require.NotNil(t, bd.Size)
	assert.Equal(t, int64(11), *bd.Size)
	assert.Equal(t, sum("plain bytes"), bd.SHA256)
	assert.False(t, bd.Truncated)

	bd = summarize(strings.NewReader("raw"), "application/octet-stream", true)
	assert.Equal(t, []byte("raw"), bd.Base64)
	assert.Equal(t, sum("raw"), bd.SHA256)
}

func TestDecodeRejectsBadFiles(t *testing.T) {
	hdr := `{"format":"sandboxtest-cassette","version":1,"resolutionMs":100}` + "\n"
	for name, text := range map[string]string{
		"empty":          "",
		"not a cassette": `{"format":"other","version":1}` + "\n",
		"new version":    `{"format":"sandboxtest-cassette","version":99}` + "\n",
		"not json":       hdr + "{nope\n",
		"orphan frame":   hdr + `{"seq":4,"frame":1,"at":0,"text":"x"}` + "\n",
		"frame count":    hdr + `{"seq":1,"request":{"method":"GET","path":"/"},"response":{"status":200,"stream":{"frames":2,"end":"eof"}}}` + "\n" + `{"seq":1,"frame":1,"at":0,"text":"x"}` + "\n",
		"duplicate seq":  hdr + `{"seq":1,"request":{"method":"GET","path":"/"}}` + "\n" + `{"seq":1,"request":{"method":"GET","path":"/"}}` + "\n",
	} {
		_, err := decode(strings.NewReader(text))
		assert.Error(t, err, name)
	}
	its, err := decode(strings.NewReader(hdr))
	require.NoError(t, err)
	assert.Empty(t, its)
}

func TestFileIsStable(t *testing.T) {
	its := []*interaction{{
		Seq:      1,
		Request:  reqRec{Method: "GET", Path: "/v2/x", Query: map[string][]string{"b": {"2"}, "a": {"1"}}},
		Response: &respRec{Status: 200, Stream: &streamRec{Frames: 1, End: endEOF}},
		frames:   []frameRec{{Seq: 1, Frame: 1, JSON: json.RawMessage(`{"data":"<b>&"}`)}},
	}}
	var a, b bytes.Buffer
	require.NoError(t, encode(&a, 100, its))
	require.NoError(t, encode(&b, 100, its))
	assert.Equal(t, a.String(), b.String())
	assert.Equal(t, `{"format":"sandboxtest-cassette","version":1,"resolutionMs":100}
{"seq":1,"request":{"method":"GET","path":"/v2/x","query":{"a":["1"],"b":["2"]}},"response":{"status":200,"stream":{"frames":1,"end":"eof"}}}
{"seq":1,"frame":1,"at":0,"json":{"data":"<b>&"}}
`, a.String())
	back, err := decode(&a)
	require.NoError(t, err)
	require.Len(t, back, 1)
	assert.Len(t, back[0].frames, 1)
}
