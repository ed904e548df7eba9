package cassette

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// Placeholders that carry no number.
const (
	phEscape  = "{{lb}}" // a literal "{{" of the recorded data
	phSecret  = "{{secret}}"
	phJWT     = "{{jwt}}"
	phTeam    = "{{team}}"
	phProject = "{{project}}"
	phRequest = "{{request}}"
)

// minKnownLen is the shortest learned value (a team or project id, a
// generated name) replaced inside longer strings.
const minKnownLen = 6

// redactedText is what a redacted secret reads as in a replayed answer.
const redactedText = "REDACTED"

// volatile describes one kind of volatile value found by a pattern.
type volatile struct {
	kind   string
	re     *regexp.Regexp
	prefix string // of the values a replay makes up; empty: kind + "-"
}

// normalizer turns concrete values into placeholders (record, and requests
// during replay) and placeholders back into concrete values (answers during
// replay). Its state grows as values are met, so the same value always gets
// the same placeholder. It is not safe for concurrent use; Cassette guards
// it with its mutex.
type normalizer struct {
	res      int64 // resolution of times, ms (>= 1)
	secrets  []string
	toPH     map[string]string // concrete value -> placeholder
	fromPH   map[string]string // placeholder -> concrete value
	count    map[string]int
	kinds    []volatile
	known    []string // keys of toPH that no pattern finds, longest first
	phRe     *regexp.Regexp
	timeRe   *regexp.Regexp
	timeBase int64
	haveBase bool
}

func newNormalizer(resMs int64, extra []volatile, secrets []string) *normalizer {
	n := &normalizer{
		res:    max(resMs, 1),
		toPH:   map[string]string{},
		fromPH: map[string]string{},
		count:  map[string]int{},
		phRe:   regexp.MustCompile(`\{\{([a-z][a-z0-9_-]*)(?::([^{}]*))?\}\}`),
		timeRe: regexp.MustCompile(`^\{\{time:([+-][0-9]+)\}\}$`),
	}
	n.kinds = append(n.kinds,
		volatile{kind: "session", re: regexp.MustCompile(`\bsbx_[A-Za-z0-9]{4,}`), prefix: "sbx_"},
		volatile{kind: "command", re: regexp.MustCompile(`\bcmd_[A-Za-z0-9]{4,}`), prefix: "cmd_"},
		volatile{kind: "snapshot", re: regexp.MustCompile(`\bsnap_[A-Za-z0-9]{4,}`), prefix: "snap_"},
		volatile{kind: "name", re: regexp.MustCompile(`\bsbx-[0-9a-f]{16}\b`)}, // named by sandbox.Client.Create
	)
	n.kinds = append(n.kinds, extra...)
	for _, s := range secrets {
		n.addSecret(s)
	}
	return n
}

// addSecret makes s redacted wherever it appears from now on.
func (n *normalizer) addSecret(s string) {
	if len(s) < 4 || slices.Contains(n.secrets, s) {
		return
	}
	n.secrets = append(n.secrets, s)
	slices.SortFunc(n.secrets, func(a, b string) int { return len(b) - len(a) })
}

// learn binds value to placeholder ph in both directions (first binding of
// a placeholder wins for the reverse direction).
func (n *normalizer) learn(value, ph string) {
	if value == "" || strings.Contains(value, "{{") {
		return
	}
	if _, ok := n.toPH[value]; ok {
		return
	}
	n.toPH[value] = ph
	if _, ok := n.fromPH[ph]; !ok {
		n.fromPH[ph] = value
	}
	if !n.matchesKind(value) {
		n.known = append(n.known, value)
		slices.SortFunc(n.known, func(a, b string) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return strings.Compare(a, b)
		})
	}
}

// matchesKind reports whether a pattern of a volatile kind matches all of
// value; such values are found by the pattern and need no literal search.
func (n *normalizer) matchesKind(value string) bool {
	for _, k := range n.kinds {
		if loc := k.re.FindStringIndex(value); loc != nil && loc[0] == 0 && loc[1] == len(value) {
			return true
		}
	}
	return false
}

// placeholder returns the placeholder of value, numbering a new one of kind.
func (n *normalizer) placeholder(kind, value string) string {
	if ph, ok := n.toPH[value]; ok {
		return ph
	}
	n.count[kind]++
	ph := "{{" + kind + ":" + strconv.Itoa(n.count[kind]) + "}}"
	n.learn(value, ph)
	return ph
}

