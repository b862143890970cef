package site

import (
	"crypto/sha256"
	"errors"
	"sync"
	"time"
)

// credCache keeps what checking a credential (an Authorization header)
// gave, a principal or ErrUnauthenticated, for a short time: the auth
// endpoint answers a proxy once per download and a registry pull is many
// requests with one header, and a database lookup (or a token's
// signature) for each would make the check wharf's limit. An entry is
// found by the SHA-256 of the whole header only, so it answers nothing but
// the same bytes. A credential revoked in the database is refused once
// its entry expires, on every server sharing the database: within the
// TTL. The map holds at most max entries.
type credCache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[[sha256.Size]byte]credEntry
}

type credEntry struct {
	p     Principal
	err   error // nil or an ErrUnauthenticated
	until time.Time
}

// defaultCredTTL is how long a checked credential is trusted without
// asking the database again.
const defaultCredTTL = 500 * time.Millisecond

func newCredCache(ttl time.Duration, max int, now func() time.Time) *credCache {
	return &credCache{ttl: ttl, max: max, now: now, m: map[[sha256.Size]byte]credEntry{}}
}

// get returns the cached answer for the header h, if still valid.
func (c *credCache) get(h string) (Principal, error, bool) {
	k := sha256.Sum256([]byte(h))
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.until) {
		return Principal{}, nil, false
	}
	return e.p, e.err, true
}

// put keeps the answer for the header h: a principal (until its own
// expiry at the latest) or an ErrUnauthenticated; nothing else (a
// database that did not answer is asked again).
func (c *credCache) put(h string, p Principal, err error) {
	if err != nil && !errors.Is(err, ErrUnauthenticated) {
		return
	}
	now := c.now()
	until := now.Add(c.ttl)
	if err == nil && !p.Expires.IsZero() && p.Expires.Before(until) {
		until = p.Expires
	}
	k := sha256.Sum256([]byte(h))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max {
			clear(c.m)
		}
	}
	c.m[k] = credEntry{p: p, err: err, until: until}
}
