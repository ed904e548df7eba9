package apierr

import (
	"errors"
	"fmt"
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
		{404, "not_found", ErrNotFound}, {410, "sandbox_stopped", ErrGone},
		{422, "sandbox_stopping", ErrStopping}, {422, "sandbox_snapshotting", ErrStopping},
		{429, "", ErrRateLimited}, {401, "", ErrUnauthorized}, {403, "forbidden", ErrForbidden},
		{400, "bad_request", ErrBadRequest}, {409, "", ErrConflict}, {503, "", ErrServer},
	}
	all := []error{ErrNotFound, ErrGone, ErrStopping, ErrRateLimited, ErrUnauthorized, ErrForbidden, ErrBadRequest, ErrConflict, ErrServer}
	for _, tc := range cases {
		err := fmt.Errorf("wrapped: %w", &Error{StatusCode: tc.status, Code: tc.code})
		for _, s := range all {
			assert.Equal(t, s == tc.want, errors.Is(err, s), "%d %s vs %v", tc.status, tc.code, s)
		}
	}
	assert.False(t, errors.Is(&Error{StatusCode: 422, Code: "other"}, ErrStopping))
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	e := &Error{StatusCode: 429, Code: "rate_limited", Message: "slow down", Method: "GET",
		Path: "/v2/sandboxes", RequestID: "iad1::abc", RetryAfter: 30 * time.Second}
	assert.Equal(t, "vercel sandbox: GET /v2/sandboxes: status 429 Too Many Requests (rate_limited): slow down (retry after 30s) [request iad1::abc]", e.Error())
}

func TestOutcomeUnknown(t *testing.T) {
	t.Parallel()
	inner := &Error{StatusCode: 500, Method: "POST", Path: "/x"}
	e := &OutcomeUnknownError{Op: "run command", SandboxName: "box", SessionID: "sbx_1", Err: inner}
	assert.ErrorIs(t, e, ErrUnknownResult)
	assert.ErrorIs(t, e, ErrServer)
	assert.Contains(t, e.Error(), "sandbox box, session sbx_1")
}

func TestStreamAndInputErrors(t *testing.T) {
	t.Parallel()
	assert.ErrorIs(t, &StreamError{Code: "stream_ended_early"}, ErrStreamEnded)
	assert.ErrorIs(t, &StreamError{Code: "sandbox_stopped"}, ErrGone)
	assert.NotErrorIs(t, &StreamError{Code: "x"}, ErrStreamEnded)
	err := Invalid("Ports[2]", "%d is outside", 80)
	assert.ErrorIs(t, err, ErrInvalidInput)
	assert.Equal(t, "vercel sandbox: invalid Ports[2]: 80 is outside", err.Error())
	d := &DecodeError{Method: "GET", Path: "/p", StatusCode: 200, Err: errors.New("bad")}
	assert.ErrorIs(t, d, ErrDecode)
}

func TestOutputLostErrorText(t *testing.T) {
	t.Parallel()
	gone := &Error{StatusCode: 404, Code: "not_found"}
	lost := &OutputLostError{SessionID: "sbx_1", CommandID: "cmd_1", ExitCode: 0, Delivered: 12, Err: gone}
	assert.ErrorIs(t, lost, ErrOutputLost)
	assert.ErrorIs(t, lost, ErrNotFound)
	assert.Contains(t, lost.Error(), "exit code 0")
	assert.Contains(t, lost.Error(), "no longer available after 12 bytes")

	differs := &OutputLostError{SessionID: "sbx_1", CommandID: "cmd_1", ExitCode: -1, Delivered: 9, Stream: "stderr", Offset: 4}
	assert.ErrorIs(t, differs, ErrOutputLost)
	assert.Contains(t, differs.Error(), "log replay of stderr does not match the output delivered, at byte 4")
	assert.NotContains(t, differs.Error(), "exit code", "an unknown exit code is not printed")
}
