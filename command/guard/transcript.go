package guard

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Transcript records every command a Gate was asked to run: the ones it
// ran and the ones it refused. Output is bounded per command and in total;
// argv and output are redacted. It marshals to JSON as is.
type Transcript struct {
	Workspace string   `json:"workspace"`
	Entries   []Record `json:"entries"`
	// OutputBytes is the output kept across all entries; it never exceeds
	// the policy's MaxTranscript.
	OutputBytes int64 `json:"output_bytes"`
	// Truncated reports that some entry's output was cut.
	Truncated bool `json:"truncated"`
}

// Record is one command in a Transcript.
type Record struct {
	// Argv is the command name and arguments, redacted (arguments longer
	// than 1 KiB are shortened).
	Argv []string `json:"argv"`
	Dir  string   `json:"dir,omitempty"`
	// Rule is the rule that allowed or denied the command.
	Rule string `json:"rule,omitempty"`
	// Denied is true when the policy refused the command; nothing ran.
	Denied bool `json:"denied,omitempty"`
	// Reason explains a denial.
	Reason string `json:"reason,omitempty"`
	// CommandID is the sandbox's id of the command, when it started.
	CommandID string `json:"command_id,omitempty"`
	// ExitCode is nil when the command did not run or its end is unknown.
	ExitCode  *int      `json:"exit_code,omitempty"`
	StartedAt time.Time `json:"started_at"`
	Duration  Duration  `json:"duration"`
	// Output is stdout and stderr interleaved as they arrived, redacted
	// and bounded; a cut ends with a truncation marker.
	Output string `json:"output,omitempty"`
	// OutputBytes counts all output the command produced.
	OutputBytes int64 `json:"output_bytes"`
	Truncated   bool  `json:"truncated,omitempty"`
	// Error describes a failure other than a non-zero exit, redacted.
	Error string `json:"error,omitempty"`
}

// Duration is a time.Duration that marshals as text ("1.5s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. Text that
// time.ParseDuration refuses is an *InputError, and leaves d unchanged.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return apierr.Invalid("Duration", "%v", err)
	}
	*d = Duration(v)
	return nil
}

// String returns the duration as text.
func (d Duration) String() string { return time.Duration(d).String() }

// TruncationMarker returns the line that ends output cut after omitted
// bytes.
func TruncationMarker(omitted int64) string {
	return fmt.Sprintf("\n[… output truncated: %d bytes omitted …]\n", omitted)
}

// WriteTo writes the transcript as text, one block per command. A nil w
// is an *InputError.
func (t Transcript) WriteTo(w io.Writer) (int64, error) {
	if w == nil {
		return 0, apierr.Invalid("w", "nil writer")
	}
	var sb strings.Builder
	for _, e := range t.Entries {
		fmt.Fprintf(&sb, "$ %s\n", strings.Join(quoteArgs(e.Argv), " "))
		switch {
		case e.Denied:
			fmt.Fprintf(&sb, "  denied by rule %q: %s\n", e.Rule, e.Reason)
			continue
		case e.ExitCode != nil:
			fmt.Fprintf(&sb, "  allowed by %q; exit %d in %s\n", e.Rule, *e.ExitCode, time.Duration(e.Duration).Round(time.Millisecond))
		case e.Rule == "":
			fmt.Fprintf(&sb, "  not run: %s\n", e.Error)
		default:
			fmt.Fprintf(&sb, "  allowed by %q; did not finish: %s\n", e.Rule, e.Error)
		}
		if e.Output != "" {
			for _, line := range strings.SplitAfter(strings.TrimSuffix(e.Output, "\n"), "\n") {
				sb.WriteString("  | " + strings.TrimSuffix(line, "\n") + "\n")
			}
		}
	}
	if t.Truncated {
		sb.WriteString("(output truncated)\n")
	}
	n, err := io.WriteString(w, sb.String())
	return int64(n), err
}

func quoteArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			a = fmt.Sprintf("%q", a)
		}
		out[i] = a
	}
	return out
}

func (t Transcript) clone() Transcript {
	c := t
	c.Entries = make([]Record, len(t.Entries))
	for i, e := range t.Entries {
		e.Argv = append([]string(nil), e.Argv...)
		if e.ExitCode != nil {
			code := *e.ExitCode
			e.ExitCode = &code
		}
		c.Entries[i] = e
	}
	return c
}
