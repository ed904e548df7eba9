package proxy

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

const (
	keySetMaxAge   = 10 * time.Minute // a cached set is fetched again after this long
	fetchTimeout   = 5 * time.Second
	maxKeySetBytes = 256 << 10
	minRSABits     = 2048
	maxRSABits     = 16384
)

// errTooSoon is the reason a fetch is not allowed yet.
var errTooSoon = errors.New("fetched too recently to fetch again")

// A keySet is one issuer's keys as one fetch found them. It is never
// changed once cached; a refresh caches a new one.
type keySet struct {
	keys    []verifyKey
	fetched time.Time // of the keys; zero when no fetch has succeeded
	tried   time.Time // the last fetch, successful or not
}

// A verifyKey is an RSA key of a key set that may verify RS256 signatures.
type verifyKey struct {
	kid    string
	hasKid bool
	key    *rsa.PublicKey
}

// keyCache holds the key set of each trusted issuer, in a slot made with
// the cache and never added to. The issuer a token names is read before
// its signature can be checked, so it may only select a slot: a token of
// any other issuer finds none, and costs no fetch, no memory and no share
// of anything the trusted issuers use. Fetches of one issuer's set are
// merged, and spaced by interval whatever asks for them, which bounds what
// a flood of made-up key ids costs; a token whose key is in a fresh cached
// set is served from it and never waits for those fetches.
type keyCache struct {
	client   *http.Client
	now      func() time.Time
	interval time.Duration
	sets     map[string]*atomic.Pointer[keySet] // by issuer; read-only once made
	flight   singleflight.Group                 // by issuer
}

func newKeyCache(c *config) *keyCache {
	client := *c.client // a copy, so that setting CheckRedirect changes nothing of the caller's
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	kc := &keyCache{
		client:   &client,
		now:      c.now,
		interval: c.interval,
		sets:     make(map[string]*atomic.Pointer[keySet], len(c.issuers)),
	}
	for _, iss := range c.issuers {
		kc.sets[iss] = new(atomic.Pointer[keySet])
	}
	return kc
}

// trusts reports whether iss is, exactly, one of the trusted issuers.
func (c *keyCache) trusts(iss string) bool {
	_, ok := c.sets[iss]
	return ok
}

// key returns the key that verifies a token of the trusted issuer iss
// signed with key id kid ("" when the token names none). It fetches the
// issuer's set when none is cached, when the cached one is older than
// keySetMaxAge, and when no key matches in it; the last two only as often
// as allowed.
func (c *keyCache) key(ctx context.Context, iss, kid string) (*rsa.PublicKey, error) {
	slot, ok := c.sets[iss]
	if !ok {
		return nil, ErrInvalidIssuer
	}
	set := slot.Load()
	fresh := set.fresh(c.now())
	if fresh {
		k, err := set.find(kid)
		if err == nil {
			return k, nil
		}
		if !errors.Is(err, errNoKey) {
			return nil, fmt.Errorf("%w: %v", ErrUnknownKey, err)
		}
	}
	latest, err := c.refresh(ctx, iss, slot, set)
	switch {
	case fresh && errors.Is(err, errTooSoon):
		return nil, fmt.Errorf("%w: %v", ErrUnknownKey, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrKeySetUnavailable, err)
	case !latest.fresh(c.now()):
		return nil, fmt.Errorf("%w: its last fetch failed", ErrKeySetUnavailable)
	}
	k, err := latest.find(kid)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownKey, err)
	}
	return k, nil
}

