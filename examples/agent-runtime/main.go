// Command agent-runtime runs one turn of a chat agent in a fresh sandbox:
// it creates a Node.js sandbox (4 vCPUs, 10-minute timeout) with retries,
// installs a package, writes the agent script, runs it with a secret passed
// only through the command's environment, parses the JSON the agent prints
// (its answer and token usage), reports it through a callback, and always
// stops the sandbox. Every phase is printed with its duration; failures carry
// a stable code (SANDBOX_CREATION_FAILED, SANDBOX_SETUP_FAILED, ...).
//
// The agent is a stand-in for a model call: it answers from the message
// itself and counts words as "tokens", so the example needs no model key.
//
//	go run ./examples/agent-runtime -message "hello there"
//	echo "hello there" | go run ./examples/agent-runtime
//
// With Vercel credentials in the environment it uses Vercel (runtime node24,
// npm install ms). Without them it starts the embedded local server, which
// runs commands as local processes without isolation, and says so. There,
// the install step copies a vendored copy of a tiny package into
// node_modules instead of downloading it (it works offline), and when node
// is not installed the agent is a POSIX sh script instead.
//
// The secret is read from AGENT_API_KEY (a made-up value when unset) and is
// never printed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/examples/internal/backend"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func main() {
	log.SetFlags(0)
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	message := flag.String("message", "", "the chat message (default: standard input when it is not a terminal, else a demo message)")
	local := backend.LocalFlag()
	flag.Parse()
	if *message == "" && stdinIsPipe() {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		if err != nil {
			log.Fatalf("agent-runtime: reading the message: %v", err)
		}
		*message = strings.TrimSpace(string(b))
	}
	if *message == "" {
		*message = demoMessage
		fmt.Fprintf(os.Stderr, "no message given: using the demo message %q\n", demoMessage)
	}
	secret := os.Getenv("AGENT_API_KEY")
	if secret == "" {
		secret = "demo-" + sandbox.NewName("")
	}
	client, mode, closeFn, err := connect(sigCtx, os.Stderr, *local)
	if err != nil {
		log.Fatalf("agent-runtime: %v", err)
	}
	defer closeFn()
	err = run(sigCtx, config{
		Client: client, Mode: mode, Message: *message, Secret: secret, Out: os.Stdout,
		OnResult: func(r AgentResult) {
			fmt.Printf("agent: %s\n", r.Text)
		},
	})
	if err != nil {
		closeFn()
		var we *workload.Error
		if errors.As(err, &we) {
			if we.Err != nil {
				log.Fatalf("agent-runtime: %s: %s\n  cause: %v", we.Code, we.UserMessage(), we.Err)
			}
			log.Fatalf("agent-runtime: %s: %s", we.Code, we.UserMessage())
		}
		log.Fatalf("agent-runtime: %v", err)
	}
}

// demoMessage is the chat message used when none is given.
const demoMessage = "What can you do inside a sandbox?"

// stdinIsPipe reports whether standard input is a pipe or a file rather
// than a terminal, so that reading it will not wait for a person to type.
func stdinIsPipe() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice == 0
}

// Mode says where the agent runs.
type Mode int

const (
	// Vercel: a real sandbox; node24 runtime and npm install.
	Vercel Mode = iota
	// LocalNode: the embedded server with node on this machine.
	LocalNode
	// LocalShell: the embedded server without node: a sh agent.
	LocalShell
)

// connect returns a client for Vercel when credentials are found, and for
// an embedded local server otherwise (see package backend), with the mode
// the agent runs in; it says which on w.
func connect(ctx context.Context, w io.Writer, forceLocal bool) (*sandbox.Client, Mode, func(), error) {
	b, err := backend.Open(ctx, w, forceLocal)
	if err != nil {
		return nil, 0, nil, err
	}
	c, err := b.NewClient()
	if err != nil {
		b.Close()
		return nil, 0, nil, err
	}
	mode := Vercel
	if b.Local() {
		mode = LocalNode
		if _, err := exec.LookPath("node"); err != nil {
			mode = LocalShell
			fmt.Fprintln(w, "node is not installed here: the agent runs as a POSIX sh script instead")
		}
	}
	return c, mode, b.Close, nil
}

// AgentResult is what the agent prints as JSON on its last line.
type AgentResult struct {
	Text          string         `json:"text"`
	Usage         workload.Usage `json:"usage"`
	SecretPresent bool           `json:"secretPresent"`
}

type config struct {
	Client   *sandbox.Client
	Mode     Mode
	Message  string
	Secret   string
	Out      io.Writer
	OnResult func(AgentResult)
	// Timeout defaults to 10 minutes. Retries are the client's (see
	// sandbox.WithRetryPolicy).
	Timeout time.Duration
}

// phasePrinter prints each phase with its duration and outcome.
type phasePrinter struct{ w io.Writer }

func (p phasePrinter) PhaseStart(_ context.Context, e workload.PhaseEvent) {
	fmt.Fprintf(p.w, "==> %s\n", label(e))
}

func label(e workload.PhaseEvent) string {
	if e.Step == "" {
		return string(e.Phase)
	}
	return string(e.Phase) + " " + e.Step
}

