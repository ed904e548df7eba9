package soak_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// The commands of the soak print known output: numbered lines on stdout,
// every m-th of them on stderr too, some padded to tens of KiB, some with
// pauses that keep the command running while its streams are cut. Each
// first appends its marker to a file of the sandbox, so that the end of a
// round can count how often each command ran. The output is computed
// again here, so every byte that reaches the caller is checked.

// scriptName is $0 of the script, which the server's command list uses to
// find the marker after it.
const scriptName = "soak"

// markersFile is where each command appends its marker, relative to the
// session's working directory.
const markersFile = ".soak-markers"

const script = `id=$1 n=$2 m=$3 k=$4 s=$5 pad=$6 code=$7
echo "$id" >> ` + markersFile + `
i=1
while [ "$i" -le "$n" ]; do
  echo "o $id $i $pad"
  if [ $((i % m)) -eq 0 ]; then echo "e $id $i $pad" >&2; fi
  if [ "$k" -gt 0 ] && [ $((i % k)) -eq 0 ]; then sleep "$s"; fi
  i=$((i + 1))
done
exit "$code"`

// commandSpec is one command of the soak and what it prints.
type commandSpec struct {
	id         string
	lines      int    // stdout lines
	errEvery   int    // every errEvery-th line also goes to stderr
	sleepEvery int    // pause after every sleepEvery-th line; 0: never
	sleep      string // the pause, in seconds, as sleep(1) reads it
	pad        string
	exit       int
}

// randomCommand draws a command: mostly small, sometimes hundreds of
// KiB in thousands of lines or in a few lines of tens of KiB, sometimes
// silent, a third of them slow, a fifth exiting non-zero.
func randomCommand(rng *rand.Rand, id string) commandSpec {
	c := commandSpec{id: id, errEvery: 1 + rng.IntN(5)}
	padLen := 0
	switch x := rng.IntN(100); {
	case x < 8: // no output
	case x < 45:
		c.lines, padLen = 1+rng.IntN(50), rng.IntN(40)
	case x < 75:
		c.lines, padLen = 50+rng.IntN(950), rng.IntN(120)
	case x < 87:
		c.lines, padLen = 1+rng.IntN(5), 8<<10+rng.IntN(56<<10)
	default:
		c.lines, padLen = 1000+rng.IntN(1500), 60+rng.IntN(90)
	}
	c.pad = randomText(rng, padLen)
	if c.lines > 0 && rng.IntN(3) == 0 {
		c.sleepEvery = max(1, c.lines/(1+rng.IntN(5)))
		c.sleep = "0." + strconv.Itoa(10+rng.IntN(30))
	}
	c.sleep = cmpOr(c.sleep, "0")
	if rng.IntN(5) == 0 {
		c.exit = 1 + rng.IntN(3)
	}
	return c
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

func randomText(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// cmd returns the command to run in sb.
func (c commandSpec) cmd(sb *sandbox.Sandbox) *command.Cmd {
	return sb.Command("sh", "-c", script, scriptName, c.id,
		strconv.Itoa(c.lines), strconv.Itoa(c.errEvery), strconv.Itoa(c.sleepEvery), c.sleep, c.pad, strconv.Itoa(c.exit))
}

// output returns what the command prints on stdout and stderr.
func (c commandSpec) output() (stdout, stderr []byte) {
	var o, e bytes.Buffer
	for i := 1; i <= c.lines; i++ {
		fmt.Fprintf(&o, "o %s %d %s\n", c.id, i, c.pad)
		if i%c.errEvery == 0 {
			fmt.Fprintf(&e, "e %s %d %s\n", c.id, i, c.pad)
		}
	}
	return o.Bytes(), e.Bytes()
}

func (c commandSpec) String() string {
	slow := ""
	if c.sleepEvery > 0 {
		slow = fmt.Sprintf(", a %ss pause every %d lines", c.sleep, c.sleepEvery)
	}
	return fmt.Sprintf("command %s: %d lines padded to %d bytes, stderr every %d%s, exit %d",
		c.id, c.lines, len(c.pad), c.errEvery, slow, c.exit)
}

// delivery compares what a caller received with what was printed.
type delivery struct {
	lost, dup, wrong int64
}

func (d delivery) clean() bool { return d == delivery{} }

func (d delivery) String() string {
	return fmt.Sprintf("%d bytes lost, %d duplicated, %d wrong", d.lost, d.dup, d.wrong)
}

// compare returns what got lacks of want, holds twice, or holds that want
// does not. The lines of want are unique (numbered), which lets a
// mismatch be told apart: a line missing is lost, a line twice is
// duplicated, any other line (or lines out of order) is wrong.
func compare(want, got []byte) delivery {
	if bytes.Equal(want, got) {
		return delivery{}
	}
	if bytes.HasPrefix(want, got) {
		return delivery{lost: int64(len(want) - len(got))}
	}
	left := map[string]int{}
	for _, l := range lines(want) {
		left[l]++
	}
	var d delivery
	seen := map[string]bool{}
	for _, l := range lines(got) {
		switch {
		case left[l] > 0:
			left[l]--
			seen[l] = true
		case seen[l]:
			d.dup += int64(len(l))
		default:
			d.wrong += int64(len(l))
		}
	}
	for l, n := range left {
		d.lost += int64(n * len(l))
	}
	if d.clean() {
		d.wrong = int64(len(got)) // the same lines, in another order
	}
	return d
}

// lines splits b after each newline; a last line without one is kept.
func lines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n') + 1
		if i == 0 {
			i = len(b)
		}
		out = append(out, string(b[:i]))
		b = b[i:]
	}
	return out
}

// prefixCheck is how the output of a call that failed is judged: it may
// stop short (the error says so), but what it delivered must be a prefix
// of what was printed. Anything else is reported as delivered wrongly.
func prefixCheck(want, got []byte) (reportedLost int64, bad delivery) {
	if bytes.HasPrefix(want, got) {
		return int64(len(want) - len(got)), delivery{}
	}
	return 0, compare(want, got)
}
