package shellexec_test

import (
	"fmt"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/shellexec"
)

func ExampleLookPath() {
	_, code, msg := shellexec.LookPath("no-such-command", "/nonexistent", "/")
	fmt.Print(code, " ", msg)
	// Output: 127 no-such-command: command not found
}
