package cassette_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
)

// A cassette records what passes through its transport, with secrets
// redacted and volatile ids turned into placeholders, and replays it later
// without the server.
func ExampleOpen() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"session":{"id":"sbx_Q2xZ8f1sWmT4kPa9bR3nYe7Lh0Uv","createdAt":1767000000000}}`)
	}))
	defer api.Close()
	dir, _ := os.MkdirTemp("", "cassette-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "example.cassette")

	get := func(rt http.RoundTripper, base string) string {
		req, _ := http.NewRequest("GET", base+"/v2/sandboxes/sessions/sbx_Q2xZ8f1sWmT4kPa9bR3nYe7Lh0Uv?teamId=team_secret42", nil)
		req.Header.Set("Authorization", "Bearer my-token")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	rec, _ := cassette.Open(path, cassette.Record)
	get(rec.Transport(nil), api.URL)
	if err := rec.Close(); err != nil {
		fmt.Println(err)
	}
	file, _ := os.ReadFile(path)
	fmt.Print(string(file))

	play, _ := cassette.Open(path, cassette.Replay)
	defer play.Close()
	// The replay answers the request it recorded. Ids map both ways: the
	// session id the request names is the one the answer carries.
	body := get(play.Transport(nil), "https://vercel.com/api")
	fmt.Println(strings.Contains(body, `"id":"sbx_Q2xZ8f1sWmT4kPa9bR3nYe7Lh0Uv"`))
	// Output:
	// {"format":"sandboxtest-cassette","version":1,"resolutionMs":100}
	// {"seq":1,"request":{"method":"GET","path":"/v2/sandboxes/sessions/{{session:1}}","query":{"teamId":["{{team}}"]}},"response":{"status":200,"header":{"content-type":"application/json"},"body":{"json":{"session":{"createdAt":"{{time:+0}}","id":"{{session:1}}"}}}}}
	// true
}

// A replay served over HTTP, for clients that cannot take a RoundTripper
// (the official TypeScript SDK, curl, another language).
func ExampleNewServer() {
	dir, _ := os.MkdirTemp("", "cassette-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "server.cassette")
	_ = os.WriteFile(path, []byte(`{"format":"sandboxtest-cassette","version":1,"resolutionMs":100}
{"seq":1,"request":{"method":"GET","path":"/v2/sandboxes/sessions/{{session:1}}/cmd/{{command:1}}/logs"},"response":{"status":200,"header":{"content-type":"application/x-ndjson"},"stream":{"frames":2,"end":"eof"}}}
{"seq":1,"frame":1,"at":0,"json":{"data":"hello\n","stream":"stdout"}}
{"seq":1,"frame":2,"at":0,"json":{"data":"world\n","stream":"stdout"}}
`), 0o644)

	c, err := cassette.Open(path, cassette.Replay)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	srv := cassette.NewServer(c)
	defer srv.Close()

	resp, err := http.Get(srv.URL() + "/api/v2/sandboxes/sessions/sbx_x1y2z3w4/cmd/cmd_a1b2c3d4/logs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.Header.Get("Content-Type"), "\n", string(b))
	// Output:
	// application/x-ndjson
	// {"data":"hello\n","stream":"stdout"}
	// {"data":"world\n","stream":"stdout"}
}

// A recorded scenario replayed through the Go client with no server and
// no credentials: the cassette's transport goes under the client's own
// layers. testdata/hello.cassette was recorded against sandboxtest.
func Example_sandboxClient() {
	c, err := cassette.Open("testdata/hello.cassette", cassette.Replay)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	client, err := sandbox.NewClient(
		sandbox.WithToken("any-token"), sandbox.WithTeam("team_any"), sandbox.WithProject("prj_any"),
		sandbox.WithTransport(c.Transport(nil)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "hello", Runtime: "node24"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := sb.Command("echo", "hello", "from", "a", "cassette").Run(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d: %s", res.ExitCode(), res.Stdout)
	fmt.Println("session:", sb.SessionID())

	// A request the cassette does not hold fails with a diff.
	_, err = sb.Command("echo", "bye").Run(ctx)
	fmt.Println(errors.Is(err, cassette.ErrNoMatch))
	// Output:
	// exit 0: hello from a cassette
	// session: sbx_replay0000000000000000000001
	// true
}
