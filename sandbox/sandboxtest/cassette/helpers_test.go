package cassette_test

import (
	"encoding/json"
	"io"
	"regexp"
)

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

func mustRe(s string) *regexp.Regexp { return regexp.MustCompile(s) }
