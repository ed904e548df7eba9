// Command local-exec is a local code executor: it runs a JavaScript (Node)
// or shell snippet in an isolated sandbox on this machine and prints the
// outcome as one JSON object.
//
// It starts the local Vercel Sandbox API (package
// sandbox/local) with isolated.Executor, so the snippet runs in a
// bubblewrap sandbox with a private root filesystem, no network and a
// memory limit, and drives it with the ordinary client, as it would drive
// a Vercel sandbox. Where isolation is unavailable it says why on standard
// error and runs the snippet as a host process.
//
// Usage:
//
//	local-exec [-lang js|sh] [-code CODE] [-timeout 30s] [-memory 512]
//
// The code comes from -code, else from standard input when it is not a
// terminal; with neither, a built-in demo runs. A JavaScript snippet's
// value is the value of its last expression (a promise is awaited); a
// shell snippet's value is its standard output, parsed as JSON when it is
// JSON. On success it prints
//
//	{"ok":true,"value":...,"stdout":"...","stderr":"...","executionTimeMs":12,"executor":"isolated"}
//
// and on failure, with exit status 1,
//
//	{"ok":false,"error":{"type":"SyntaxError|RuntimeError|TimeoutError|MemoryError","message":"...","stack":"..."},...}
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
)

// Defaults of the flags.
const (
	defaultTimeout  = 30 * time.Second
	defaultMemoryMB = 512
)

// Error types of a failed run.
const (
	SyntaxError  = "SyntaxError"
	RuntimeError = "RuntimeError"
	TimeoutError = "TimeoutError"
	MemoryError  = "MemoryError"
)

// demoJS and demoSh run when no code is given.
const (
	demoJS = `const primes = [];
for (let n = 2; primes.length < 10; n++) if (primes.every(p => n % p)) primes.push(n);
console.log("computed in", require("os").hostname(), "as uid", process.getuid());
({ primes, sum: primes.reduce((a, b) => a + b, 0) })`
	demoSh = `printf '{"system":"%s","user":"%s","cwd":"%s"}\n' "$(uname -s)" "$(id -un)" "$PWD"`
)

// Result is what local-exec prints.
type Result struct {
	OK              bool            `json:"ok"`
	Value           json.RawMessage `json:"value,omitempty"`
	Error           *RunError       `json:"error,omitempty"`
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	ExecutionTimeMs int64           `json:"executionTimeMs"`
	Executor        string          `json:"executor"`
}

// RunError is a structured failure.
type RunError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// Options are the parsed flags.
type Options struct {
	Lang     string
	Code     string
	Timeout  time.Duration
	MemoryMB int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A terminal on standard input means no snippet was piped in: run the
	// demo rather than wait for someone to type.
	var stdin io.Reader
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
		stdin = os.Stdin
	}
	code, err := run(ctx, os.Args[1:], stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-exec:", err)
		stop()
		os.Exit(2)
	}
	stop()
	os.Exit(code)
}

// run parses args, runs the snippet and prints the result. It returns the
// exit status: 0 on success, 1 when the snippet failed.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fl := flag.NewFlagSet("local-exec", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o Options
	fl.StringVar(&o.Lang, "lang", "", "js or sh (default: js when node is installed, else sh)")
	fl.StringVar(&o.Code, "code", "", "the snippet (default: standard input, else a demo)")
	fl.DurationVar(&o.Timeout, "timeout", defaultTimeout, "time limit")
	fl.IntVar(&o.MemoryMB, "memory", defaultMemoryMB, "memory limit in MiB")
	if err := fl.Parse(args); err != nil {
		return 2, err
	}
	if fl.NArg() > 0 {
		return 2, fmt.Errorf("unexpected argument %q", fl.Arg(0))
	}
	if o.Code == "" && stdin != nil {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return 2, err
		}
		o.Code = string(data)
	}
	res, err := Execute(ctx, o, stderr)
	if err != nil {
		return 2, err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return 2, err
	}
	if !res.OK {
		return 1, nil
	}
	return 0, nil
}

