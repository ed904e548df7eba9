// Command execute-code is an executeCode tool: it reads a JSON input such as
//
//	{"code": "console.log(1 + 1)", "language": "javascript", "timeoutMs": 5000, "vcpus": 1}
//
// runs the code in a fresh sandbox that is always disposed of, and prints
// the JSON result {ok, stdout, stderr, exitCode, durationMs, truncated,
// timedOut, error}. Invalid input is refused before any sandbox is created,
// with a message naming the field. The code is written to a file and run
// from it (never spliced into a shell line), its output is capped at 64 KiB
// per stream, and neither the host's environment nor any secret reaches it.
//
//	go run ./examples/execute-code                     # the demo: ok, thrown error, timeout, truncation
//	go run ./examples/execute-code -input '{"code":"console.log(42)"}'
//	echo '{"code":"print(42)","language":"python"}' | go run ./examples/execute-code -input -
//
// With Vercel credentials it uses Vercel; without them, the embedded local
// server (local processes, no isolation), and when node is not installed
// the demo uses the "sh" language instead of JavaScript.
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

	"github.com/sbx-go/vercel-sandbox/examples/internal/backend"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func main() {
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	input := flag.String("input", "", `a JSON input, or "-" to read it from standard input; empty runs the demo`)
	local := backend.LocalFlag()
	flag.Parse()
	client, lang, closeFn, err := connect(ctx, os.Stderr, *local)
	if err != nil {
		log.Fatalf("execute-code: %v", err)
	}
	defer closeFn()
	x := &workload.CodeExecutor{Runner: &workload.Runner{Client: client}, DefaultLanguage: lang}
	if *input == "" {
		x.OutputLimit = 1 << 10 // keeps the demo's truncated output short
		err = demo(ctx, x, lang, os.Stdout)
	} else {
		var in io.Reader = strings.NewReader(*input)
		if *input == "-" {
			in = os.Stdin
		}
		err = runOne(ctx, x, in, os.Stdout)
	}
	if err != nil {
		closeFn()
		log.Fatalf("execute-code: %v", err)
	}
}

// connect returns a client for Vercel when credentials are found, and for
// an embedded local server otherwise (see package backend), with the
// default language to use: "javascript", or "sh" on the local server when
// node is not installed. It says which on w.
func connect(ctx context.Context, w io.Writer, forceLocal bool) (*sandbox.Client, string, func(), error) {
	b, err := backend.Open(ctx, w, forceLocal)
	if err != nil {
		return nil, "", nil, err
	}
	c, err := b.NewClient()
	if err != nil {
		b.Close()
		return nil, "", nil, err
	}
	lang := "javascript"
	if b.Local() {
		if _, err := exec.LookPath("node"); err != nil {
			lang = "sh"
			fmt.Fprintln(w, `node is not installed here: the default language is "sh"`)
		}
	}
	return c, lang, b.Close, nil
}

// runOne reads one JSON input from r and writes the JSON result to w.
// A result is written for invalid input too (ok false, with error).
func runOne(ctx context.Context, x *workload.CodeExecutor, r io.Reader, w io.Writer) error {
	var in workload.CodeInput
	dec := json.NewDecoder(io.LimitReader(r, 2<<20))
	dec.DisallowUnknownFields()
	var res *workload.CodeResult
	if err := dec.Decode(&in); err != nil {
		res = &workload.CodeResult{Error: &workload.ResultError{Code: workload.CodeInvalidInput,
			Message: "the input is not a JSON object with the fields code, language, timeoutMs, vcpus, memoryMb"}}
	} else {
		res, _ = x.Execute(ctx, in) // the error is in the result
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// samples are the demo inputs, per language.
var samples = map[string][]struct{ Name, Code string }{
	"javascript": {
		{"ok", `console.log("1 + 1 =", 1 + 1)`},
		{"thrown error", `throw new Error("boom")`},
		{"timeout", `console.log("looping"); while (true) {}`},
		{"truncation", `console.log("x".repeat(200000))`},
	},
	"sh": {
		{"ok", `echo "1 + 1 = $((1 + 1))"`},
		{"thrown error", `echo "Error: boom" >&2; exit 1`},
		{"timeout", `echo looping; while :; do :; done`},
		{"truncation", `i=0; while [ $i -lt 20000 ]; do echo 0123456789; i=$((i+1)); done`},
	},
}

// demo runs the four samples and prints each result.
func demo(ctx context.Context, x *workload.CodeExecutor, lang string, w io.Writer) error {
	list, ok := samples[lang]
	if !ok {
		return errors.New("no demo for language " + lang)
	}
	for _, s := range list {
		in := workload.CodeInput{Code: s.Code, Language: lang, TimeoutMs: 5000}
		if s.Name == "timeout" {
			in.TimeoutMs = 1000
		}
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "== %s\ninput:  %s\nresult: ", s.Name, b)
		if err := runOne(ctx, x, strings.NewReader(string(b)), w); err != nil {
			return err
		}
	}
	// Invalid input, refused before any sandbox exists.
	fmt.Fprintf(w, "== invalid input\ninput:  %s\nresult: ", `{"code":"1","vcpus":3}`)
	return runOne(ctx, x, strings.NewReader(`{"code":"1","vcpus":3}`), w)
}
