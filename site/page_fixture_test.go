package site_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/site"
)

// pageTree is a published tree on a directory store: two releases and a
// preview of treasury-cli (public), engine (basic) and treasury-node
// (full), every file signed with a fresh key.
type pageTree struct {
	Dir      string
	Store    *dir.Store
	Manifest *publish.Manifest
	PubPEM   []byte
	Latest   string
	Preview  string
	files    map[string][]byte // key -> content
}

var pageSpecs = []publish.ArtifactSpec{
	{Name: "treasury-cli", Kind: publish.KindBinary, Executable: "treasury", Access: publish.AccessPublic},
	{Name: "engine", Kind: publish.KindBinary, Access: publish.AccessBasic},
	{Name: "treasury-node", Kind: publish.KindImage, Access: publish.AccessFull},
}

func newPageTree(t testing.TB) *pageTree {
	t.Helper()
	return newPageTreeOf(t, pageSpecs, []publish.Release{{Version: "25.4.2"}, {Version: "26.1.1"}, {Version: "26.1.2-pre.3"}})
}

// newPageTreeOf publishes releases (their versions and notes) of specs,
// every build of each, the last release and the last preview the pointers.
func newPageTreeOf(t testing.TB, specs []publish.ArtifactSpec, releases []publish.Release) *pageTree {
	t.Helper()
	root := t.TempDir()
	st, err := dir.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := publish.PublicKeyPEM(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	tr := &pageTree{Dir: root, Store: st, Manifest: &publish.Manifest{}, PubPEM: pub, files: map[string][]byte{}}
	tr.put(t, publish.KeyPublicKey, pub)
	published := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i, rel := range releases {
		v := rel.Version
		ver, err := publish.ParseVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		if ver.IsPreview() {
			tr.Preview = v
		} else {
			tr.Latest = v
		}
		rel.Kind, rel.Published = ver.Kind(), published.AddDate(0, 0, 3*i)
		for _, spec := range specs {
			for _, b := range publish.Builds() {
				if spec.Kind == publish.KindImage && !b.Images {
					continue
				}
				key := publish.Key(spec.Kind, spec.Name, ver, b)
				content := []byte(fmt.Sprintf("%s %s %s\n", spec.Name, v, b.Name))
				content = append(content, bytes.Repeat([]byte{byte(len(key))}, 2000+len(key)*10)...)
				sum := sha256.Sum256(content)
				der, err := ecdsa.SignASN1(rand.Reader, priv, sum[:])
				if err != nil {
					t.Fatal(err)
				}
				sig := publish.SignatureText(der)
				tr.put(t, key, content)
				tr.put(t, publish.SigKey(key), sig)
				a := publish.Artifact{
					Name: spec.Name, Kind: spec.Kind, Build: b.Name, OS: b.OS, Platform: b.Platform,
					Key: key, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]),
					Signature: string(sig), Access: spec.Access,
				}
				if rel.Provenance != nil {
					// Listed as publish lists them (the page reads no
					// envelope): provenance for all, an SBOM for images.
					atts := []publish.Attestation{{PredicateType: publish.PredicateSLSA, Key: publish.ProvenanceKey(key)}}
					if spec.Kind == publish.KindImage {
						atts = append(atts, publish.Attestation{PredicateType: publish.PredicateCycloneDX, Key: publish.SBOMAttestationKey(key)})
					}
					for i := range atts {
						body := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"","signatures":[]}` + "\n")
						tr.put(t, atts[i].Key, body)
						h := sha256.Sum256(body)
						atts[i].SHA256 = hex.EncodeToString(h[:])
					}
					a.Attestations = atts
				}
				rel.Artifacts = append(rel.Artifacts, a)
			}
		}
		tr.Manifest.Merge(rel)
	}
	tr.writeManifest(t)
	if tr.Latest != "" {
		tr.put(t, publish.KeyLatest, []byte(tr.Latest+"\n"))
	}
	if tr.Preview != "" {
		tr.put(t, publish.KeyPreview, []byte(tr.Preview+"\n"))
	}
	return tr
}

func (tr *pageTree) put(t testing.TB, key string, b []byte) {
	t.Helper()
	if _, err := tr.Store.Put(context.Background(), key, bytes.NewReader(b), int64(len(b)), publish.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.files[key] = b
}

func (tr *pageTree) writeManifest(t testing.TB) {
	t.Helper()
	var buf bytes.Buffer
	if err := tr.Manifest.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	tr.put(t, publish.KeyManifest, buf.Bytes())
}

// artifact finds a file of the tree by release, name and build.
func (tr *pageTree) artifact(t testing.TB, version, name, build string) publish.Artifact {
	t.Helper()
	r, ok := tr.Manifest.Find(version)
	if !ok {
		t.Fatalf("no release %s", version)
	}
	a, ok := r.Artifact(name, build)
	if !ok {
		t.Fatalf("no %s %s in %s", name, build, version)
	}
	return a
}

// pageAuth is an Authenticator that behaves: credentials it was given,
// revocable, with a level and an expiry each, safe for concurrent use.
type pageAuth struct {
	mu    sync.Mutex
	creds map[string]site.Principal // credential -> who
	calls int
	err   error // when set, every check fails with it (the database is down)
}

// pageExpiredToken is an access token that pageAuth says expired at
// pageExpiredAt.
const pageExpiredToken = "eyJ.expired.token"

var pageExpiredAt = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

func newPageAuth() *pageAuth { return &pageAuth{creds: map[string]site.Principal{}} }

func (a *pageAuth) add(cred string, p site.Principal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.creds[cred] = p
}

func (a *pageAuth) revoke(cred string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.creds, cred)
}

func (a *pageAuth) setErr(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

func (a *pageAuth) check(cred, kind string) (site.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.err != nil {
		return site.Principal{}, a.err
	}
	if cred == pageExpiredToken {
		return site.Principal{}, fmt.Errorf("check: %w", &site.ExpiredError{Expired: pageExpiredAt})
	}
	p, ok := a.creds[cred]
	if !ok || p.Kind != kind {
		return site.Principal{}, fmt.Errorf("check: %w", site.ErrUnauthenticated)
	}
	return p, nil
}

func (a *pageAuth) Token(_ context.Context, token string) (site.Principal, error) {
	return a.check(token, "user")
}

func (a *pageAuth) APIKey(_ context.Context, key string) (site.Principal, error) {
	return a.check(key, "apikey")
}

func (a *pageAuth) callCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// pageBody reads and closes a response body.
func pageBody(t testing.TB, r io.ReadCloser) string {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
