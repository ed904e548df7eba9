package fault

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// String returns the fault in the text form Parse reads.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(cmpOr(f.Method, "*"))
	b.WriteByte(' ')
	b.WriteString(cmpOr(f.Path, "*"))
	kv := func(k, v string) {
		b.WriteByte(' ')
		b.WriteString(k)
		if v != "" {
			b.WriteByte('=')
			b.WriteString(quoteValue(v))
		}
	}
	if f.Status != 0 {
		kv("status", strconv.Itoa(f.Status))
	}
	if f.Code != "" {
		kv("code", f.Code)
	}
	if f.Message != "" {
		kv("message", f.Message)
	}
	if f.RetryAfter > 0 {
		if f.RetryAfter%time.Second == 0 {
			kv("retry-after", strconv.FormatInt(int64(f.RetryAfter/time.Second), 10))
		} else {
			kv("retry-after", f.RetryAfter.String())
		}
	}
	if f.Body != "" {
		kv("body", f.Body)
	}
	if f.ContentType != "" {
		kv("content-type", f.ContentType)
	}
	if f.Times != 0 {
		kv("times", strconv.Itoa(f.Times))
	}
	if f.Probability != 0 {
		kv("p", strconv.FormatFloat(f.Probability, 'g', -1, 64))
	}
	if f.Latency != 0 {
		kv("latency", f.Latency.String())
	}
	if f.Reset != NoReset {
		kv("reset", f.Reset.String())
	}
	if f.Cut {
		kv("cut", strconv.Itoa(f.AfterFrames))
	} else if f.AfterFrames != 0 {
		kv("after-frames", strconv.Itoa(f.AfterFrames))
	}
	if f.Stall != 0 {
		kv("stall", f.Stall.String())
	}
	if f.Expire {
		kv("expire", "")
	}
	if f.ExpireToken {
		kv("expire-token", "")
	}
	if f.AfterHandler {
		kv("after-handler", "")
	}
	return b.String()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// quoteValue quotes v when the text form needs it.
func quoteValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\r\n\"\\=") || strconv.Quote(v) != `"`+v+`"` {
		return strconv.Quote(v)
	}
	return v
}

// flagKeys are the keys of the text form that may stand without a value.
var flagKeys = map[string]bool{"cut": true, "expire": true, "expire-token": true, "after-handler": true}

// Parse reads a fault in the text form described in the Fault
// documentation, such as
//
//	POST /v2/sandboxes/sessions/*/cmd status=500 times=1
//
// and validates it. Errors match ErrInvalid.
func Parse(text string) (Fault, error) {
	toks, err := splitFault(text)
	if err != nil {
		return Fault{}, err
	}
	var f Fault
	i := 0
	isPath := func(t string) bool { return strings.HasPrefix(t, "/") || t == "*" }
	if i < len(toks) && !strings.Contains(toks[i], "=") && !strings.HasPrefix(toks[i], "/") && !flagKeys[toks[i]] {
		if toks[i] != "*" {
			f.Method = strings.ToUpper(toks[i])
		}
		i++
	}
	if i < len(toks) && isPath(toks[i]) {
		if toks[i] != "*" {
			f.Path = toks[i]
		}
		i++
	}
	seen := map[string]bool{}
	for _, tok := range toks[i:] {
		k, v, hasValue := strings.Cut(tok, "=")
		if seen[k] {
			return Fault{}, invalidFault("%q given twice", k)
		}
		seen[k] = true
		if !hasValue && !flagKeys[k] {
			return Fault{}, invalidFault("%q needs a value (%s=…)", k, k)
		}
		if hasValue {
			if v, err = unquoteValue(v); err != nil {
				return Fault{}, invalidFault("%s: %v", k, err)
			}
		}
		if err := f.set(k, v, hasValue); err != nil {
			return Fault{}, err
		}
	}
	if err := f.Validate(); err != nil {
		return Fault{}, err
	}
	return f, nil
}

// set applies one key of the text form.
func (f *Fault) set(k, v string, hasValue bool) error {
	var err error
	num := func() int {
		var n int
		n, err = strconv.Atoi(v)
		if err != nil {
			err = invalidFault("%s=%q is not a whole number", k, v)
		}
		return n
	}
	dur := func() time.Duration {
		var d time.Duration
		d, err = time.ParseDuration(v)
		if err != nil {
			err = invalidFault("%s=%q is not a duration such as 1.5s or 200ms", k, v)
		}
		return d
	}
	switch k {
	case "status":
		f.Status = num()
	case "code":
		f.Code = v
	case "message":
		f.Message = v
	case "retry-after":
		if n, nerr := strconv.Atoi(v); nerr == nil {
			f.RetryAfter = time.Duration(n) * time.Second
		} else {
			f.RetryAfter = dur()
		}
	case "body":
		f.Body = v
	case "content-type":
		f.ContentType = v
	case "times":
		f.Times = num()
	case "p", "probability":
		f.Probability, err = strconv.ParseFloat(v, 64)
		if err != nil {
			err = invalidFault("%s=%q is not a number", k, v)
		}
	case "latency":
		f.Latency = dur()
	case "reset":
		switch v {
		case "before":
			f.Reset = ResetBeforeHeaders
		case "after":
			f.Reset = ResetAfterHeaders
		default:
			err = invalidFault("reset=%q: want before or after", v)
		}
	case "after-frames":
		f.AfterFrames = num()
	case "cut":
		f.Cut = true
		if hasValue {
			f.AfterFrames = num()
		}
	case "stall":
		f.Stall = dur()
	case "expire", "expire-token", "after-handler":
		on := true
		if hasValue {
			on, err = strconv.ParseBool(v)
			if err != nil {
				err = invalidFault("%s=%q is not a boolean", k, v)
			}
		}
		switch k {
		case "expire":
			f.Expire = on
		case "expire-token":
			f.ExpireToken = on
		default:
			f.AfterHandler = on
		}
	default:
		return invalidFault("unknown key %q", k)
	}
	return err
}

// splitFault splits the text form into tokens, keeping Go-quoted values
// (with their quotes) inside their token.
func splitFault(text string) ([]string, error) {
	var toks []string
	i := 0
	for {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		if i == len(text) {
			break
		}
		start := i
		for i < len(text) && !isSpace(text[i]) {
			if text[i] == '"' {
				q, err := strconv.QuotedPrefix(text[i:])
				if err != nil {
					return nil, invalidFault("unterminated quoted value at %q", text[i:])
				}
				i += len(q)
				continue
			}
			i++
		}
		toks = append(toks, text[start:i])
	}
	if len(toks) == 0 {
		return nil, invalidFault("empty fault")
	}
	return toks, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func unquoteValue(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		return strconv.Unquote(v)
	}
	if strings.Contains(v, `"`) {
		return "", errors.New("a quoted value must be quoted whole")
	}
	return v, nil
}
