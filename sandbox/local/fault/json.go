package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// faultJSON is the JSON form of a Fault. Durations are Go duration
// strings ("1.5s"); a number is read as seconds.
type faultJSON struct {
	Method       string   `json:"method,omitempty"`
	Path         string   `json:"path,omitempty"`
	Status       int      `json:"status,omitempty"`
	Code         string   `json:"code,omitempty"`
	Message      string   `json:"message,omitempty"`
	RetryAfter   duration `json:"retryAfter,omitempty"`
	Body         string   `json:"body,omitempty"`
	ContentType  string   `json:"contentType,omitempty"`
	Times        int      `json:"times,omitempty"`
	Probability  float64  `json:"probability,omitempty"`
	Latency      duration `json:"latency,omitempty"`
	Reset        string   `json:"reset,omitempty"`
	Cut          bool     `json:"cut,omitempty"`
	Stall        duration `json:"stall,omitempty"`
	AfterFrames  int      `json:"afterFrames,omitempty"`
	Expire       bool     `json:"expire,omitempty"`
	ExpireToken  bool     `json:"expireToken,omitempty"`
	AfterHandler bool     `json:"afterHandler,omitempty"`
}

// duration is a time.Duration in JSON: a Go duration string, or a number
// of seconds.
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 1.5s or 200ms", s)
		}
		*d = duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("%s is neither a duration string nor a number of seconds", b)
	}
	*d = duration(secs * float64(time.Second))
	return nil
}

// MarshalJSON encodes f as a JSON object with the keys method, path,
// status, code, message, retryAfter, body, contentType, times,
// probability, latency, reset ("before" or "after"), cut, stall,
// afterFrames, expire, expireToken and afterHandler. Durations are Go duration strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultJSON{
		Method: f.Method, Path: f.Path, Status: f.Status, Code: f.Code, Message: f.Message,
		RetryAfter: duration(f.RetryAfter), Body: f.Body, ContentType: f.ContentType,
		Times: f.Times, Probability: f.Probability, Latency: duration(f.Latency),
		Reset: f.Reset.String(), Cut: f.Cut, Stall: duration(f.Stall), AfterFrames: f.AfterFrames,
		Expire: f.Expire, ExpireToken: f.ExpireToken, AfterHandler: f.AfterHandler,
	})
}

// UnmarshalJSON decodes the form MarshalJSON writes; durations may also
// be numbers of seconds. Unknown keys are an error. It does not validate
// the fault (see Validate).
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return invalidFault("%v", err)
	}
	out := Fault{
		Method: j.Method, Path: j.Path, Status: j.Status, Code: j.Code, Message: j.Message,
		RetryAfter: time.Duration(j.RetryAfter), Body: j.Body, ContentType: j.ContentType,
		Times: j.Times, Probability: j.Probability, Latency: time.Duration(j.Latency),
		Cut: j.Cut, Stall: time.Duration(j.Stall), AfterFrames: j.AfterFrames,
		Expire: j.Expire, ExpireToken: j.ExpireToken, AfterHandler: j.AfterHandler,
	}
	switch j.Reset {
	case "":
	case "before":
		out.Reset = ResetBeforeHeaders
	case "after":
		out.Reset = ResetAfterHeaders
	default:
		return invalidFault("reset %q: want before or after", j.Reset)
	}
	*f = out
	return nil
}
