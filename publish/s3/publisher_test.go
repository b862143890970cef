package s3_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

const testBaseURL = "https://dl.example.com"

// newSigner returns a signer on a fresh key and its public key.
func newSigner(t *testing.T) (publish.Signer, *ecdsa.PublicKey) {
	t.Helper()
	privPEM, _, err := publish.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := publish.ParsePrivateKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	s, err := publish.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, &priv.PublicKey
}

// releaseInput writes an input dir for the default config: small raw
// executables, and docker save archives whose one layer holds imageSize
// bytes that differ per version.
func releaseInput(t *testing.T, version string, imageSize int) []publish.Input {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range publish.Builds() {
		for _, a := range publish.DefaultArtifacts() {
			switch {
			case a.Kind == publish.KindBinary:
				write(fmt.Sprintf("%s-%s-%s", a.Name, b.OS, b.Platform), []byte(fmt.Sprintf("#!/bin/sh\necho %s %s %s\n", a.Name, version, b.Name)))
			case b.Images:
				data := make([]byte, imageSize)
				for i := range data {
					data[i] = byte(i>>10) ^ version[len(version)-1] ^ a.Name[9]
				}
				write(fmt.Sprintf("%s-%s.tar", a.Name, b.Platform), imageTar(t, data, b.Platform))
			}
		}
	}
	inputs, err := publish.DefaultConfig().ScanInput(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	return inputs
}

// imageTar is a docker save archive for linux/arch of one layer holding
// data as one file.
func imageTar(t *testing.T, data []byte, arch string) []byte {
	t.Helper()
	layer := tarOf(t, []tarFile{{"data", data}})
	sum := sha256.Sum256(layer)
	return tarOf(t, []tarFile{
		{"manifest.json", []byte(`[{"Config":"config.json","RepoTags":["demo:latest"],"Layers":["layer.tar"]}]`)},
		{"config.json", []byte(`{"architecture":"` + arch + `","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:` + hex.EncodeToString(sum[:]) + `"]}}`)},
		{"layer.tar", layer},
	})
}

type tarFile struct {
	name string
	body []byte
}

func tarOf(t *testing.T, files []tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newPublisher(t *testing.T, store publish.Store, signer publish.Signer) *publish.Publisher {
	t.Helper()
	p, err := publish.NewPublisher(store, signer, publish.DefaultConfig(), testBaseURL)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// countingStore counts the Opens of each key: a publish that checks an
// uploaded artifact by downloading it shows up here.
type countingStore struct {
	publish.Store
	mu    sync.Mutex
	opens map[string]int
}

func (c *countingStore) Open(ctx context.Context, key string) (publish.Object, error) {
	c.mu.Lock()
	if c.opens == nil {
		c.opens = map[string]int{}
	}
	c.opens[key]++
	c.mu.Unlock()
	return c.Store.Open(ctx, key)
}

func readAll(t *testing.T, s publish.Store, key string) []byte {
	t.Helper()
	o, err := s.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

// checkServed checks that the tree serves exactly the given releases,
// with latest at latest: the manifest, the pointers, the derived files,
// and every artifact of every release whole, matching its SHA-256 and
// signature.
func checkServed(t *testing.T, s publish.Store, pub *ecdsa.PublicKey, latest string, versions ...string) {
	t.Helper()
	if got := strings.TrimSpace(string(readAll(t, s, publish.KeyLatest))); got != latest {
		t.Errorf("latest = %q, want %q", got, latest)
	}
	m, err := publish.ReadManifest(bytes.NewReader(readAll(t, s, publish.KeyManifest)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Releases {
		got = append(got, r.Version)
	}
	slices.Sort(got)
	slices.Sort(versions)
	if !slices.Equal(got, versions) {
		t.Errorf("releases.json has %q, want %q", got, versions)
	}
	for _, key := range []string{publish.KeyRedirects, publish.KeyIndex, publish.KeyPublicKey, publish.KeyInstall} {
		if _, err := s.Stat(t.Context(), key); err != nil {
			t.Errorf("stat %s: %v", key, err)
		}
	}
	// _redirects has placeholder rules: one for every version.
	redirects := string(readAll(t, s, publish.KeyRedirects))
	if !strings.Contains(redirects, "/:version/x86/treasury-cli ") {
		t.Errorf("_redirects has no rule for /:version/x86/treasury-cli:\n%s", redirects)
	}
	if !strings.Contains(redirects, "/x86/treasury-cli /bin/"+latest+"/") {
		t.Errorf("_redirects: /x86/treasury-cli does not lead to %s", latest)
	}
	for _, r := range m.Releases {
		if len(r.Artifacts) != 22 {
			t.Errorf("%s has %d artifacts, want 22", r.Version, len(r.Artifacts))
		}
		for _, a := range r.Artifacts {
			body := readAll(t, s, a.Key)
			sum := sha256.Sum256(body)
			if int64(len(body)) != a.Size || hex.EncodeToString(sum[:]) != a.SHA256 {
				t.Errorf("%s: %d bytes, sha256 %x; manifest says %d, %s", a.Key, len(body), sum, a.Size, a.SHA256)
			}
			sig := readAll(t, s, publish.SigKey(a.Key))
			if string(sig) != a.Signature {
				t.Errorf("%s.sig differs from the manifest's signature", a.Key)
			}
			if err := publish.Verify(pub, bytes.NewReader(body), sig); err != nil {
				t.Errorf("%s: signature: %v", a.Key, err)
			}
		}
	}
}

// TestPublish publishes a release to MinIO: every key of the plan is
// there, and no uploaded artifact was downloaded again to check it (the
// store's SHA-256, whole-object or composite-verified, is used).
func TestPublish(t *testing.T) {
	s := s3test.Store(t, testenv.SharedMinIO(t), "dl", s3.Options{PartSize: s3.MinPartSize})
	signer, pub := newSigner(t)
	cs := &countingStore{Store: s}
	res, err := newPublisher(t, cs, signer).Publish(t.Context(), "26.1.1", releaseInput(t, "26.1.1", 6<<20))
	if err != nil {
		t.Fatal(err)
	}
	if res.Latest != "26.1.1" || res.Existing {
		t.Errorf("result %+v, want latest 26.1.1, not existing", res)
	}
	for _, key := range res.Written {
		if _, err := s.Stat(t.Context(), key); err != nil {
			t.Errorf("written %s: %v", key, err)
		}
	}
	for key, n := range cs.opens {
		if strings.HasPrefix(key, "bin/") && !strings.HasSuffix(key, ".sig") && !strings.HasSuffix(key, "SHA256SUMS") ||
			strings.HasPrefix(key, "img/") && !strings.HasSuffix(key, ".sig") && !strings.HasSuffix(key, "SHA256SUMS") {
			t.Errorf("the publish opened the uploaded artifact %s %d times: a second download", key, n)
		}
	}
	checkServed(t, s, pub, "26.1.1", "26.1.1")

	// The same release again is a no-op that uploads nothing.
	res, err = newPublisher(t, s, signer).Publish(t.Context(), "26.1.1", releaseInput(t, "26.1.1", 6<<20))
	if err != nil || !res.Existing {
		t.Fatalf("publish again = %+v, %v, want an existing release", res, err)
	}
}

// killStore kills the server when the upload of one key has read n bytes.
type killStore struct {
	publish.Store
	key  string
	n    int64
	kill func()
	once sync.Once
}

func (k *killStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	if key == k.key {
		r = &killingReader{r: r, n: k.n, kill: func() { k.once.Do(k.kill) }}
	}
	return k.Store.Put(ctx, key, r, size, opts)
}

// TestPublishKilled kills MinIO in the middle of a publish: the previous
// release stays fully served, and after a restart the same publish
// completes.
func TestPublishKilled(t *testing.T) {
	m := testenv.NewMinIO(t)
	rawurl, opts := s3test.Bucket(t, m)
	opts.PartSize = s3.MinPartSize
	s, err := s3.Open(t.Context(), rawurl, opts) // default retries: rides out a restart
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = 1 // the crashing publish fails at once
	crashing, err := s3.Open(t.Context(), rawurl, opts)
	if err != nil {
		t.Fatal(err)
	}
	signer, pub := newSigner(t)
	if _, err := newPublisher(t, s, signer).Publish(t.Context(), "26.1.1", releaseInput(t, "26.1.1", 6<<20)); err != nil {
		t.Fatal(err)
	}
	next := releaseInput(t, "26.1.2", 12<<20)
	ks := &killStore{Store: crashing, key: "img/26.1.2/treasury-node-26.1.2-amd64.tar", n: 7 << 20, kill: m.Kill}
	_, err = newPublisher(t, ks, signer).Publish(t.Context(), "26.1.2", next)
	if !errors.Is(err, publish.ErrUnavailable) {
		t.Fatalf("publish with the server killed = %v, want ErrUnavailable", err)
	}
	t.Logf("publish while killed: %v", err)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	checkServed(t, s, pub, "26.1.1", "26.1.1")
	if _, err := s.Stat(t.Context(), ks.key); !errors.Is(err, publish.ErrNotFound) {
		t.Errorf("the interrupted image: %v, want ErrNotFound", err)
	}

	res, err := newPublisher(t, s, signer).Publish(t.Context(), "26.1.2", next)
	if err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	if res.Latest != "26.1.2" {
		t.Errorf("latest after the re-run = %q", res.Latest)
	}
	checkServed(t, s, pub, "26.1.2", "26.1.1", "26.1.2")
}

// TestConcurrentPublishes runs two publishers of different versions at
// once, each with its own client: both versions end up in releases.json
// and latest is the newer, whichever finishes last.
func TestConcurrentPublishes(t *testing.T) {
	m := testenv.SharedMinIO(t)
	rawurl, opts := s3test.Bucket(t, m)
	opts.PartSize = s3.MinPartSize
	signer, pub := newSigner(t)
	rounds := [][2]string{{"26.1.1", "26.1.2"}, {"26.2.1", "26.1.3"}}
	var all []string
	for _, round := range rounds {
		var wg sync.WaitGroup
		var failed atomic.Bool
		for _, v := range round {
			in := releaseInput(t, v, 1<<20)
			s, err := s3.Open(t.Context(), rawurl, opts)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if _, err := newPublisher(t, s, signer).Publish(t.Context(), v, in); err != nil {
					t.Errorf("publish %s: %v", v, err)
					failed.Store(true)
				}
			})
		}
		wg.Wait()
		if failed.Load() {
			t.FailNow()
		}
		all = append(all, round[:]...)
	}
	s, err := s3.Open(t.Context(), rawurl, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkServed(t, s, pub, "26.2.1", all...)
}
