package soak_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// The local API runs in a child process: the test binary started again
// with serveEnv set to its serverConfig. It serves the API on one port and
// a small control API of the soak's own on another (the fault package's
// control endpoint needs a server token, and the soak's server takes any
// token, so that credentials can expire and be renewed). The child prints
// both URLs on its first line and ends when its stdin closes.

// serveEnv names the variable that makes the test binary serve the API.
const serveEnv = "SANDBOX_SOAK_SERVE"

// serverConfig is what the child is started with; every random choice
// in it comes from the soak's seed.
type serverConfig struct {
	Seed          uint64        `json:"seed"`
	StreamCut     time.Duration `json:"streamCut"`     // hosted Vercel's edge cut, shortened
	LogsRace      time.Duration `json:"logsRace"`      // logs answer 404 this long after a command ends
	FreshRefusals int           `json:"freshRefusals"` // first uses of a new token refused
}

func (c serverConfig) String() string {
	return fmt.Sprintf("edge cut after %s, logs race %s, fresh-token refusals %d", c.StreamCut, c.LogsRace, c.FreshRefusals)
}

// serve runs the child: the API with hostexec and a fault injector, until
// stdin closes. It returns the process's exit code.
func serve() int {
	var cfg serverConfig
	if err := json.Unmarshal([]byte(os.Getenv(serveEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "soak server:", err)
		return 2
	}
	inj := fault.NewInjector()
	srv, err := local.New(append(inj.Options(),
		local.WithExecutor(hostexec.New()),
		local.WithHostPaths(true),
		local.WithAnyToken(),
		local.WithSeed(cfg.Seed),
		local.WithStreamCut(cfg.StreamCut),
		local.WithLogsRace(cfg.LogsRace),
		local.WithFreshTokenRefusals(cfg.FreshRefusals),
	)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak server:", err)
		return 2
	}
	defer srv.Close()
	api, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak server:", err)
		return 2
	}
	if err := srv.Start(api); err != nil {
		fmt.Fprintln(os.Stderr, "soak server:", err)
		return 2
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak server:", err)
		return 2
	}
	hs := &http.Server{Handler: controlHandler(srv, inj), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ctl) }()
	defer hs.Close()
	fmt.Printf("%s http://%s\n", srv.URL(), ctl.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// serverCommand is a command the server ran, named by the soak's marker
// (the argument after $0 of the soak's script).
type serverCommand struct {
	ID      string `json:"id"`
	Marker  string `json:"marker"`
	Running bool   `json:"running"`
}

// fileState is a file of a sandbox as the server's disk holds it.
type fileState struct {
	Exists  bool   `json:"exists"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Content []byte `json:"content,omitempty"`
}

// serverState is what the server holds at the end.
type serverState struct {
	Leaked int               `json:"leaked"`
	Memory local.MemoryStats `json:"memory"`
}

// controlHandler serves the soak's control API in the child.
func controlHandler(srv *local.Server, inj *fault.Injector) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		var faults []fault.Fault
		if err := json.NewDecoder(r.Body).Decode(&faults); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ids := make([]int64, 0, len(faults))
		for _, f := range faults {
			h, err := inj.Add(f)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			ids = append(ids, h.ID())
		}
		answer(w, ids)
	})
	mux.HandleFunc("POST /faults/remove", func(w http.ResponseWriter, r *http.Request) {
		var ids []int64
		if err := json.NewDecoder(r.Body).Decode(&ids); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		hits := make([]int, len(ids))
		for _, h := range inj.Faults() {
			for i, id := range ids {
				if h.ID() == id {
					h.Remove()
					hits[i] = h.Hits()
				}
			}
		}
		answer(w, hits)
	})
	mux.HandleFunc("GET /commands", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("sandbox")
		out := []serverCommand{}
		for _, c := range srv.Commands() {
			if c.SandboxName != name {
				continue
			}
			sc := serverCommand{ID: c.Command.ID, Running: c.Command.ExitCode == nil}
			if a := c.Command.Args; len(a) > 3 && a[0] == "-c" && a[2] == scriptName {
				sc.Marker = a[3]
			}
			out = append(out, sc)
		}
		answer(w, out)
	})
	mux.HandleFunc("GET /file", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		st, err := readFileState(srv, q.Get("sandbox"), q.Get("path"), q.Has("content"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		answer(w, st)
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, serverState{Leaked: len(srv.LeakedSandboxes()), Memory: srv.Memory()})
	})
	return mux
}

// maxContent bounds the content the control API returns (a markers file).
const maxContent = 4 << 20

func readFileState(srv *local.Server, sandboxName, p string, content bool) (fileState, error) {
	hp, err := srv.HostPath(sandboxName, p)
	if err != nil {
		return fileState{}, err
	}
	f, err := os.Open(hp)
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	defer f.Close()
	h := sha256.New()
	var buf bytes.Buffer
	var dst io.Writer = h
	if content {
		dst = io.MultiWriter(h, &limitedBuffer{b: &buf, left: maxContent})
	}
	n, err := io.Copy(dst, f)
	if err != nil {
		return fileState{}, err
	}
	st := fileState{Exists: true, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	if content {
		st.Content = buf.Bytes()
	}
	return st, nil
}

// limitedBuffer keeps the first left bytes written to it.
type limitedBuffer struct {
	b    *bytes.Buffer
	left int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	n := min(len(p), l.left)
	l.b.Write(p[:n])
	l.left -= n
	return len(p), nil
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// server is the parent's view of the child process.
type server struct {
	api     string // base URL of the API
	control string // base URL of the soak's control API
	tr      *http.Transport
	hc      *http.Client

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tail
	drained chan struct{} // closed once the child's stdout is read to its end
	once    sync.Once
	exitErr error
}

// startServer starts the child and waits for its URLs.
func startServer(t *testing.T, cfg serverConfig) *server {
	t.Helper()
	conf, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+string(conf))
	s := &server{cmd: cmd, stderr: &tail{max: 64 << 10}, drained: make(chan struct{})}
	cmd.Stderr = s.stderr
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	first := make(chan string, 1)
	go func() {
		defer close(s.drained)
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		first <- line
		_, _ = io.Copy(io.Discard, br)
	}()
	var line string
	select {
	case line = <-first:
	case <-time.After(time.Minute):
	}
	api, ctl, ok := strings.Cut(strings.TrimSpace(line), " ")
	if !ok {
		_ = s.stop()
		t.Fatalf("the soak server did not start: %q; stderr:\n%s", line, s.stderr)
	}
	s.api, s.control = api, ctl
	s.tr = &http.Transport{MaxIdleConnsPerHost: 32}
	s.hc = &http.Client{Transport: s.tr, Timeout: time.Minute}
	return s
}

// stop closes the child's stdin, which ends it, and waits for it: a
// child that does not end within 30 s gets SIGQUIT, so that its stderr,
// which the violation quotes, shows where it was stuck, and is killed 10 s
// later. It returns how the child ended; a race the child detected ends it
// with a non-zero status.
func (s *server) stop() error {
	s.once.Do(func() {
		_ = s.stdin.Close()
		select {
		case <-s.drained:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-s.drained:
			case <-time.After(10 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.drained
			}
		}
		s.exitErr = s.cmd.Wait()
		if s.tr != nil {
			s.tr.CloseIdleConnections()
		}
	})
	return s.exitErr
}

// call sends a request to the control API and decodes its JSON answer.
func (s *server) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.control+path, body)
	if err != nil {
		return err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("soak control %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (s *server) inject(ctx context.Context, faults []fault.Fault) ([]int64, error) {
	var ids []int64
	err := s.call(ctx, http.MethodPost, "/faults", faults, &ids)
	return ids, err
}

// remove removes the faults and returns how often each fired.
func (s *server) remove(ctx context.Context, ids []int64) ([]int, error) {
	var hits []int
	err := s.call(ctx, http.MethodPost, "/faults/remove", ids, &hits)
	return hits, err
}

func (s *server) commands(ctx context.Context, sandboxName string) ([]serverCommand, error) {
	var out []serverCommand
	err := s.call(ctx, http.MethodGet, "/commands?sandbox="+url.QueryEscape(sandboxName), nil, &out)
	return out, err
}

func (s *server) file(ctx context.Context, sandboxName, p string, content bool) (fileState, error) {
	q := url.Values{"sandbox": {sandboxName}, "path": {p}}
	if content {
		q.Set("content", "1")
	}
	var st fileState
	err := s.call(ctx, http.MethodGet, "/file?"+q.Encode(), nil, &st)
	return st, err
}

func (s *server) state(ctx context.Context) (serverState, error) {
	var st serverState
	err := s.call(ctx, http.MethodGet, "/state", nil, &st)
	return st, err
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
