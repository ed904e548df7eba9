package sandboxtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// The conformance check of the official TypeScript SDK lives in
// testdata/tssdk: a package.json pinning @vercel/sandbox, its lock file and
// conformance.mjs, which drives the SDK through the fake. Install it with
// `npm ci` in that directory (or run .ci/tssdk.sh) and then
//
//	SANDBOXTEST_TSSDK=1 go test ./sandbox/sandboxtest -run TestOfficialTypeScriptSDK -v
const (
	tssdkDir     = "testdata/tssdk"
	tssdkEnv     = "SANDBOXTEST_TSSDK"
	tssdkTeam    = "team_conformance" // must match conformance.mjs
	tssdkProject = "prj_conformance"  // must match conformance.mjs
	tssdkTimeout = 2 * time.Minute
)

func TestOfficialTypeScriptSDK(t *testing.T) {
	node, pinned := requireTSSDK(t)
	token := "tssdk-" + strings.ReplaceAll(t.Name(), "/", "-") // not a JWT
	srv := sandboxtest.NewServer(t,
		local.WithExecutor(hostexec.New()),
		local.WithHostPaths(true),
		local.WithToken(token),
		local.WithTeam(tssdkTeam),
		local.WithProject(tssdkProject),
	)
	out := runNodeScript(t, node, "conformance.mjs", "SANDBOXTEST_URL="+srv.URL(), "SANDBOXTEST_TOKEN="+token)
	if !strings.Contains(out, "\nPASS ") {
		t.Fatalf("conformance.mjs exited 0 without its PASS line")
	}

	checkTSSDKRequests(t, srv.Requests(), pinned)
}

// TestOfficialSDKLoad runs load.mjs: the official TypeScript SDK runs 200
// sandboxes at once against one server (real processes through the host
// executor), each running an attached echo and seq 1 5000 beside all the
// others, three rounds, and every byte must come back.
// SANDBOXTEST_LOAD_SANDBOXES and SANDBOXTEST_LOAD_ROUNDS change the size.
func TestOfficialSDKLoad(t *testing.T) {
	node, _ := requireTSSDK(t)
	sandboxes, rounds := envInt(t, "SANDBOXTEST_LOAD_SANDBOXES", 200), envInt(t, "SANDBOXTEST_LOAD_ROUNDS", 3)
	token := "tssdk-load"
	srv := sandboxtest.NewServer(t,
		local.WithExecutor(hostexec.New()),
		local.WithHostPaths(true),
		local.WithToken(token),
		local.WithTeam(tssdkTeam),
		local.WithProject(tssdkProject),
	)
	out := runNodeScriptFor(t, 10*time.Minute+time.Duration(sandboxes*rounds)*100*time.Millisecond, node, "load.mjs",
		"SANDBOXTEST_URL="+srv.URL(), "SANDBOXTEST_TOKEN="+token,
		"LOAD_SANDBOXES="+strconv.Itoa(sandboxes), "LOAD_ROUNDS="+strconv.Itoa(rounds))
	if !strings.Contains(out, "\nPASS ") {
		t.Fatalf("load.mjs exited 0 without its PASS line")
	}
}

