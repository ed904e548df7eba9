package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// Limits of CodeInput.
const (
	MinCodeTimeout     = 100 * time.Millisecond
	MaxCodeTimeout     = 5 * time.Minute
	DefaultCodeTimeout = 30 * time.Second
	MinVCPUs           = 1
	MaxVCPUs           = 8
	// MemoryPerVCPU is the memory the service gives each vCPU, in MB; the
	// memory of a sandbox is always vCPUs × MemoryPerVCPU.
	MemoryPerVCPU = 2048
	// DefaultOutputLimit is how many bytes of each stream a CodeResult
	// keeps when CodeExecutor.OutputLimit is zero.
	DefaultOutputLimit = 64 << 10
	// MaxCodeSize bounds CodeInput.Code.
	MaxCodeSize = 1 << 20
)

// Language says how to run code of one language.
type Language struct {
	// Runtime is the sandbox runtime to create ("node24"); empty for the
	// default image.
	Runtime string
	// File is the name the code is written to, in the sandbox's working
	// directory.
	File string
	// Command runs the file: its path is appended as the last argument.
	Command []string
}

// DefaultLanguages returns the languages a CodeExecutor knows by default:
// "javascript" (Node.js), "python" and "sh".
func DefaultLanguages() map[string]Language {
	return map[string]Language{
		"javascript": {Runtime: "node24", File: "main.mjs", Command: []string{"node"}},
		"python":     {Runtime: "python3.13", File: "main.py", Command: []string{"python3"}},
		"sh":         {File: "main.sh", Command: []string{"sh"}},
	}
}

// CodeInput is a request to run code, as an executeCode tool receives it.
type CodeInput struct {
	Code string `json:"code"`
	// Language is a key of CodeExecutor.Languages; empty means
	// CodeExecutor.DefaultLanguage.
	Language string `json:"language,omitempty"`
	// TimeoutMs bounds the run, 100 ms to 5 min; 0 means 30 s.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// VCPUs is 1, or an even number up to 8; 0 means the server default.
	VCPUs int `json:"vcpus,omitempty"`
	// MemoryMB, when set, must equal VCPUs × 2048 (the service derives
	// memory from vCPUs and accepts no other value).
	MemoryMB int `json:"memoryMb,omitempty"`
}

func invalid(field, format string, args ...any) *Error {
	msg := field + ": " + fmt.Sprintf(format, args...)
	return &Error{Code: CodeInvalidInput, Message: msg, Err: fmt.Errorf("%w: %s", sandbox.ErrInvalidInput, msg)}
}

// Timeout returns the run's timeout, with the default applied.
func (in CodeInput) Timeout() time.Duration {
	if in.TimeoutMs == 0 {
		return DefaultCodeTimeout
	}
	return time.Duration(in.TimeoutMs) * time.Millisecond
}

// Validate checks in against the limits and returns an *Error with
// CodeInvalidInput whose message names the field.
func (in CodeInput) Validate() error {
	switch {
	case strings.TrimSpace(in.Code) == "":
		return invalid("code", "is required")
	case len(in.Code) > MaxCodeSize:
		return invalid("code", "is %d bytes, the maximum is %d", len(in.Code), MaxCodeSize)
	case strings.ContainsRune(in.Code, 0):
		return invalid("code", "contains a NUL byte")
	}
	if in.TimeoutMs != 0 {
		if d := in.Timeout(); d < MinCodeTimeout || d > MaxCodeTimeout {
			return invalid("timeoutMs", "must be between %d and %d, got %d",
				MinCodeTimeout.Milliseconds(), MaxCodeTimeout.Milliseconds(), in.TimeoutMs)
		}
	}
	if in.VCPUs != 0 && (in.VCPUs < MinVCPUs || in.VCPUs > MaxVCPUs || in.VCPUs != 1 && in.VCPUs%2 != 0) {
		return invalid("vcpus", "must be 1 or an even number up to %d, got %d", MaxVCPUs, in.VCPUs)
	}
	if in.MemoryMB != 0 {
		v := in.VCPUs
		if v == 0 {
			return invalid("memoryMb", "needs vcpus: memory is vcpus × %d MB", MemoryPerVCPU)
		}
		if in.MemoryMB != v*MemoryPerVCPU {
			return invalid("memoryMb", "must be vcpus × %d = %d for %d vCPUs, got %d", MemoryPerVCPU, v*MemoryPerVCPU, v, in.MemoryMB)
		}
	}
	return nil
}

// CodeResult is the outcome of running code, shaped for an executeCode tool.
type CodeResult struct {
	// OK is true when the code ran and exited with code 0.
	OK     bool   `json:"ok"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// ExitCode is nil when the code did not finish with an exit code
	// (it never started, or was abandoned); never invented.
	ExitCode   *int  `json:"exitCode"`
	DurationMs int64 `json:"durationMs"`
	// Truncated is set when either stream exceeded the output limit.
	Truncated       bool `json:"truncated"`
	StdoutTruncated bool `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool `json:"stderrTruncated,omitempty"`
	// TimedOut is set when the code ran longer than its timeout and was
	// killed.
	TimedOut bool `json:"timedOut"`
	// Error is set when the code could not be run (invalid input, no
	// sandbox), with a message safe to show.
	Error *ResultError `json:"error,omitempty"`
}

