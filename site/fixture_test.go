package site_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
	"github.com/wharfhq/wharf/templates"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// tree writes release trees into a store the way the publisher lays them
// out: artifacts and signatures, SHA256SUMS, releases.json, dl.pub,
// install, then the pointers.
type tree struct {
	tb       testing.TB
	store    publish.Store
	priv     *ecdsa.PrivateKey
	pubPEM   []byte
	baseURL  string
	manifest publish.Manifest
	files    map[string][]byte // every artifact's bytes by key
	big      map[string]int    // artifact name -> size for large image payloads
	// channelExpiry is the expiry of the channel records publish writes
	// (0: publish's default).
	channelExpiry time.Duration
}

func newDirTree(tb testing.TB) (*tree, string) {
	tb.Helper()
	root := filepath.Join(tb.TempDir(), "public")
	st, err := dir.New(root)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return newTree(tb, st), root
}

func newTree(tb testing.TB, st publish.Store) *tree {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := publish.PublicKeyPEM(&priv.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	return &tree{tb: tb, store: st, priv: priv, pubPEM: pub, files: map[string][]byte{}, big: map[string]int{}}
}

func (tr *tree) put(key string, b []byte) {
	tr.tb.Helper()
	if _, err := tr.store.Put(context.Background(), key, bytes.NewReader(b), int64(len(b)), publish.PutOptions{}); err != nil {
		tr.tb.Fatalf("put %s: %v", key, err)
	}
}

func (tr *tree) sign(b []byte) []byte {
	tr.tb.Helper()
	sum := sha256.Sum256(b)
	der, err := ecdsa.SignASN1(rand.Reader, tr.priv, sum[:])
	if err != nil {
		tr.tb.Fatal(err)
	}
	return publish.SignatureText(der)
}

// binaryArchive is a .tar.gz holding one executable shell script that
// prints its name and version.
func binaryArchive(tb testing.TB, exe, version string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := fmt.Sprintf("#!/bin/sh\necho %s %s\n", exe, version)
	if err := tw.WriteHeader(&tar.Header{Name: exe, Mode: 0o755, Size: int64(len(body)), ModTime: time.Unix(0, 0)}); err != nil {
		tb.Fatal(err)
	}
	io.WriteString(tw, body)
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// payload is size deterministic bytes that differ per seed.
func payload(seed string, size int) []byte {
	b := make([]byte, size)
	block := sha256.Sum256([]byte(seed))
	for i := 0; i < size; i += len(block) {
		copy(b[i:], block[:])
		block = sha256.Sum256(block[:])
	}
	return b
}

// publish lays version into the tree with every default artifact and
// moves the pointer of its kind.
func (tr *tree) publish(version string) {
	tr.tb.Helper()
	v, err := publish.ParseVersion(version)
	if err != nil {
		tr.tb.Fatal(err)
	}
	rel := publish.Release{Version: version, Kind: v.Kind(), Published: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	sums := map[string]*strings.Builder{}
	for _, spec := range publish.DefaultArtifacts() {
		for _, b := range publish.Builds() {
			if spec.Kind == publish.KindImage && !b.Images {
				continue
			}
			key := publish.Key(spec.Kind, spec.Name, v, b)
			var content []byte
			if spec.Kind == publish.KindBinary {
				content = binaryArchive(tr.tb, spec.Executable, version)
			} else {
				size := 4096
				if n, ok := tr.big[spec.Name]; ok {
					size = n
				}
				content = payload(key, size)
			}
			sig := tr.sign(content)
			tr.put(key, content)
			tr.put(publish.SigKey(key), sig)
			tr.files[key] = content
			sum := sha256.Sum256(content)
			a := publish.Artifact{
				Name: spec.Name, Kind: spec.Kind, Build: b.Name, OS: b.OS, Platform: b.Platform,
				Key: key, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]),
				Signature: string(sig), Access: spec.Access,
			}
			rel.Artifacts = append(rel.Artifacts, a)
			sk := publish.SumsKey(spec.Kind, v)
			if sums[sk] == nil {
				sums[sk] = &strings.Builder{}
			}
			fmt.Fprintf(sums[sk], "%s  %s\n", a.SHA256, a.FileName())
		}
	}
	for key, sb := range sums {
		tr.put(key, []byte(sb.String()))
		tr.put(publish.SigKey(key), tr.signMetadata(publish.SignedSums, key, []byte(sb.String())))
	}
	tr.manifest.Merge(rel)
	var mb bytes.Buffer
	if err := tr.manifest.Encode(&mb); err != nil {
		tr.tb.Fatal(err)
	}
	tr.put(publish.KeyManifest, mb.Bytes())
	tr.put(publish.KeyPublicKey, tr.pubPEM)
	pointer := publish.KeyLatest
	if v.IsPreview() {
		pointer = publish.KeyPreview
	}
	tr.put(pointer, []byte(version+"\n"))
	c := tr.writeChannel(time.Now(), tr.channelExpiry)
	tr.put(publish.KeyInstall, renderInstall(tr.tb, tr.baseURL, string(tr.pubPEM), c.Sequence))
}

// stored is the object at key as the tree holds it.
func (tr *tree) stored(key string) []byte {
	tr.tb.Helper()
	o, err := tr.store.Open(context.Background(), key)
	if err != nil {
		tr.tb.Fatal(err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		tr.tb.Fatal(err)
	}
	return b
}

// signMetadata signs body as metadata of kind at key of the tree.
func (tr *tree) signMetadata(kind, key string, body []byte) []byte {
	tr.tb.Helper()
	s, err := publish.NewSigner(tr.priv)
	if err != nil {
		tr.tb.Fatal(err)
	}
	sig, err := publish.SignMetadata(context.Background(), s, kind, tr.url()+"/"+key, body)
	if err != nil {
		tr.tb.Fatal(err)
	}
	return sig
}

// url is the tree's base URL as its signatures name it.
func (tr *tree) url() string {
	if tr.baseURL == "" {
		return "http://dl.example.invalid" // a tree no install script runs against
	}
	return tr.baseURL
}

// writeChannel writes the signed channel record as the publisher does
// after moving a pointer, issued at now, valid for expiry (0: no expiry).
func (tr *tree) writeChannel(now time.Time, expiry time.Duration) publish.Channel {
	tr.tb.Helper()
	s, err := publish.NewSigner(tr.priv)
	if err != nil {
		tr.tb.Fatal(err)
	}
	u := &publish.ChannelUpdate{Store: tr.store, Signer: s, URL: tr.url(), Expiry: expiry, Force: true,
		Now: func() time.Time { return now }}
	c, _, err := u.Run(context.Background())
	if err != nil {
		tr.tb.Fatalf("channel record: %v", err)
	}
	return c
}

// renderInstall renders the install script as the publisher does, with
// the sequence of the channel record written before it.
func renderInstall(tb testing.TB, baseURL, pubPEM string, minSequence uint64) []byte {
	tb.Helper()
	tmpl, err := templates.Text(templates.Install)
	if err != nil {
		tb.Fatal(err)
	}
	data := templates.InstallData{BaseURL: baseURL, PublicKey: strings.TrimSpace(pubPEM), MinSequence: minSequence}
	for _, spec := range publish.DefaultArtifacts() {
		if spec.Kind == publish.KindBinary {
			data.Binaries = append(data.Binaries, templates.InstallBinary{Name: spec.Name, Executable: spec.Executable, Access: spec.Access})
		}
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// key returns the canonical key of an artifact of version.
func key(t testing.TB, version, name, build string) string {
	t.Helper()
	v, err := publish.ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := publish.LookupBuild(build)
	if !ok {
		t.Fatalf("no build %s", build)
	}
	kind := publish.KindBinary
	if strings.HasPrefix(name, "treasury-node") || strings.HasPrefix(name, "treasury-demo") {
		kind = publish.KindImage
	}
	return publish.Key(kind, name, v, b)
}

// clock is a settable clock shared by the server, the limits and the auth DB.

// creds are the organisations, keys, users and tokens of the auth fixture.
type creds struct {
	db                   *auth.DB
	basicKey, fullKey    string // API keys of acme (basic) and globex (full)
	basicKeyID           string
	alice, bob, carol    string // tokens: alice in globex (full), bob in acme (basic), carol removed later
	revokedKey, loneUser string // a revoked key; a token of a user in no organisation
	expired              string // bob's token of 25 hours ago, expired an hour ago
	expiredAt            time.Time
}

func newCreds(tb testing.TB, c *testenv.Clock) *creds {
	tb.Helper()
	ctx := context.Background()
	db, err := auth.Open(ctx, filepath.Join(tb.TempDir(), "wharf.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	db.Now = c.Now
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	_, err = db.CreateOrg(ctx, "acme", site.LevelBasic)
	must(err)
	_, err = db.CreateOrg(ctx, "globex", site.LevelFull)
	must(err)
	cr := &creds{db: db}
	var k auth.APIKey
	k, cr.basicKey, err = db.CreateAPIKey(ctx, "acme")
	must(err)
	cr.basicKeyID = k.ID
	_, cr.fullKey, err = db.CreateAPIKey(ctx, "globex")
	must(err)
	k, cr.revokedKey, err = db.CreateAPIKey(ctx, "globex")
	must(err)
	must(db.RevokeAPIKey(ctx, k.ID))
	must(db.AddUser(ctx, "alice", "globex"))
	must(db.AddUser(ctx, "bob", "acme"))
	must(db.AddUser(ctx, "carol", "globex"))
	must(db.AddUser(ctx, "dave", "acme"))
	for _, u := range []struct {
		name string
		tok  *string
	}{{"alice", &cr.alice}, {"bob", &cr.bob}, {"carol", &cr.carol}, {"dave", &cr.loneUser}} {
		*u.tok, _, err = db.CreateToken(ctx, u.name)
		must(err)
	}
	db.Now = func() time.Time { return c.Now().Add(-25 * time.Hour) }
	cr.expired, cr.expiredAt, err = db.CreateToken(ctx, "bob")
	must(err)
	db.Now = c.Now
	must(db.RemoveUser(ctx, "carol", ""))
	must(db.RemoveUser(ctx, "dave", "acme"))
	return cr
}

// logs records the server's log records; wait blocks until one matches.
type logs struct {
	mu      sync.Mutex
	records []slog.Record
	changed chan struct{}
}

func newLogs() *logs { return &logs{changed: make(chan struct{})} }

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// wait returns the first access-log record whose path is path.
func (l *logs) wait(tb testing.TB, path string) map[string]string {
	tb.Helper()
	timeout := time.After(30 * time.Second)
	for {
		l.mu.Lock()
		for _, r := range l.records {
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			if r.Message == "request" && attrs["path"] == path {
				l.mu.Unlock()
				return attrs
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("no access log for %s", path)
		}
	}
}

// messages waits for n records with msg and returns their attributes.
func (l *logs) messages(tb testing.TB, msg string, n int) []map[string]string {
	tb.Helper()
	timeout := time.After(30 * time.Second)
	for {
		var out []map[string]string
		l.mu.Lock()
		for _, r := range l.records {
			if r.Message != msg {
				continue
			}
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			out = append(out, attrs)
		}
		ch := l.changed
		l.mu.Unlock()
		if len(out) >= n {
			return out
		}
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("%d %q log records, want %d: %v", len(out), msg, n, out)
		}
	}
}

// serve starts a Server for cfg on a free loopback port and returns its URL.
func serve(tb testing.TB, cfg site.Config, tune ...func(*http.Server)) (string, *site.Server) {
	tb.Helper()
	s, err := site.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", testenv.FreeAddr(tb))
	if err != nil {
		tb.Fatal(err)
	}
	hs := site.HTTPServer(s, cfg.Logger)
	for _, f := range tune {
		f(hs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- shell.Serve(ctx, hs, ln, 5*time.Second) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), s
}

// flakyStore is a store that can be switched off, as a store that goes
// away and comes back.
type flakyStore struct {
	publish.Store
	mu   sync.Mutex
	down bool
}

func (f *flakyStore) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *flakyStore) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return fmt.Errorf("flaky: %w", publish.ErrUnavailable)
	}
	return nil
}

func (f *flakyStore) Open(ctx context.Context, key string) (publish.Object, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Store.Open(ctx, key)
}

func (f *flakyStore) Stat(ctx context.Context, key string) (publish.ObjectInfo, error) {
	if err := f.err(); err != nil {
		return publish.ObjectInfo{}, err
	}
	return f.Store.Stat(ctx, key)
}

// get does a request without following redirects.
func get(tb testing.TB, method, url string, hdr ...string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		tb.Fatal(err)
	}
	return resp, b
}

func writeFile(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}