// envInt is the positive number in the variable name, or def when it is
// unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// requireTSSDK skips unless the SDK check is asked for, and fails unless
// node and the pinned SDK are installed. It returns node's path and the
// pinned version.
func requireTSSDK(t *testing.T) (node, pinned string) {
	t.Helper()
	if os.Getenv(tssdkEnv) != "1" {
		t.Skipf("set %s=1 to run the official @vercel/sandbox SDK against the fake "+
			"(needs node and `npm ci` in %s; see .ci/tssdk.sh)", tssdkEnv, tssdkDir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s=1 but node is not on PATH: %v", tssdkEnv, err)
	}
	pinned = readPackageVersion(t, filepath.Join(tssdkDir, "package.json"), true)
	installedFile := filepath.Join(tssdkDir, "node_modules", "@vercel", "sandbox", "package.json")
	if _, err := os.Stat(installedFile); err != nil {
		t.Fatalf("%s=1 but the SDK is not installed (run `npm ci` in %s): %v", tssdkEnv, tssdkDir, err)
	}
	installed := readPackageVersion(t, installedFile, false)
	if installed != pinned {
		t.Fatalf("installed @vercel/sandbox is %s but package.json pins %s; run `npm ci` in %s",
			installed, pinned, tssdkDir)
	}
	return node, pinned
}

// runNodeScript runs a script of tssdkDir with env added, logging its
// output, and returns the output. It fails the test when the script does.
func runNodeScript(t *testing.T, node, script string, env ...string) string {
	t.Helper()
	return runNodeScriptFor(t, tssdkTimeout, node, script, env...)
}

// runNodeScriptFor is runNodeScript with a time limit of its own.
func runNodeScriptFor(t *testing.T, limit time.Duration, node, script string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = tssdkDir
	cmd.Env = append(os.Environ(), env...)
	out := &lineLogger{t: t, prefix: "node: "}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	out.flush()
	t.Logf("%s finished in %v", script, time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v", script, limit)
	}
	if runErr != nil {
		t.Fatalf("%s failed: %v (its output is logged above)", script, runErr)
	}
	return out.String()
}

// checkTSSDKRequests asserts that the SDK's requests had the shapes the
// wire protocol describes.
func checkTSSDKRequests(t *testing.T, reqs []local.Request, version string) {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatal("the fake received no requests")
	}
	userAgent := regexp.MustCompile(`^vercel/sandbox/` + regexp.QuoteMeta(version) + `( agent/\S+)? \(Node\.js/v\d+\.\d+\.\d+; \w+/\w+\)$`)
	sessionPath := regexp.MustCompile(`^/api/v2/sandboxes/sessions/sbx_[A-Za-z0-9]+/`)

	var (
		creates, attached, detached, writes, reads, mkdirs int
		gets, lists, resumes, gone, deletes                int
		resumedAfterGone                                   bool
		pendingGone                                        bool
	)
	for i, r := range reqs {
		where := func(format string, args ...any) {
			t.Helper()
			t.Errorf("request %d (%s %s?%s): "+format,
				append([]any{i, r.Method, r.Path, r.Query.Encode()}, args...)...)
		}
		if !strings.HasPrefix(r.Path, "/api/v") {
			where("path lacks the /api prefix the SDK uses")
		}
		if got := r.Query.Get("teamId"); got != tssdkTeam {
			where("teamId = %q, want %q", got, tssdkTeam)
		}
		if got := r.Header.Get("Authorization"); !strings.HasPrefix(got, "Bearer ") {
			where("Authorization = %q, want a bearer token", got)
		}
		if ua := r.Header.Get("User-Agent"); !userAgent.MatchString(ua) {
			where("User-Agent = %q, want %s", ua, userAgent)
		}
		wantCT := "application/json"
		if strings.HasSuffix(r.Path, "/fs/write") {
			wantCT = "application/gzip"
		}
		if ct := r.Header.Get("Content-Type"); ct != wantCT {
			where("Content-Type = %q, want %q", ct, wantCT)
		}
		switch r.Status {
		case http.StatusOK, http.StatusCreated:
		case http.StatusGone:
			if !sessionPath.MatchString(r.Path) {
				where("410 outside a session-scoped path")
			}
			gone++
			pendingGone = true
		case http.StatusNotFound:
			// fs/read of a missing file; Sandbox.get / getOrCreate of an
			// unknown name.
			if !strings.HasSuffix(r.Path, "/fs/read") && !(r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/api/v2/sandboxes/conformance-")) {
				where("unexpected 404")
			}
		default:
			where("unexpected status %d", r.Status)
		}

		body := decodeBody(t, r)
		switch {
		case r.Method == http.MethodPost && r.Path == "/api/v3/sandboxes":
			creates++
			if body["projectId"] != tssdkProject {
				where("create body projectId = %v, want %q", body["projectId"], tssdkProject)
			}
			if name, _ := body["name"].(string); !strings.HasPrefix(name, "conformance-") {
				where("create body name = %v", body["name"])
			}
			if ports, ok := body["ports"].([]any); !ok || len(ports) != 0 {
				where("create body ports = %#v, want []", body["ports"])
			}
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/cmd"):
			if _, ok := body["command"].(string); !ok {
				where("command body without command: %s", r.Body)
			}
			if _, ok := body["args"].([]any); !ok {
				where("command body without args: %s", r.Body)
			}
			if body["wait"] == true {
				attached++
				if body["logs"] != true {
					where("attached command without logs:true: %s", r.Body)
				}
			} else {
				detached++
				if _, ok := body["wait"]; ok {
					where("detached command carries wait: %s", r.Body)
				}
			}
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/fs/write"):
			writes++
			if got := r.Header.Get("X-Cwd"); got != "/" {
				where("x-cwd = %q, want /", got)
			}
			if r.BodySize == 0 {
				where("empty upload")
			}
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/fs/read"):
			reads++
			if p, _ := body["path"].(string); p == "" {
				where("fs/read body without path: %s", r.Body)
			}
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/fs/mkdir"):
			mkdirs++
		case r.Method == http.MethodGet && r.Path == "/api/v2/sandboxes":
			lists++
			if got := r.Query.Get("project"); got != tssdkProject {
				where("list: project = %q, want %q", got, tssdkProject)
			}
		case r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/api/v2/sandboxes/conformance-"):
			gets++
			if got := r.Query.Get("projectId"); got != tssdkProject {
				where("get: projectId = %q, want %q", got, tssdkProject)
			}
			if r.Query.Get("resume") == "true" {
				resumes++
				if pendingGone && r.Status == http.StatusOK {
					resumedAfterGone = true
				}
			}
			pendingGone = false
		case r.Method == http.MethodDelete && strings.HasPrefix(r.Path, "/api/v2/sandboxes/conformance-"):
			deletes++
			if got := r.Query.Get("projectId"); got != tssdkProject {
				where("delete: projectId = %q, want %q", got, tssdkProject)
			}
		}
	}
	t.Logf("%d requests: %d creates, %d attached and %d detached commands, %d uploads, %d reads, "+
		"%d mkdirs, %d gets (%d resumes), %d lists, %d deletes, %d answered 410",
		len(reqs), creates, attached, detached, writes, reads, mkdirs, gets, resumes, lists, deletes, gone)
	for _, c := range []struct {
		what string
		n    int
	}{
		{"create", creates}, {"attached command", attached}, {"detached command", detached},
		{"fs/write", writes}, {"fs/read", reads}, {"fs/mkdir", mkdirs}, {"get", gets},
		{"list", lists}, {"delete", deletes}, {"410 answer", gone},
	} {
		if c.n == 0 {
			t.Errorf("the SDK sent no %s request", c.what)
		}
	}
	if !resumedAfterGone {
		t.Error("no 410 was followed by a successful GET …?resume=true (the SDK's auto-resume)")
	}
}

// decodeBody returns the JSON object body of r, or nil when it has none.
func decodeBody(t *testing.T, r local.Request) map[string]any {
	t.Helper()
	if len(r.Body) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Errorf("%s %s: body is not a JSON object: %v: %s", r.Method, r.Path, err, r.Body)
	}
	return m
}

// readPackageVersion reads a package.json: the version of the package
// itself, or (deps) the exact version of @vercel/sandbox it depends on.
func readPackageVersion(t *testing.T, file string, deps bool) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version      string            `json:"version"`
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if !deps {
		return pkg.Version
	}
	v := pkg.Dependencies["@vercel/sandbox"]
	if !regexp.MustCompile(`^3\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("%s must pin an exact 3.x @vercel/sandbox version, found %q", file, v)
	}
	return v
}

// lineLogger passes a child process's output to t.Log line by line and
// keeps a copy.
type lineLogger struct {
	t      *testing.T
	prefix string

	mu      sync.Mutex
	partial []byte
	all     bytes.Buffer
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.t.Log(l.prefix + string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.t.Log(l.prefix + string(l.partial))
		l.partial = nil
	}
}

func (l *lineLogger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return "\n" + l.all.String()
}
