package backend_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/sbx-go/vercel-sandbox/examples/internal/backend"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

func ExampleOpen() {
	ctx := context.Background()
	// An example program passes os.Stderr and its -local flag; this one
	// forces the embedded local server and discards the notice.
	b, err := backend.Open(ctx, io.Discard, true)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	client, err := b.NewClient()
	if err != nil {
		log.Fatal(err)
	}
	sb, err := client.Create(ctx, sandbox.CreateParams{Timeout: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	out, err := sb.Command("echo", "hello").Output(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("local: %t, output: %s", b.Local(), out)
	// Output: local: true, output: hello
}

func ExamplePrefixed() {
	w := backend.Prefixed(os.Stdout, "    | ")
	fmt.Fprint(w, "first line\nsecond ")
	fmt.Fprint(w, "line\n")
	// Output:
	//     | first line
	//     | second line
}