// refresh fetches the key set of iss into slot, unless it changed since
// the caller saw seen (then it returns the newer one) or may not be
// fetched yet. Concurrent calls for one issuer share one fetch.
func (c *keyCache) refresh(ctx context.Context, iss string, slot *atomic.Pointer[keySet], seen *keySet) (*keySet, error) {
	v, err, _ := c.flight.Do(iss, func() (any, error) {
		cur := slot.Load()
		if cur != seen {
			return cur, nil
		}
		now := c.now()
		if cur != nil && now.Sub(cur.tried) < c.interval {
			return nil, errTooSoon
		}
		next := &keySet{tried: now}
		keys, err := c.fetch(ctx, iss)
		if err == nil {
			next.keys, next.fetched = keys, now
		} else if cur != nil {
			next.keys, next.fetched = cur.keys, cur.fetched
		}
		slot.Store(next)
		if err != nil {
			return nil, err
		}
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*keySet), nil
}

// fresh reports whether s holds keys fetched less than keySetMaxAge ago.
func (s *keySet) fresh(now time.Time) bool {
	return s != nil && !s.fetched.IsZero() && now.Sub(s.fetched) < keySetMaxAge
}

var (
	errNoKey        = errors.New("no key has the token's key id")
	errAmbiguousKey = errors.New("the token names no key id and several keys match")
)

// find returns the key with id kid or, when kid is empty, the only key.
func (s *keySet) find(kid string) (*rsa.PublicKey, error) {
	var found *rsa.PublicKey
	for _, k := range s.keys {
		if kid != "" && (!k.hasKid || k.kid != kid) {
			continue
		}
		if found != nil {
			return nil, errAmbiguousKey
		}
		found = k.key
	}
	if found == nil {
		return nil, errNoKey
	}
	return found, nil
}

// fetch gets and parses the key set of iss. Its errors say what failed
// without naming the URL, which comes from the token.
func (c *keyCache) fetch(ctx context.Context, iss string) ([]verifyKey, error) {
	// The fetch serves every request waiting for it, so the first one's
	// cancellation must not end it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(iss, "/")+"/.well-known/jwks", nil)
	if err != nil {
		return nil, errors.New("the issuer does not form a key set URL")
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.New("the key set request timed out")
		}
		return nil, errors.New("the key set request failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the key set request got status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeySetBytes+1))
	if err != nil {
		return nil, errors.New("reading the key set failed")
	}
	if len(body) > maxKeySetBytes {
		return nil, fmt.Errorf("the key set is larger than %d bytes", maxKeySetBytes)
	}
	return parseKeySet(body)
}

// parseKeySet reads a JSON Web Key Set and keeps the keys that may verify
// RS256 signatures, with the rules of the official SDK's key selection: an
// RSA key, whose alg (when set) is RS256, whose use (when set) is sig, and
// whose key_ops (when set) include verify. Keys of other kinds, and keys
// that do not decode, are skipped; a set that is not an object with an
// array of objects under "keys" is an error.
func parseKeySet(body []byte) ([]verifyKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil || set.Keys == nil {
		return nil, errors.New("the key set is not a JSON object with a keys array")
	}
	var keys []verifyKey
	for _, raw := range set.Keys {
		if len(raw) == 0 || raw[0] != '{' {
			return nil, errors.New("the key set holds a member that is not an object")
		}
		if k, ok := parseKey(raw); ok {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// parseKey decodes one member of a key set, if it may verify RS256.
func parseKey(raw []byte) (verifyKey, bool) {
	var meta struct {
		Kty    string    `json:"kty"`
		Kid    *string   `json:"kid"`
		Alg    *string   `json:"alg"`
		Use    *string   `json:"use"`
		KeyOps *[]string `json:"key_ops"`
	}
	if json.Unmarshal(raw, &meta) != nil || meta.Kty != "RSA" ||
		(meta.Alg != nil && *meta.Alg != string(jose.RS256)) ||
		(meta.Use != nil && *meta.Use != "sig") ||
		(meta.KeyOps != nil && !slices.Contains(*meta.KeyOps, "verify")) {
		return verifyKey{}, false
	}
	var jwk jose.JSONWebKey
	if jwk.UnmarshalJSON(raw) != nil || !jwk.IsPublic() {
		return verifyKey{}, false
	}
	pub, ok := jwk.Key.(*rsa.PublicKey)
	if !ok || pub.N.BitLen() < minRSABits || pub.N.BitLen() > maxRSABits || pub.E < 3 {
		return verifyKey{}, false
	}
	k := verifyKey{key: pub}
	if meta.Kid != nil {
		k.kid, k.hasKid = *meta.Kid, true
	}
	return k, true
}