// ResultError is the code and user-facing message of an *Error.
type ResultError struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
}

// CodeExecutor runs untrusted code in a fresh sandbox per call, which is
// always stopped afterwards. The code is written to a file and run from it,
// never through a shell line; neither the host's environment nor any secret
// is passed to it.
type CodeExecutor struct {
	// Runner creates and stops the sandboxes.
	Runner *Runner
	// Languages maps CodeInput.Language to how it runs; nil means
	// DefaultLanguages().
	Languages map[string]Language
	// DefaultLanguage is used when CodeInput.Language is empty; "" means
	// "javascript".
	DefaultLanguage string
	// OutputLimit is how many bytes of each stream the result keeps;
	// 0 means DefaultOutputLimit.
	OutputLimit int
}

func (x *CodeExecutor) language(name string) (Language, string, error) {
	langs := x.Languages
	if langs == nil {
		langs = DefaultLanguages()
	}
	if name == "" {
		name = x.DefaultLanguage
		if name == "" {
			name = "javascript"
		}
	}
	l, ok := langs[name]
	if !ok {
		known := make([]string, 0, len(langs))
		for k := range langs {
			known = append(known, k)
		}
		sort.Strings(known)
		return l, name, invalid("language", "%q is not supported (supported: %s)", name, strings.Join(known, ", "))
	}
	if len(l.Command) == 0 || l.File == "" {
		return l, name, invalid("language", "%q has no command or file configured", name)
	}
	return l, name, nil
}

// Execute runs in.Code and returns its result. It always returns a result;
// when the code could not be run the result has OK false and Error set,
// and the error (an *Error) is returned too. Code that ran and failed
// (non-zero exit, thrown exception, timeout) is a result with OK false and
// a nil error.
func (x *CodeExecutor) Execute(ctx context.Context, in CodeInput) (*CodeResult, error) {
	res, err := x.execute(ctx, in)
	if err != nil {
		var we *Error
		if !errors.As(err, &we) {
			we = newError(CodeExecutionFailed, err)
			err = we
		}
		res.OK = false
		res.Error = &ResultError{Code: we.Code, Message: we.UserMessage()}
	}
	return res, err
}

func (x *CodeExecutor) execute(ctx context.Context, in CodeInput) (*CodeResult, error) {
	res := &CodeResult{}
	if x == nil || x.Runner == nil {
		return res, &Error{Code: CodeInvalidInput, Message: "no runner configured"}
	}
	if err := in.Validate(); err != nil {
		return res, err
	}
	lang, langName, err := x.language(in.Language)
	if err != nil {
		return res, err
	}
	limit := x.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	timeout := in.Timeout()
	job := Job{
		Sandbox: sandbox.CreateParams{
			Runtime: lang.Runtime,
			VCPUs:   in.VCPUs,
			// The session outlives the run only by a margin for setup.
			Timeout: timeout + 2*time.Minute,
		},
		Setup: []Step{WriteFilesStep("write code", files.FromBytes(lang.File, []byte(in.Code)))},
		Name:  "run " + langName,
		Execute: func(ctx context.Context, sb *sandbox.Sandbox) (*Usage, error) {
			cmd := sb.Command(lang.Command[0], append(slices.Clone(lang.Command[1:]), lang.File)...)
			cmd.Timeout = timeout // enforced inside the sandbox (SIGKILL)
			cmd.CaptureLimit = limit
			// Client-side backstop in case the sandbox's own timeout does
			// not end the stream: the command is killed at the deadline.
			rctx, cancel := context.WithTimeoutCause(ctx, timeout+5*time.Second, errCodeTimeout)
			defer cancel()
			began := time.Now()
			r, err := cmd.Run(rctx)
			elapsed := time.Since(began)
			var exitErr *command.ExitError
			switch {
			case err == nil || errors.As(err, &exitErr):
				fill(res, r, elapsed)
				res.OK = r.ExitCode() == 0
				res.TimedOut = r.TimedOut
				return nil, nil
			case context.Cause(rctx) == errCodeTimeout && ctx.Err() == nil:
				res.TimedOut = true
				res.DurationMs = elapsed.Milliseconds()
				return nil, nil
			}
			return nil, err
		},
	}
	_, err = x.Runner.Run(ctx, job)
	return res, err
}

var errCodeTimeout = errors.New("code execution timed out")

func fill(res *CodeResult, r *command.Result, elapsed time.Duration) {
	code := r.ExitCode()
	res.ExitCode = &code
	res.Stdout, res.Stderr = string(r.Stdout), string(r.Stderr)
	res.StdoutTruncated, res.StderrTruncated = r.StdoutTruncated, r.StderrTruncated
	res.Truncated = r.StdoutTruncated || r.StderrTruncated
	d := r.Duration
	if d <= 0 {
		d = elapsed
	}
	res.DurationMs = d.Milliseconds()
}
