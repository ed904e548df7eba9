package local

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"strings"
	"sync"
)

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// idSource produces the random parts of ids and generated names. It reads
// crypto/rand unless the server was given a seed, in which case the sequence
// is reproducible.
type idSource struct {
	mu  sync.Mutex
	rng *mrand.Rand // nil: crypto/rand
}

func newIDSource(seed *uint64) *idSource {
	src := &idSource{}
	if seed != nil {
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], *seed)
		src.rng = mrand.New(mrand.NewChaCha8(key))
	}
	return src
}

// intn returns a uniform number in [0, n).
func (s *idSource) intn(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rng != nil {
		return s.rng.IntN(n)
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return int(binary.LittleEndian.Uint64(b[:]) % uint64(n))
}

// alnum returns n characters of [A-Za-z0-9].
func (s *idSource) alnum(n int) string {
	var b strings.Builder
	b.Grow(n)
	for range n {
		b.WriteByte(idAlphabet[s.intn(len(idAlphabet))])
	}
	return b.String()
}

func (s *idSource) sessionID() string  { return "sbx_" + s.alnum(28) }
func (s *idSource) commandID() string  { return "cmd_" + s.alnum(28) }
func (s *idSource) snapshotID() string { return "snap_" + s.alnum(28) }

var nameAdjectives = []string{
	"amber", "brisk", "calm", "dapper", "eager", "fuzzy", "gentle", "hazy",
	"ivory", "jade", "keen", "lucid", "mellow", "nimble", "olive", "proud",
	"quiet", "rapid", "sunny", "tidy", "upbeat", "vivid", "witty", "zesty",
}

var nameAnimals = []string{
	"badger", "crane", "dingo", "egret", "ferret", "gecko", "heron", "ibis",
	"jay", "koala", "lemur", "marten", "newt", "otter", "panda", "quail",
	"raven", "stoat", "tapir", "urchin", "vole", "walrus", "yak", "zebra",
}

// sandboxName returns a generated sandbox name such as
// "jade-rapid-jay-NgZfbj".
func (s *idSource) sandboxName() string {
	return nameAdjectives[s.intn(len(nameAdjectives))] + "-" +
		nameAdjectives[s.intn(len(nameAdjectives))] + "-" +
		nameAnimals[s.intn(len(nameAnimals))] + "-" + s.alnum(6)
}

// requestID returns a value for the X-Vercel-Id response header.
func (s *idSource) requestID(region string, ms int64) string {
	return region + "::" + strings.ToLower(s.alnum(5)) + "-" +
		itoa64(ms) + "-" + strings.ToLower(s.alnum(12))
}