// seg is a piece of a string being normalised; ph pieces are placeholders
// already and are not looked into again.
type seg struct {
	s  string
	ph bool
}

func replaceSegs(segs []seg, find func(string) [][]int, repl func(string) string) []seg {
	var out []seg
	for _, sg := range segs {
		if sg.ph {
			out = append(out, sg)
			continue
		}
		locs := find(sg.s)
		if len(locs) == 0 {
			out = append(out, sg)
			continue
		}
		last := 0
		for _, l := range locs {
			if l[0] > last {
				out = append(out, seg{s: sg.s[last:l[0]]})
			}
			out = append(out, seg{s: repl(sg.s[l[0]:l[1]]), ph: true})
			last = l[1]
		}
		if last < len(sg.s) {
			out = append(out, seg{s: sg.s[last:]})
		}
	}
	return out
}

func literalFinder(lit string) func(string) [][]int {
	return func(s string) [][]int {
		var locs [][]int
		for i := 0; ; {
			j := strings.Index(s[i:], lit)
			if j < 0 {
				return locs
			}
			locs = append(locs, []int{i + j, i + j + len(lit)})
			i += j + len(lit)
		}
	}
}

func regexpFinder(re *regexp.Regexp) func(string) [][]int {
	return func(s string) [][]int { return re.FindAllStringIndex(s, -1) }
}

// str normalises a string: it escapes "{{", redacts secrets and JWTs and
// replaces volatile values by their placeholders.
func (n *normalizer) str(s string) string {
	if s == "" {
		return s
	}
	if ph, ok := n.toPH[s]; ok {
		return ph
	}
	segs := []seg{{s: s}}
	segs = replaceSegs(segs, literalFinder("{{"), func(string) string { return phEscape })
	for _, sec := range n.secrets {
		segs = replaceSegs(segs, literalFinder(sec), func(string) string { return phSecret })
	}
	isJWT := func(sh redact.Shape) bool { return sh == redact.ShapeJWT }
	segs = replaceSegs(segs, shapeFinder(isJWT), func(string) string { return phJWT })
	segs = replaceSegs(segs, shapeFinder(func(sh redact.Shape) bool { return !isJWT(sh) }), func(string) string { return phSecret })
	for _, v := range n.known {
		if len(v) < minKnownLen {
			continue // too likely to occur by chance; replaced where it stands alone
		}
		ph := n.toPH[v]
		segs = replaceSegs(segs, literalFinder(v), func(string) string { return ph })
	}
	for _, k := range n.kinds {
		segs = replaceSegs(segs, regexpFinder(k.re), func(m string) string { return n.placeholder(k.kind, m) })
	}
	if len(segs) == 1 && !segs[0].ph {
		return segs[0].s
	}
	var b strings.Builder
	for _, sg := range segs {
		b.WriteString(sg.s)
	}
	return b.String()
}

// output normalises command output that a redact.Writer has redacted:
// each redact.Marker becomes {{secret}}, the text between is normalised
// as any string (which also hides secrets learned after the Writer began).
func (n *normalizer) output(s string) string {
	parts := strings.Split(s, redact.Marker)
	for i, p := range parts {
		parts[i] = n.str(p)
	}
	return strings.Join(parts, phSecret)
}

// redactBytes redacts secrets and token-shaped text in binary data,
// leaving the rest.
func (n *normalizer) redactBytes(b []byte) []byte {
	spans := redact.NewSet(n.secrets...).Find(b)
	if len(spans) == 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	last := 0
	for _, sp := range spans {
		out = append(append(out, b[last:sp.Start]...), redactedText...)
		last = sp.End
	}
	return append(out, b[last:]...)
}

// shapeFinder finds the token-shaped secrets of the shapes keep accepts
// (for a password in a URL, only the password).
func shapeFinder(keep func(redact.Shape) bool) func(string) [][]int {
	return func(s string) [][]int {
		var locs [][]int
		for _, sp := range (*redact.Set)(nil).Find([]byte(s)) {
			if keep(sp.Shape) {
				locs = append(locs, []int{sp.Start, sp.End})
			}
		}
		return locs
	}
}

func isTimeKey(key string) bool { return len(key) > 2 && strings.HasSuffix(key, "At") }

