package cassette

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvVar is the environment variable ModeFromEnv and New read: "record",
// "replay" or "auto" (record when the file does not exist, else replay).
const EnvVar = "SANDBOXTEST_CASSETTE"

// Mode says whether a Cassette records or replays.
type Mode int

const (
	// Replay answers requests from the cassette file; the file must exist.
	Replay Mode = iota
	// Record sends requests to the real transport and writes what passed
	// to the file on Close, replacing it.
	Record
	// RecordIfMissing records when the file does not exist and replays it
	// otherwise.
	RecordIfMissing
)

// String returns the name EnvVar uses for m.
func (m Mode) String() string {
	switch m {
	case Replay:
		return "replay"
	case Record:
		return "record"
	case RecordIfMissing:
		return "auto"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "record", "replay" or "auto" (also "record-if-missing").
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "record":
		return Record, nil
	case "replay":
		return Replay, nil
	case "auto", "record-if-missing", "recordifmissing":
		return RecordIfMissing, nil
	}
	return 0, fmt.Errorf("cassette: unknown mode %q (want record, replay or auto)", s)
}

// ModeFromEnv returns the mode named by the EnvVar environment variable,
// or def when it is unset or empty.
func ModeFromEnv(def Mode) (Mode, error) {
	v := os.Getenv(EnvVar)
	if v == "" {
		return def, nil
	}
	m, err := ParseMode(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", EnvVar, err)
	}
	return m, nil
}

// Option configures a Cassette.
type Option func(*config)

type config struct {
	res      time.Duration
	scale    float64
	secrets  []string
	kinds    []volatile
	store    bool
	headers  []string
	upstream *url.URL
	errs     []error
}

// WithResolution sets how finely times are recorded (default 100 ms): the
// offsets of stream frames, timestamps (relative to the first one met) and
// durations are rounded down to a multiple of d, so that re-recordings
// whose times fall into the same steps give the same file. Use
// time.Millisecond to keep every millisecond.
func WithResolution(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond {
			c.errs = append(c.errs, fmt.Errorf("cassette: WithResolution(%v): must be at least 1ms", d))
			return
		}
		c.res = d
	}
}

// WithTiming makes a replay keep the recorded pace of stream frames,
// scaled by scale (1 is the recorded pace, 0.5 twice as fast). The default,
// 0, delivers every frame at once (still one frame per write).
func WithTiming(scale float64) Option {
	return func(c *config) {
		if scale < 0 {
			c.errs = append(c.errs, fmt.Errorf("cassette: WithTiming(%v): negative scale", scale))
			return
		}
		c.scale = scale
	}
}

// WithRedact adds values that must never be written to the file; wherever
// they appear they are recorded as {{secret}}. Bearer tokens, JWTs and
// values under secret-looking keys are redacted without being named here.
func WithRedact(values ...string) Option {
	return func(c *config) { c.secrets = append(c.secrets, values...) }
}

// WithVolatile adds a kind of volatile value: every match of re is
// recorded as {{kind:N}}, numbered in order of appearance, and a replay
// answers with a made-up value (replay-<kind>-N) that it maps back when
// the client sends it. Use it for names a test generates at random. kind
// must match [a-z][a-z0-9_-]* and not be a built-in one.
func WithVolatile(kind string, re *regexp.Regexp) Option {
	return func(c *config) {
		reserved := []string{"lb", "secret", "jwt", "team", "project", "request", "time", "session", "command", "snapshot", "name"}
		if !regexp.MustCompile(`^[a-z][a-z0-9_-]*$`).MatchString(kind) || slices.Contains(reserved, kind) || re == nil {
			c.errs = append(c.errs, fmt.Errorf("cassette: WithVolatile(%q): invalid or reserved kind, or nil pattern", kind))
			return
		}
		c.kinds = append(c.kinds, volatile{kind: kind, re: re})
	}
}

// WithStoreBodies stores binary request bodies (base64) in the file; by
// default they are recorded as size and sha256 only, and archives as their
// entry list. Matching uses the summary either way.
func WithStoreBodies(on bool) Option { return func(c *config) { c.store = on } }

// WithHeaders records these response headers too, in addition to
// Content-Type, Content-Disposition, Retry-After, Location and X-Vercel-Id.
func WithHeaders(names ...string) Option {
	return func(c *config) {
		for _, h := range names {
			c.headers = append(c.headers, http.CanonicalHeaderKey(h))
		}
	}
}

// WithUpstream makes a recording cassette's Handler (and NewServer) a
// recording proxy: every request is forwarded to baseURL (for example
// https://vercel.com/api, or a sandboxtest server's URL) and recorded, so
// that clients which cannot take a RoundTripper, in any language, can be
// recorded too. It has no effect on a replay.
func WithUpstream(baseURL string) Option {
	return func(c *config) {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.errs = append(c.errs, fmt.Errorf("cassette: WithUpstream(%q): want an http or https URL", baseURL))
			return
		}
		c.upstream = u
	}
}

