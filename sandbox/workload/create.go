package workload

import (
	"context"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// Create creates a sandbox with c.Create, which is safe to retry and never
// makes two sandboxes (retries follow the client's sandbox.RetryPolicy),
// and reports a failure as an *Error: CodeCreationFailed, CodeInvalidInput
// (refused before sending), CodeTimeout or CodeCancelled (ctx ended).
func Create(ctx context.Context, c *sandbox.Client, p sandbox.CreateParams) (*sandbox.Sandbox, error) {
	if c == nil {
		return nil, &Error{Code: CodeInvalidInput, Message: "no sandbox client given"}
	}
	sb, err := c.Create(ctx, p)
	if err != nil {
		return nil, classify(ctx, CodeCreationFailed, err)
	}
	return sb, nil
}
