package httpcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// statusFailure turns a non-2xx answer into an error: an *apierr.Error, or
// for an unsafe call answered with 5xx, an OutcomeUnknownError around it.
// Any of secrets (the tokens the call sent) found in the answer is redacted.
func statusFailure(call *Call, resp *http.Response, attempts int, secrets []string) error {
	apiErr := apiError(call, resp, attempts, secrets)
	if call.Safety == Unsafe && resp.StatusCode >= 500 {
		return outcomeUnknown(call, apiErr, nil)
	}
	return apiErr
}

func apiError(call *Call, resp *http.Response, attempts int, secrets []string) error {
	hide := redact.NewSet(secrets...)
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	data = hide.Bytes(data)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	e := &apierr.Error{
		StatusCode:  resp.StatusCode,
		RequestID:   hide.String(resp.Header.Get("X-Vercel-Id")),
		Method:      call.Method,
		Path:        call.Path,
		SandboxName: call.SandboxName,
		SessionID:   call.SessionID,
		Attempts:    attempts,
	}
	now := time.Now()
	e.RateLimit = parseRateLimit(resp.Header, now)
	if ra, ok := retryAfter(resp, now); ok {
		e.RetryAfter = ra
	}
	var body wire.ErrorBody
	if err := json.Unmarshal(data, &body); err == nil && (body.Error.Code != "" || body.Error.Message != "") {
		// Decoding may have unescaped a token that the raw body hid.
		e.Code, e.Message = hide.String(body.Error.Code), hide.String(body.Error.Message)
	} else {
		e.Message = excerpt(data)
	}
	return e
}

// excerpt returns the start of data as valid UTF-8, for an error message.
func excerpt(data []byte) string {
	const n = 512
	s := strings.ToValidUTF8(string(bytes.TrimSpace(data)), "\uFFFD")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// outcomeUnknown says that the call may or may not have been acted on.
// hide finds the secrets to keep out of err's message.
func outcomeUnknown(call *Call, err error, hide *redact.Set) error {
	return &apierr.OutcomeUnknownError{Op: call.op(), Method: call.Method, Path: call.Path,
		SandboxName: call.SandboxName, SessionID: call.SessionID, Err: transportError(err, hide)}
}

// transportFailure is the error of a call whose only attempt failed
// without an answer.
func transportFailure(call *Call, err error, hide *redact.Set) error {
	if call.Safety == Unsafe && mayHaveActed(nil, err) {
		return outcomeUnknown(call, err, hide)
	}
	return transportError(err, hide)
}

// transportError drops the *url.Error layer of err, whose message repeats
// the full URL, and keeps the cause, with the secrets hide finds kept out
// of its message: a transport error can quote what the server sent
// (net/http's "malformed HTTP response" does).
func transportError(err error, hide *redact.Set) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = fmt.Errorf("vercel sandbox: %s %s: %w", ue.Op, redactURL(ue.URL), ue.Err)
	}
	return redact.Error(err, hide)
}

// redactURL drops the query and user info of a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.RawQuery = ""
	u.User = nil
	return u.String()
}