func isDurationKey(key string) bool {
	switch key {
	case "durationMs", "duration", "activeCpuDurationMs", "totalDurationMs", "totalActiveCpuDurationMs":
		return true
	}
	return false
}

func (n *normalizer) floor(ms int64) int64 {
	return int64(math.Floor(float64(ms)/float64(n.res))) * n.res
}

// json normalises a decoded JSON value (numbers as json.Number) in place
// and returns it. key is the object key the value sits under.
func (n *normalizer) json(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // placeholders are numbered in a stable order
		for _, k := range keys {
			x[k] = n.json(x[k], k)
		}
		return x
	case []any:
		for i := range x {
			x[i] = n.json(x[i], key)
		}
		return x
	case string:
		switch {
		case redact.IsSecretName(key):
			n.addSecret(x)
			return phSecret
		case key == "teamId" || key == "ownerId":
			n.learn(x, phTeam)
			return phTeam
		case key == "projectId":
			n.learn(x, phProject)
			return phProject
		}
		return n.str(x)
	case json.Number:
		ms, err := x.Int64()
		if err != nil {
			return x
		}
		switch {
		case isTimeKey(key) && ms >= 1e11:
			return n.time(ms)
		case isDurationKey(key):
			return json.Number(strconv.FormatInt(n.floor(ms), 10))
		}
		return x
	}
	return v
}

// time turns an epoch-millisecond timestamp into a placeholder relative to
// the first timestamp met.
func (n *normalizer) time(ms int64) string {
	if !n.haveBase {
		n.timeBase, n.haveBase = ms, true
	}
	off := n.floor(ms - n.timeBase)
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return "{{time:" + sign + strconv.FormatInt(off, 10) + "}}"
}

// query normalises query parameters, learning team and project values.
func (n *normalizer) query(q map[string][]string) map[string][]string {
	if len(q) == 0 {
		return nil
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string][]string, len(q))
	for _, k := range keys {
		vals := make([]string, len(q[k]))
		for i, v := range q[k] {
			switch {
			case k == "teamId" || k == "slug":
				n.learn(v, phTeam)
				vals[i] = phTeam
			case k == "projectId" || k == "project":
				n.learn(v, phProject)
				vals[i] = phProject
			case redact.IsSecretName(k):
				n.addSecret(v)
				vals[i] = phSecret
			default:
				vals[i] = n.str(v)
			}
		}
		out[k] = vals
	}
	return out
}

// expand replaces the placeholders in s by concrete values, making up new
// ones for placeholders not met before.
func (n *normalizer) expand(s string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return n.phRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := n.phRe.FindStringSubmatch(m)
		kind, arg := sub[1], sub[2]
		switch kind {
		case "lb":
			return "{{"
		case "secret", "jwt":
			return redactedText
		case "request":
			return "cassette-replay"
		case "time":
			off, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return m
			}
			return strconv.FormatInt(n.timeBase+off, 10)
		case "team", "project":
			if v, ok := n.fromPH[m]; ok {
				return v
			}
			if kind == "team" {
				return "team_redacted"
			}
			return "prj_redacted"
		}
		if v, ok := n.fromPH[m]; ok {
			return v
		}
		num, err := strconv.Atoi(arg)
		if err != nil {
			return m
		}
		n.count[kind] = max(n.count[kind], num)
		v := n.makeUp(kind, num)
		n.learn(v, m)
		return v
	})
}

// makeUp returns the concrete value a replay uses for the num-th value of
// kind: ids keep their prefix and length (sbx_replay0…01), names read
// replay-<kind>-<num>.
func (n *normalizer) makeUp(kind string, num int) string {
	digits := strconv.Itoa(num)
	for _, k := range n.kinds {
		if k.kind == kind && k.prefix != "" {
			const body = 28
			pad := max(body-len("replay")-len(digits), 0)
			return k.prefix + "replay" + strings.Repeat("0", pad) + digits
		}
	}
	return "replay-" + kind + "-" + digits
}

// expandJSON expands placeholders in a decoded JSON value; a string that is
// exactly a time placeholder becomes a number again.
func (n *normalizer) expandJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			out[k] = n.expandJSON(x[k])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = n.expandJSON(x[i])
		}
		return out
	case string:
		if n.timeRe.MatchString(x) {
			return json.Number(n.expand(x))
		}
		return n.expand(x)
	}
	return v
}
