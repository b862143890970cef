package site_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
	"github.com/wharfhq/wharf/site"
)

// answers records, in order, what a server answered each request: its
// status and the principal its access log names.
type answers chan string

func (a answers) Enabled(context.Context, slog.Level) bool { return true }
func (a answers) WithAttrs([]slog.Attr) slog.Handler       { return a }
func (a answers) WithGroup(string) slog.Handler            { return a }
func (a answers) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "request" {
		return nil
	}
	var status, who string
	r.Attrs(func(at slog.Attr) bool {
		switch at.Key {
		case "status":
			status = at.Value.String()
		case "principal":
			who = at.Value.String()
		}
		return true
	})
	a <- status + " " + who
	return nil
}

// next is the answer to the request just made.
func (a answers) next(tb testing.TB) string {
	tb.Helper()
	select {
	case s := <-a:
		return s
	case <-time.After(30 * time.Second):
		tb.Fatal("no access log record for the request")
		return ""
	}
}

// credSeed is WHARF_CRED_SEED, or a fresh seed.
func credSeed(tb testing.TB) uint64 {
	if s := os.Getenv("WHARF_CRED_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			tb.Fatalf("WHARF_CRED_SEED=%q: want a number", s)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// publishImage gives release 26.1.2 of the tree an image, treasury-node
// (full), whose index the tag 26.1.2 names, and returns the tag's path.
func publishImage(tb testing.TB, tr *tree) string {
	tb.Helper()
	body := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`)
	digest := oci.Digest(body)
	tr.put(publish.RegistryManifestKey("treasury-node", digest), body)
	tr.put(publish.RegistryManifestKey("treasury-node", "26.1.2"), body)
	for i := range tr.manifest.Releases {
		if tr.manifest.Releases[i].Version == "26.1.2" {
			tr.manifest.Releases[i].Images = append(tr.manifest.Releases[i].Images, publish.Image{
				Name: "treasury-node", Repository: "dl.example.invalid/treasury-node",
				Index: digest, IndexSize: int64(len(body)), Access: publish.AccessFull,
			})
		}
	}
	var mb bytes.Buffer
	if err := tr.manifest.Encode(&mb); err != nil {
		tb.Fatal(err)
	}
	tr.put(publish.KeyManifest, mb.Bytes())
	return "/v2/treasury-node/manifests/26.1.2"
}

// cacheCred is one Authorization header of the generator, and what may
// change its answer.
type cacheCred struct {
	header string
	keyID  string // the API key it sends, "" for none or an unknown one
	org    string // the organisation whose level decides it
	user   string // the user whose token it sends
}

// seen is an answer the uncached server gave a header, and when.
type seen struct {
	at     time.Time
	answer string
}

// TestRegistryCredentialCache: the registry trusts a checked
// Authorization header for CredentialTTL (500 ms), and only for the same
// bytes. A generator mixes valid keys and tokens, near-identical headers
// (another spelling of the same key, a key one character off, a key as a
// bearer token), revocations, lowered organisations and removed users
// mid-run, on a fake clock; each request goes to a server with the cache
// and one without it (CredentialTTL < 0) over the same database. Every
// answer of the cached server (status and principal) must be the
// uncached one's now, or the uncached answer to the same header less
// than 500 ms before; a download wharf serves itself (a tar) must be the
// uncached answer exactly; and just after a revocation the cached server
// still gives the answer it checked (the cache is in use).
func TestRegistryCredentialCache(t *testing.T) {
	seed := credSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (WHARF_CRED_SEED): "+format, append([]any{seed}, args...)...)
	}
	const ttl = 500 * time.Millisecond
	cachedLog, uncachedLog := make(answers, 16), make(answers, 16)
	e := newEnv(t, func(c *site.Config) { c.Logger = slog.New(cachedLog) })
	uncached, _ := serve(t, site.Config{Store: e.store, Auth: e.cr.db, Now: e.clock.Now, Logger: slog.New(uncachedLog), CredentialTTL: -1})
	manifest := publishImage(t, e.tr)
	tar := "/" + key(t, "26.1.2", "treasury-node", "x86")

	ctx := t.Context()
	db := e.cr.db
	for _, o := range []struct{ name, level string }{{"initech", site.LevelFull}, {"umbrella", site.LevelFull}} {
		if _, err := db.CreateOrg(ctx, o.name, o.level); err != nil {
			t.Fatal(err)
		}
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	oneOff := func(s string) string {
		b := []byte(s)
		i := len(b) - 1
		b[i] ^= 1 // a letter or digit still
		return string(b)
	}
	var creds []cacheCred
	keys := map[string]bool{} // key ids not revoked yet
	for i, org := range []string{"globex", "initech", "umbrella", "acme", "initech", "umbrella"} {
		k, secret, err := db.CreateAPIKey(ctx, org)
		if err != nil {
			t.Fatal(err)
		}
		keys[k.ID] = true
		same := []string{"Basic " + b64(secret+":"), "Basic " + b64(secret+":x"), "basic " + b64(secret+":"), "Basic " + b64(":"+secret)}
		for _, h := range same {
			creds = append(creds, cacheCred{header: h, keyID: k.ID, org: org})
		}
		creds = append(creds,
			cacheCred{header: "Basic " + b64(oneOff(secret)+":")},
			cacheCred{header: "Basic " + b64(secret[:len(secret)-1]+":")},
			cacheCred{header: "Bearer " + secret},
		)
		if i == 0 {
			creds = append(creds, cacheCred{header: "Basic " + b64(secret+":"+fmt.Sprint(i))}) // still the key
		}
	}
	for _, u := range []struct{ name, org string }{{"eve", "initech"}, {"mallory", "umbrella"}} {
		if err := db.AddUser(ctx, u.name, u.org); err != nil {
			t.Fatal(err)
		}
		tok, _, err := db.CreateToken(ctx, u.name)
		if err != nil {
			t.Fatal(err)
		}
		creds = append(creds,
			cacheCred{header: "Bearer " + tok, org: u.org, user: u.name},
			cacheCred{header: "Basic " + b64(site.TokenUser+":"+tok), org: u.org, user: u.name},
			cacheCred{header: "Bearer " + oneOff(tok)},
		)
	}
	creds = append(creds,
		cacheCred{header: "Basic " + b64(e.cr.fullKey+":"), org: "globex"},
		cacheCred{header: "Basic " + b64(e.cr.basicKey+":"), org: "acme"},
		cacheCred{header: "Basic " + b64(e.cr.revokedKey+":")},
		cacheCred{header: "Bearer " + e.cr.alice, org: "globex"},
		cacheCred{header: "Bearer " + e.cr.expired},
		cacheCred{header: "Basic " + b64("nope:")},
	)

	history := map[string][]seen{} // the uncached answers by header
	ask := func(url string, log answers, method, path, header string) string {
		t.Helper()
		if resp, _ := get(t, method, url+path, "Authorization", header); resp.StatusCode == 0 {
			t.Fatal("no status")
		}
		return log.next(t)
	}
	// check asks both servers about header and checks the cached answer.
	var stale, fresh int
	check := func(step int, method, path string, c cacheCred) (cachedAnswer, uncachedAnswer string) {
		t.Helper()
		now := e.clock.Now()
		got := ask(e.url, cachedLog, method, path, c.header)
		want := ask(uncached, uncachedLog, method, path, c.header)
		if path != manifest {
			if got != want {
				fail("step %d: %s %s with %q = %q, want the uncached %q: a download wharf serves itself is never cached", step, method, path, c.header, got, want)
			}
			return got, want
		}
		history[c.header] = append(history[c.header], seen{now, want})
		if got == want {
			fresh++
			return got, want
		}
		for _, s := range history[c.header] {
			if now.Sub(s.at) < ttl && s.answer == got {
				stale++
				return got, want
			}
		}
		fail("step %d: %s %s with %q = %q; the uncached answer is %q, and was %v", step, method, path, c.header, got, want, history[c.header])
		return "", ""
	}

	steps := 1500
	if testing.Short() {
		steps = 300
	}
	advances := []time.Duration{0, 0, time.Millisecond, 50 * time.Millisecond, 120 * time.Millisecond, ttl - time.Millisecond, ttl, ttl + time.Millisecond}
	levels := []string{site.LevelBasic, site.LevelFull}
	removed := map[string]bool{}
	revocations := 0
	var recent []cacheCred
	for step := range steps {
		e.clock.Advance(advances[rng.IntN(len(advances))])
		// Half the requests repeat one of the last few credentials, as a
		// pull does.
		c := creds[rng.IntN(len(creds))]
		if len(recent) > 0 && rng.IntN(2) == 0 {
			c = recent[rng.IntN(len(recent))]
		}
		recent = append(recent, c)
		if len(recent) > 4 {
			recent = recent[1:]
		}
		switch r := rng.IntN(100); {
		case r < 3 && c.keyID != "" && keys[c.keyID]:
			// Revoke the key just checked: the cached server keeps its
			// answer, the uncached one refuses at once.
			before, _ := check(step, http.MethodGet, manifest, c)
			if err := db.RevokeAPIKey(ctx, c.keyID); err != nil {
				t.Fatal(err)
			}
			keys[c.keyID] = false
			revocations++
			if got, want := check(step, http.MethodGet, manifest, c); got != before || want == before {
				fail("step %d: just after revoking the key of %q: cached %q, uncached %q; want the cached %q and a refusal", step, c.header, got, want, before)
			}
		case r < 6 && c.org != "":
			if err := db.SetOrgLevel(ctx, c.org, levels[rng.IntN(2)]); err != nil {
				t.Fatal(err)
			}
			check(step, http.MethodGet, manifest, c)
		case r < 7 && c.user != "" && !removed[c.user]:
			if err := db.RemoveUser(ctx, c.user, ""); err != nil {
				t.Fatal(err)
			}
			removed[c.user] = true
			check(step, http.MethodGet, manifest, c)
		case r < 20:
			check(step, http.MethodHead, tar, c)
		default:
			check(step, []string{http.MethodGet, http.MethodHead}[rng.IntN(2)], manifest, c)
		}
	}
	t.Logf("seed %d: %d steps, %d revocations, %d answers as the uncached server's, %d kept from less than %v before", seed, steps, revocations, fresh, stale, ttl)
	if fresh == 0 {
		fail("no registry answer compared")
	}
}
