package sandboxerr_test

import (
	"errors"
	"fmt"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxerr"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestErrorIs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		code   string
		want   error
	}{
		{404, "not_found", sandbox.ErrNotFound}, {410, "sandbox_stopped", sandbox.ErrGone},
		{422, "sandbox_stopping", sandbox.ErrStopping}, {422, "sandbox_snapshotting", sandbox.ErrStopping},
		{429, "", sandbox.ErrRateLimited}, {401, "", sandbox.ErrUnauthorized}, {403, "forbidden", sandbox.ErrForbidden},
		{400, "bad_request", sandbox.ErrBadRequest}, {409, "", sandbox.ErrConflict}, {503, "", sandbox.ErrServer},
	}
	all := []error{sandbox.ErrNotFound, sandbox.ErrGone, sandbox.ErrStopping, sandbox.ErrRateLimited, sandbox.ErrUnauthorized, sandbox.ErrForbidden, sandbox.ErrBadRequest, sandbox.ErrConflict, sandbox.ErrServer}
	for _, tc := range cases {
		err := fmt.Errorf("wrapped: %w", &sandboxerr.APIError{StatusCode: tc.status, Code: tc.code})
		for _, s := range all {
			assert.Equal(t, s == tc.want, errors.Is(err, s), "%d %s vs %v", tc.status, tc.code, s)
		}
	}
	assert.False(t, errors.Is(&sandboxerr.APIError{StatusCode: 422, Code: "other"}, sandbox.ErrStopping))
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	e := &sandboxerr.APIError{StatusCode: 429, Code: "rate_limited", Message: "slow down", Method: "GET",
		Path: "/v2/sandboxes", RequestID: "iad1::abc", RetryAfter: 30 * time.Second}
	assert.Equal(t, "vercel sandbox: GET /v2/sandboxes: status 429 Too Many Requests (rate_limited): slow down (retry after 30s) [request iad1::abc]", e.Error())
}

func TestOutcomeUnknown(t *testing.T) {
	t.Parallel()
	inner := &sandboxerr.APIError{StatusCode: 500, Method: "POST", Path: "/x"}
	e := &sandboxerr.OutcomeUnknownError{Op: "run command", SandboxName: "box", SessionID: "sbx_1", Err: inner}
	assert.ErrorIs(t, e, sandbox.ErrUnknownResult)
	assert.ErrorIs(t, e, sandbox.ErrServer)
	assert.Contains(t, e.Error(), "sandbox box, session sbx_1")
}

func TestStreamAndInputErrors(t *testing.T) {
	t.Parallel()
	assert.ErrorIs(t, &sandboxerr.StreamError{Code: "stream_ended_early"}, sandbox.ErrStreamEnded)
	assert.ErrorIs(t, &sandboxerr.StreamError{Code: "sandbox_stopped"}, sandbox.ErrGone)
	assert.NotErrorIs(t, &sandboxerr.StreamError{Code: "x"}, sandbox.ErrStreamEnded)
	var err error = &sandboxerr.InputError{Field: "Ports[2]", Reason: "80 is outside"}
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	assert.Equal(t, "vercel sandbox: invalid Ports[2]: 80 is outside", err.Error())
	d := &sandboxerr.DecodeError{Method: "GET", Path: "/p", StatusCode: 200, Err: errors.New("bad")}
	assert.ErrorIs(t, d, sandbox.ErrDecode)
}

func TestOutputLostErrorText(t *testing.T) {
	t.Parallel()
	gone := &sandboxerr.APIError{StatusCode: 404, Code: "not_found"}
	lost := &sandboxerr.OutputLostError{SessionID: "sbx_1", CommandID: "cmd_1", ExitCode: 0, Delivered: 12, Err: gone}
	assert.ErrorIs(t, lost, sandbox.ErrOutputLost)
	assert.ErrorIs(t, lost, sandbox.ErrNotFound)
	assert.Contains(t, lost.Error(), "exit code 0")
	assert.Contains(t, lost.Error(), "no longer available after 12 bytes")

	differs := &sandboxerr.OutputLostError{SessionID: "sbx_1", CommandID: "cmd_1", ExitCode: -1, Delivered: 9, Stream: "stderr", Offset: 4}
	assert.ErrorIs(t, differs, sandbox.ErrOutputLost)
	assert.Contains(t, differs.Error(), "log replay of stderr does not match the output delivered, at byte 4")
	assert.NotContains(t, differs.Error(), "exit code", "an unknown exit code is not printed")
}
