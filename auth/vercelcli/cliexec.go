package vercelcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// execFunc runs a program and returns what it wrote to standard output.
type execFunc func(ctx context.Context, name string, args ...string) (stdout []byte, err error)

// CLIExecRefresher gets OIDC tokens from the Vercel CLI by running
//
//	vercel project token <project> --format=json [--scope <team>]
//
// which works with every kind of CLI login, including keyring and DPoP ones
// that a library cannot use directly. The project and team must match
// ^[A-Za-z0-9][A-Za-z0-9._-]*$ (else ErrInvalidID), so they cannot be read
// as options. When Refresh gets no project, it is read from
// .vercel/project.json as by LinkedProjectRefresher.
type CLIExecRefresher struct {
	// Command is the program to run. Default: node_modules/.bin/vercel in
	// the first directory at or above the working directory that has it,
	// else "vercel" found on PATH.
	Command string

	exec execFunc    // runs the command; nil: os/exec, with ctx ending the process
	sys  host.System // working directory, files and environment; zero: the real ones
}

// Refresh runs the vercel command and returns the token it prints.
func (r *CLIExecRefresher) Refresh(ctx context.Context, t auth.Target) (string, error) {
	project, team, err := resolveTarget(r.sys, "", "", t.ProjectID, t.TeamID)
	if err != nil {
		return "", err
	}
	return r.run(ctx, project, team)
}

func (r *CLIExecRefresher) run(ctx context.Context, project, team string) (string, error) {
	if err := checkIDs(project, team); err != nil {
		return "", err
	}
	args := []string{"project", "token", project, "--format=json"}
	if team != "" {
		args = append(args, "--scope", team)
	}
	run := r.exec
	if run == nil {
		run = runCommand
	}
	out, err := run(ctx, r.command(), args...)
	if err != nil {
		return "", fmt.Errorf("vercel project token: %w", err)
	}
	var v struct {
		Token any `json:"token"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &v); err != nil {
		return "", fmt.Errorf("vercel project token: output is not JSON")
	}
	tok, ok := v.Token.(string)
	if !ok || tok == "" {
		return "", fmt.Errorf("vercel project token: output has no string-valued token property")
	}
	return tok, nil
}

// command finds the vercel program.
func (r *CLIExecRefresher) command() string {
	if r.Command != "" {
		return r.Command
	}
	name := "vercel"
	if r.sys.OS() == "windows" {
		name = "vercel.cmd"
	}
	dir, err := r.sys.Wd()
	if err != nil {
		return "vercel"
	}
	for {
		p := filepath.Join(dir, "node_modules", ".bin", name)
		if fi, err := r.sys.Files().Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "vercel"
		}
		dir = parent
	}
}

// runCommand is the default execFunc. Standard error is reported in the
// error, shortened and with token shapes hidden; standard output (which
// holds the token) never is.
func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 2048}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, redact.NewSet().String(msg))
		}
		return nil, err
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