// Execute runs one snippet in a fresh sandbox. log receives notes about the
// executor. The error is for failures of the executor itself; the
// snippet's failures are in the Result.
func Execute(ctx context.Context, o Options, log io.Writer) (*Result, error) {
	_, nodeErr := exec.LookPath("node")
	switch o.Lang {
	case "":
		o.Lang = "sh"
		if nodeErr == nil {
			o.Lang = "js"
		}
	case "js":
		if nodeErr != nil {
			return nil, errors.New("-lang js needs node, which is not installed")
		}
	case "sh":
	default:
		return nil, fmt.Errorf("-lang must be js or sh, not %q", o.Lang)
	}
	if o.Timeout <= 0 {
		return nil, errors.New("-timeout must be positive")
	}
	if o.MemoryMB <= 0 {
		return nil, errors.New("-memory must be positive")
	}
	if strings.TrimSpace(o.Code) == "" {
		o.Code = demoSh
		if o.Lang == "js" {
			o.Code = demoJS
		}
	}

	memory := int64(o.MemoryMB) << 20
	exe, mode := newExecutor(memory, o.Lang == "js")
	if _, ok := exe.(*isolated.Executor); !ok {
		fmt.Fprintf(log, "local-exec: isolation unavailable, running on the host: %s\n", mode)
	}
	srv, client, err := local.Listen(ctx, local.WithExecutor(exe))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "local-exec"})
	if err != nil {
		return nil, err
	}
	if o.Lang == "js" {
		return runJS(ctx, sb, o, mode)
	}
	return runSh(ctx, sb, o, mode)
}

// newExecutor returns the isolated executor when available. Under RLIMIT_AS
// (no memory cgroup) Node needs address space well beyond its heap; there
// the heap limit given to V8 enforces the memory limit.
func newExecutor(memory int64, js bool) (local.Executor, string) {
	exe, mode := isolated.Best(isolated.Memory(memory))
	if iso, ok := exe.(*isolated.Executor); ok && js && !iso.CgroupMemory() {
		_ = iso.Close()
		exe, mode = isolated.Best(isolated.Memory(memory + 8<<30))
	}
	return exe, mode
}

// jsRunner evaluates the snippet and writes the outcome to a file: the
// value of its last expression, or the error.
const jsRunner = `'use strict';
const fs = require('fs'), vm = require('vm');
const [codePath, resultPath] = process.argv.slice(2);
const save = (r) => fs.writeFileSync(resultPath, JSON.stringify(r));
const fail = (type, e) => {
  const isErr = e instanceof Error;
  save({ ok: false, error: { type, message: isErr ? e.message : String(e), stack: isErr ? e.stack : undefined } });
  process.exitCode = 1;
};
let script;
try {
  script = new vm.Script(fs.readFileSync(codePath, 'utf8'), { filename: 'snippet.js' });
} catch (e) {
  fail(e instanceof SyntaxError ? 'SyntaxError' : 'RuntimeError', e);
}
if (script) {
  globalThis.require = require; // as in the REPL
  Promise.resolve().then(() => script.runInThisContext()).then((v) => {
    let json;
    try {
      json = JSON.stringify(v === undefined ? null : v);
    } catch (e) {
      return fail('RuntimeError', new TypeError('the value is not JSON-serialisable: ' + e.message));
    }
    fs.writeFileSync(resultPath, '{"ok":true,"value":' + (json === undefined ? 'null' : json) + '}');
  }, (e) => fail(e instanceof RangeError && /allocation|memory/i.test(e.message) ? 'MemoryError' : 'RuntimeError', e));
}
`

// Paths of the JavaScript run, relative to the command's working
// directory: on the host executor (no bubblewrap) a command sees the
// host's file system, where an absolute sandbox path such as /tmp/x is
// not the file the client wrote.
const (
	runnerPath = ".local-exec/runner.js"
	codePath   = ".local-exec/snippet.js"
	resultPath = ".local-exec/result.json"
)