// Cassette records HTTP traffic to a file, or replays a file. Open or New
// it, use Transport (and in replay mode Handler or NewServer), then Close.
// It is safe for concurrent use.
type Cassette struct {
	path  string
	mode  Mode // Record or Replay, after RecordIfMissing was resolved
	cfg   config
	resMs int64

	mu     sync.Mutex
	norm   *normalizer
	seq    int
	its    []*interaction   // recorded or loaded, in seq order (recorded: in start order)
	used   []bool           // replay: interactions already answered
	keys   []string         // replay: rendered requests
	misses []*MismatchError // replay: requests nothing matched
	pend   []chan struct{}  // record: request bodies still being summarised
	closed bool
	start  time.Time
}

// Open returns a cassette backed by the file at path. In Replay mode (and
// RecordIfMissing when the file exists) the file is read at once; in
// Record mode it is written by Close.
func Open(path string, mode Mode, opts ...Option) (*Cassette, error) {
	cfg := config{res: 100 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	if path == "" {
		return nil, errors.New("cassette: empty path")
	}
	switch mode {
	case Replay, Record:
	case RecordIfMissing:
		mode = Replay
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			mode = Record
		} else if err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
	default:
		return nil, fmt.Errorf("cassette: invalid mode %d", int(mode))
	}
	c := &Cassette{path: path, mode: mode, cfg: cfg, resMs: cfg.res.Milliseconds(), start: time.Now()}
	c.norm = newNormalizer(c.resMs, cfg.kinds, cfg.secrets)
	if mode == Replay {
		if err := c.load(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// New opens the cassette at path for a test, in the mode named by the
// SANDBOXTEST_CASSETTE environment variable (record, replay or auto;
// default auto, which records when the file does not exist), and closes it
// when the test ends, reporting a failure to save and every request a
// replay could not match as test errors.
func New(t testing.TB, path string, opts ...Option) *Cassette {
	t.Helper()
	mode, err := ModeFromEnv(RecordIfMissing)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(path, mode, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("cassette: %v", err)
		}
		for _, m := range c.Misses() {
			t.Errorf("%v", m)
		}
	})
	return c
}

// Mode returns Record or Replay: what the cassette does.
func (c *Cassette) Mode() Mode { return c.mode }

// Path returns the file's path.
func (c *Cassette) Path() string { return c.path }

// Transport returns the RoundTripper to give the client. When recording it
// sends each request through base (http.DefaultTransport when nil) and
// records it; when replaying it answers from the cassette and never uses
// base.
func (c *Cassette) Transport(base http.RoundTripper) http.RoundTripper {
	if c.mode == Record {
		if base == nil {
			base = http.DefaultTransport
		}
		return &recorder{c: c, base: base}
	}
	return &replayer{c: c}
}

// Len returns the number of interactions recorded so far, or loaded.
func (c *Cassette) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.its)
}

// Remaining returns how many recorded interactions a replay has not
// answered yet (0 when recording).
func (c *Cassette) Remaining() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, u := range c.used {
		if !u {
			n++
		}
	}
	return n
}

// Misses returns the requests a replay could not match, in order.
func (c *Cassette) Misses() []*MismatchError {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.misses)
}

// Save writes what was recorded so far to the file, atomically (a
// temporary file in the same directory, then a rename). It does nothing in
// replay mode. Interactions whose stream is still open are written with
// the frames read so far.
func (c *Cassette) Save() error {
	if c.mode != Record {
		return nil
	}
	c.waitBodies()
	c.mu.Lock()
	its := make([]*interaction, len(c.its))
	for i, it := range c.its {
		cp := *it
		cp.frames = slices.Clone(it.frames)
		if cp.Response != nil {
			// Copies: a recording still going on changes the originals.
			r := *cp.Response
			if r.Stream != nil {
				s := *r.Stream
				if s.End == "" {
					s.End = endClosed
				}
				s.Frames = len(cp.frames)
				r.Stream = &s
			}
			cp.Response = &r
		}
		its[i] = &cp
	}
	c.mu.Unlock()

	dir := filepath.Dir(c.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(c.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	tmp := f.Name()
	err = encode(f, c.resMs, its)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("cassette: saving %s: %w", c.path, err)
	}
	return nil
}

// Close saves a recording (see Save) and ends the cassette. Further
// requests through its transport fail. It is safe to call more than once;
// only the first call saves.
func (c *Cassette) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	return c.Save()
}

// waitBodies waits (at most 10 s) for request bodies still being read.
func (c *Cassette) waitBodies() {
	c.mu.Lock()
	pend := slices.Clone(c.pend)
	c.mu.Unlock()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for _, ch := range pend {
		select {
		case <-ch:
		case <-deadline.C:
			return
		}
	}
}

func (c *Cassette) load() error {
	f, err := os.Open(c.path)
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	defer f.Close()
	its, err := decode(f)
	if err != nil {
		return fmt.Errorf("cassette: reading %s: %w", c.path, err)
	}
	slices.SortStableFunc(its, func(a, b *interaction) int { return a.Seq - b.Seq })
	c.its = its
	c.used = make([]bool, len(its))
	c.keys = make([]string, len(its))
	for i, it := range its {
		c.keys[i] = it.Request.render()
	}
	c.norm.timeBase, c.norm.haveBase = c.start.UnixMilli(), true
	return nil
}

// Errors for errors.Is.
var (
	// ErrClosed is returned for requests made after Close.
	ErrClosed = errors.New("cassette: closed")
	// ErrNoMatch is matched by a *MismatchError.
	ErrNoMatch = errors.New("cassette: no recorded interaction matches the request")
)