func (p phasePrinter) PhaseEnd(_ context.Context, e workload.PhaseEvent) {
	extra := ""
	if e.Usage != nil {
		extra += fmt.Sprintf(", %d input + %d output tokens", e.Usage.InputTokens, e.Usage.OutputTokens)
	}
	fmt.Fprintf(p.w, "    %s: %s in %s%s\n", label(e), e.Outcome(), e.Duration.Round(time.Millisecond), extra)
}

func run(ctx context.Context, cfg config) error {
	if strings.TrimSpace(cfg.Message) == "" {
		return &workload.Error{Code: workload.CodeInvalidInput, Message: "message: is required"}
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	r := &workload.Runner{Client: cfg.Client, Observer: phasePrinter{cfg.Out}}

	setup := []workload.Step{workload.WriteFilesStep("write agent",
		files.FromBytes("agent.mjs", []byte(agentJS)),
		files.FromBytes("agent.sh", []byte(agentSh)),
		files.FromBytes("message.txt", []byte(cfg.Message)),
	)}
	agent := []string{"node", "agent.mjs"}
	switch cfg.Mode {
	case Vercel:
		setup = append(setup, workload.CommandStep("npm install ms",
			&command.Cmd{Name: "npm", Args: []string{"install", "--no-audit", "--no-fund", "ms@2.1.3"}, Timeout: 5 * time.Minute}))
	default:
		fmt.Fprintln(cfg.Out, "(local: the install step copies a vendored copy of the package into node_modules, offline)")
		setup = append(setup,
			workload.WriteFilesStep("vendor package", files.FromBytes("vendor/ms/package.json", []byte(msPackageJSON)), files.FromBytes("vendor/ms/index.js", []byte(msIndexJS))),
			workload.CommandStep("install ms (vendored)", &command.Cmd{Name: "sh", Args: []string{"-c", "mkdir -p node_modules && cp -R vendor/ms node_modules/"}}))
		if cfg.Mode == LocalShell {
			agent = []string{"sh", "agent.sh"}
		}
	}
	rep, err := r.Run(ctx, workload.Job{
		Sandbox: sandbox.CreateParams{Runtime: "node24", VCPUs: 4, Timeout: timeout},
		Timeout: timeout,
		Setup:   setup,
		Name:    "agent",
		Execute: func(ctx context.Context, sb *sandbox.Sandbox) (*workload.Usage, error) {
			cmd := sb.Command(agent[0], agent[1:]...)
			// The secret reaches only the agent command, never the
			// sandbox's environment or a file.
			cmd.Env = map[string]string{"AGENT_API_KEY": cfg.Secret}
			cmd.Timeout = timeout
			cmd.InactivityTimeout = 2 * time.Minute
			res, err := cmd.Run(ctx)
			if err != nil {
				return nil, err
			}
			ar, err := parseAgentOutput(res.Stdout)
			if err != nil {
				return nil, &workload.Error{Code: workload.CodeExecutionFailed,
					Message: "The agent returned an answer that could not be read.", Err: err}
			}
			if cfg.OnResult != nil {
				cfg.OnResult(ar)
			}
			return &ar.Usage, nil
		},
	})
	if rep.SandboxName != "" {
		fmt.Fprintf(cfg.Out, "sandbox %s (session %s) stopped: %t\n", rep.SandboxName, rep.SessionID, rep.Stopped)
	}
	return err
}

// parseAgentOutput reads the last non-empty line of the agent's output as
// JSON: agents may log before answering.
func parseAgentOutput(stdout []byte) (AgentResult, error) {
	var ar AgentResult
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := lines[len(lines)-1]
	if err := json.Unmarshal([]byte(last), &ar); err != nil {
		return ar, fmt.Errorf("agent output is not JSON: %w", err)
	}
	if ar.Text == "" {
		return ar, errors.New("agent output has no text")
	}
	return ar, nil
}

const agentJS = `import { readFileSync } from "node:fs";
import ms from "ms";

const started = Date.now();
const message = readFileSync("message.txt", "utf8").trim();
const words = message.split(/\s+/).filter(Boolean);
console.error("agent: thinking about", words.length, "words");
const text = "You said: " + message + " (" + words.length + " words, answered in " + ms(Date.now() - started) + ")";
console.log(JSON.stringify({
  text,
  usage: { inputTokens: words.length, outputTokens: text.split(/\s+/).length },
  secretPresent: (process.env.AGENT_API_KEY || "").length > 0,
}));
`

const agentSh = `#!/bin/sh
# The same agent without node: answers with the message's word count.
set -eu
words=$(wc -w < message.txt | tr -d ' ')
echo "agent: thinking about $words words" >&2
present=false
if [ -n "${AGENT_API_KEY:-}" ]; then present=true; fi
printf '{"text":"You sent a message of %s words (sh agent)","usage":{"inputTokens":%s,"outputTokens":9},"secretPresent":%s}\n' "$words" "$words" "$present"
`

const msPackageJSON = `{"name": "ms", "version": "2.1.3-vendored", "main": "index.js"}
`

const msIndexJS = `// A vendored stand-in for the "ms" package: formats milliseconds.
module.exports = function ms(n) {
  if (n < 1000) return n + "ms";
  if (n < 60000) return Math.round(n / 1000) + "s";
  return Math.round(n / 60000) + "m";
};
`