func runJS(ctx context.Context, sb *sandbox.Sandbox, o Options, mode string) (*Result, error) {
	if err := sb.FS().WriteFile(ctx, runnerPath, []byte(jsRunner), 0o644); err != nil {
		return nil, err
	}
	if err := sb.FS().WriteFile(ctx, codePath, []byte(o.Code), 0o644); err != nil {
		return nil, err
	}
	heap := o.MemoryMB * 3 / 4
	cmd := sb.Command("node", fmt.Sprintf("--max-old-space-size=%d", max(heap, 16)), "--stack-trace-limit=20", runnerPath, codePath, resultPath)
	cmd.Timeout = o.Timeout
	res, elapsed, runErr := runCmd(ctx, cmd)
	if res == nil {
		return nil, runErr
	}
	out := newResult(res, elapsed, mode)
	// The runner's own report wins when it got to write one.
	if data, err := sb.FS().ReadFile(ctx, resultPath); err == nil {
		var rep struct {
			OK    bool            `json:"ok"`
			Value json.RawMessage `json:"value"`
			Error *RunError       `json:"error"`
		}
		if err := json.Unmarshal(data, &rep); err == nil {
			out.OK, out.Value, out.Error = rep.OK && res.ExitCode() == 0, rep.Value, rep.Error
			if out.OK || out.Error != nil {
				return out, nil
			}
		}
	}
	out.Error = classify(res, o, elapsed)
	return out, nil
}

// syntaxCheckTimeout bounds the parse of a shell snippet.
const syntaxCheckTimeout = 10 * time.Second

func runSh(ctx context.Context, sb *sandbox.Sandbox, o Options, mode string) (*Result, error) {
	// Parse first, without running anything (sh -n). A shell reports a
	// syntax error with exit code 2 and a message.
	cmd := sb.Command("sh", "-n", "-c", o.Code)
	cmd.Timeout = syntaxCheckTimeout
	check, err := cmd.Run(ctx)
	if check == nil {
		return nil, err
	}
	if check.ExitCode() == 2 && len(bytes.TrimSpace(check.Stderr)) > 0 {
		out := newResult(check, check.Duration, mode)
		out.Error = &RunError{Type: SyntaxError, Message: strings.TrimSpace(string(check.Stderr))}
		return out, nil
	}
	run := sb.Command("sh", "-c", o.Code)
	run.Timeout = o.Timeout
	res, elapsed, runErr := runCmd(ctx, run)
	if res == nil {
		return nil, runErr
	}
	out := newResult(res, elapsed, mode)
	if res.ExitCode() != 0 {
		out.Error = classify(res, o, elapsed)
		return out, nil
	}
	out.OK = true
	value := bytes.TrimSpace(res.Stdout)
	if json.Valid(value) && len(value) > 0 {
		out.Value = value
	} else {
		out.Value, _ = json.Marshal(string(value))
	}
	return out, nil
}

// runCmd runs cmd and measures it. A nil result comes with the error that
// prevented the run; a non-zero exit is not an error here.
func runCmd(ctx context.Context, cmd *command.Cmd) (*command.Result, time.Duration, error) {
	start := time.Now()
	res, err := cmd.Run(ctx)
	elapsed := time.Since(start)
	var ee *command.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, elapsed, err
	}
	return res, elapsed, nil
}

func newResult(res *command.Result, elapsed time.Duration, mode string) *Result {
	if res.Duration > 0 {
		elapsed = res.Duration
	}
	return &Result{
		Stdout:          string(res.Stdout),
		Stderr:          string(res.Stderr),
		ExecutionTimeMs: elapsed.Milliseconds(),
		Executor:        mode,
	}
}

// classify names the failure of a run that left no report of its own.
func classify(res *command.Result, o Options, elapsed time.Duration) *RunError {
	stderr := string(res.Stderr)
	switch {
	case isolated.OutcomeOf(res.ExitCode(), stderr) == isolated.OutcomeMemoryLimit,
		strings.Contains(stderr, "heap out of memory"), strings.Contains(stderr, "Allocation failed"):
		return &RunError{Type: MemoryError, Message: fmt.Sprintf("the snippet exceeded its memory limit of %d MiB", o.MemoryMB)}
	case res.TimedOut:
		return &RunError{Type: TimeoutError, Message: fmt.Sprintf("the snippet did not finish within %s", o.Timeout)}
	}
	msg := lastLines(stderr, 5)
	if msg == "" {
		msg = fmt.Sprintf("exit code %d", res.ExitCode())
	}
	return &RunError{Type: RuntimeError, Message: msg}
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var lines []string
	for l := range strings.Lines(s) {
		if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
