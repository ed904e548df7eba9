package isolated_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
)

// Run a command in an isolated sandbox through the local API. Without
// isolation (not Linux, or user namespaces disabled), fall back to the
// host with Best, which says why.
func ExampleNew() {
	iso, err := isolated.New(
		isolated.Memory(256<<20), // 256 MiB per command
		isolated.Procs(128),
		isolated.CPUTime(10*time.Second),
	)
	if err != nil {
		fmt.Println(err) // wraps isolated.ErrUnavailable
		return
	}
	ctx := context.Background()
	srv, client, err := local.Listen(ctx, local.WithExecutor(iso))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		panic(err)
	}
	out, err := sb.Command("sh", "-c", "id -un; pwd; ls /home").Output(ctx)
	fmt.Printf("%s%v\n", out, err)
}

func ExampleOutcomeOf() {
	// What a client sees of a command that the executor's memory limit
	// ended: exit code 137 and the marker as the last line of stderr.
	stderr := "Killed\n" + isolated.MemoryLimitMarker + "\n"
	fmt.Println(isolated.OutcomeOf(137, stderr))
	fmt.Println(isolated.OutcomeOf(1, "error: file not found\n"))
	// Output:
	// memory limit
	// exited
}
