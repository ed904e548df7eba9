package workload_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func TestErrorMatching(t *testing.T) {
	cause := &sandbox.APIError{StatusCode: 500, Message: "internal detail xyz"}
	err := fmt.Errorf("agent: %w", &workload.Error{Code: workload.CodeTimeout, Err: cause})
	assert.ErrorIs(t, err, workload.ErrTimeout)
	assert.NotErrorIs(t, err, workload.ErrCreationFailed)
	assert.ErrorIs(t, err, sandbox.ErrServer, "the cause is reachable")
	var we *workload.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, workload.CodeTimeout, we.Code)
	assert.Equal(t, "SANDBOX_TIMEOUT", string(workload.ErrorCodeOf(err)))
	assert.Equal(t, workload.CodeTimeout.Message(), we.UserMessage())
	assert.NotContains(t, we.UserMessage(), "xyz", "server text is not shown to users")
	assert.Contains(t, we.Error(), "xyz", "but is logged")
	assert.Equal(t, workload.ErrorCode(""), workload.ErrorCodeOf(errors.New("plain")))
}

func TestErrorCodesAreStable(t *testing.T) {
	for code, want := range map[workload.ErrorCode]string{
		workload.CodeCreationFailed:  "SANDBOX_CREATION_FAILED",
		workload.CodeTimeout:         "SANDBOX_TIMEOUT",
		workload.CodeSetupFailed:     "SANDBOX_SETUP_FAILED",
		workload.CodeExecutionFailed: "AGENT_EXECUTION_FAILED",
	} {
		assert.Equal(t, want, string(code))
		assert.NotEmpty(t, code.Message())
	}
}
