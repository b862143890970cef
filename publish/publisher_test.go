package publish_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/publish/storetest"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata")
	}
}

// goldenFile compares got with testdata/<name>.golden; go test -update
// rewrites it.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}

const baseURL = "https://dl.example.com"

// fixedSigner loads the test-only key of testdata, so rendered output
// that pins the public key is stable.
func fixedSigner(t testing.TB) publish.Signer {
	t.Helper()
	s, err := publish.LoadSigner(context.Background(), filepath.Join("testdata", "test-only.key"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dirStore(t testing.TB, root string) *dir.Store {
	t.Helper()
	s, err := dir.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newPublisher(t testing.TB, store publish.Store, signer publish.Signer) *publish.Publisher {
	t.Helper()
	p, err := publish.NewPublisher(store, signer, publish.DefaultConfig(), baseURL+"/")
	if err != nil {
		t.Fatal(err)
	}
	p.Now = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }
	return p
}

func scan(t testing.TB, dir string) []publish.Input {
	t.Helper()
	inputs, err := publish.DefaultConfig().ScanInput(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	return inputs
}

func mustPublish(t testing.TB, p *publish.Publisher, version, seed string) *publish.Result {
	t.Helper()
	res, err := p.Publish(context.Background(), version, scan(t, demoInputs(t, seed)))
	if err != nil {
		t.Fatalf("publish %s: %v", version, err)
	}
	return res
}

func readKey(t testing.TB, s publish.Store, key string) []byte {
	t.Helper()
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func manifest(t testing.TB, s publish.Store) *publish.Manifest {
	t.Helper()
	m, err := publish.ReadManifest(bytes.NewReader(readKey(t, s, publish.KeyManifest)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// snapshot maps every key of the store to its ETag.
func snapshot(t testing.TB, s publish.Store) map[string]string {
	t.Helper()
	list, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, in := range list {
		m[in.Key] = in.ETag
	}
	return m
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range after {
		if before[k] != v {
			t.Errorf("%s was written (etag %s -> %s)", k, before[k], v)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("%s disappeared", k)
		}
	}
}

// TestPublishTree publishes a demo release and checks the tree: the key
// layout (golden), every signature with openssl, SHA256SUMS with
// sha256sum, the manifest and the pointers.
func TestPublishTree(t *testing.T) {
	root := t.TempDir()
	s := dirStore(t, root)
	signer := fixedSigner(t)
	res := mustPublish(t, newPublisher(t, s, signer), "26.1.1", "one")
	if res.Latest != "26.1.1" || res.Preview != "" || res.Existing {
		t.Errorf("result = %+v", res)
	}
	list, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var keys bytes.Buffer
	for _, in := range list {
		fmt.Fprintln(&keys, in.Key)
	}
	goldenFile(t, "TestPublishTree.keys", keys.Bytes())
	if len(res.Written) != len(list) {
		t.Errorf("Result.Written has %d keys, the tree %d", len(res.Written), len(list))
	}

	pubPEM := readKey(t, s, publish.KeyPublicKey)
	if want, _ := os.ReadFile("testdata/test-only.pub"); !bytes.Equal(pubPEM, want) {
		t.Errorf("dl.pub = %s, want the signing key's public key", pubPEM)
	}
	m := manifest(t, s)
	if len(m.Releases) != 1 || m.Releases[0].Version != "26.1.1" || m.Releases[0].Kind != "release" || len(m.Releases[0].Artifacts) != 22 {
		t.Fatalf("manifest = %+v", m)
	}
	for _, a := range m.Releases[0].Artifacts {
		body := readKey(t, s, a.Key)
		sig := readKey(t, s, publish.SigKey(a.Key))
		if string(sig) != a.Signature {
			t.Errorf("%s.sig differs from the manifest's signature", a.Key)
		}
		opensslVerify(t, pubPEM, body, sig)
		if int64(len(body)) != a.Size {
			t.Errorf("%s: size %d, manifest %d", a.Key, len(body), a.Size)
		}
		wantAccess := map[string]string{"treasury-cli": "public", "treasury-node": "full", "treasury-demo": "full"}[a.Name]
		if wantAccess == "" {
			wantAccess = "basic"
		}
		if a.Access != wantAccess {
			t.Errorf("%s: access %s, want %s", a.Key, a.Access, wantAccess)
		}
	}
	for _, kind := range []string{"bin", "img"} {
		sums := kind + "/26.1.1/SHA256SUMS"
		opensslVerifyMetadata(t, pubPEM, publish.SignedSums, baseURL+"/"+sums, readKey(t, s, sums), readKey(t, s, sums+".sig"))
		sha256sum := testenv.Tool(t, "sha256sum")
		cmd := exec.Command(sha256sum, "--strict", "-c", "SHA256SUMS")
		cmd.Dir = filepath.Join(root, kind, "26.1.1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c %s: %v\n%s", sums, err, out)
		}
	}
	if got := string(readKey(t, s, publish.KeyLatest)); got != "26.1.1\n" {
		t.Errorf("latest = %q", got)
	}
	if _, err := s.Stat(context.Background(), publish.KeyPreview); !errors.Is(err, publish.ErrNotFound) {
		t.Errorf("preview exists without a preview release: %v", err)
	}
	// treasury-cli's archive holds treasury.
	tarBin := testenv.Tool(t, "tar")
	out := run(t, tarBin, "tzvf", filepath.Join(root, "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz"))
	if !strings.Contains(out, " treasury\n") || !strings.HasPrefix(out, "-rwxr-xr-x 0/0") {
		t.Errorf("treasury-cli archive lists:\n%s", out)
	}
	checkTree(t, s)
}

// TestPublishRedirects checks _redirects and the pointers over a release,
// a preview and a newer release.
func TestPublishRedirects(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	mustPublish(t, p, "26.1.1", "one")
	res := mustPublish(t, p, "26.1.2-pre.3", "pre")
	if res.Latest != "26.1.1" || res.Preview != "26.1.2-pre.3" {
		t.Errorf("after the preview: latest %q, preview %q", res.Latest, res.Preview)
	}
	res = mustPublish(t, p, "26.1.2", "two")
	if res.Latest != "26.1.2" || res.Preview != "26.1.2-pre.3" {
		t.Errorf("after 26.1.2: latest %q, preview %q", res.Latest, res.Preview)
	}
	redirects := readKey(t, s, publish.KeyRedirects)
	goldenFile(t, "TestPublishRedirects", redirects)
	for _, want := range []string{
		"/x86/engine /bin/26.1.2/engine-26.1.2-linux-amd64.tar.gz 302\n",
		"/macos/treasury-cli/sig /bin/26.1.2/treasury-cli-26.1.2-macos-arm64.tar.gz/sig 302\n",
		"/preview/arm/treasury-node /img/26.1.2-pre.3/treasury-node-26.1.2-pre.3-arm64.tar 302\n",
		"/:version/mac/cord /bin/:version/cord-:version-macos-arm64.tar.gz 302\n",
		"/:version/x86/treasury-node/sig /img/:version/treasury-node-:version-amd64.tar/sig 302\n",
		"/bin/:version/:file/sig /bin/:version/:file.sig 200\n",
	} {
		if !bytes.Contains(redirects, []byte(want)) {
			t.Errorf("_redirects lacks %q", want)
		}
	}
	if bytes.Contains(redirects, []byte("/mac/treasury-node")) {
		t.Error("_redirects has a mac image")
	}
	checkTree(t, s)
}

// TestPublishInstall renders the install script with the base URL and
// the pinned key.
func TestPublishInstall(t *testing.T) {
	s := dirStore(t, t.TempDir())
	mustPublish(t, newPublisher(t, s, fixedSigner(t)), "26.1.1", "one")
	script := readKey(t, s, publish.KeyInstall)
	goldenFile(t, "TestPublishInstall", script)
	pub, _ := os.ReadFile("testdata/test-only.pub")
	if !bytes.Contains(script, []byte(baseURL)) || !bytes.Contains(script, bytes.TrimSpace(pub)) {
		t.Error("install script lacks the base URL or the pinned key")
	}
}

func TestPublishVersionRules(t *testing.T) {
	tests := []struct {
		name, before, version string
		is                    error
		want                  string
	}{
		{name: "Empty", version: "", is: publish.ErrVersionMalformed},
		{name: "TwoParts", version: "26.1", is: publish.ErrVersionMalformed},
		{name: "FourDigitYear", version: "2026.1.1", is: publish.ErrVersionMalformed},
		{name: "LeadingZero", version: "26.01.1", is: publish.ErrVersionMalformed},
		{name: "ZeroPatch", version: "26.1.0", is: publish.ErrVersionMalformed},
		{name: "VPrefix", version: "v26.1.1", is: publish.ErrVersionMalformed},
		{name: "BadPre", version: "26.1.2-rc.1", is: publish.ErrVersionMalformed},
		{name: "PreZero", version: "26.1.2-pre.0", is: publish.ErrVersionMalformed},
		{name: "PathInVersion", version: "26.1.1/../x", is: publish.ErrVersionMalformed},
		{name: "PreviewSkipsPatch", before: "26.1.1", version: "26.1.3-pre.1", want: "P must be the previous release's P + 1"},
		{name: "PreviewOfReleased", before: "26.1.1", version: "26.1.1-pre.1", want: "already released"},
		{name: "PreviewOK", before: "26.1.1", version: "26.1.2-pre.7"},
		{name: "OlderReleaseOK", before: "26.1.1", version: "25.4.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := dirStore(t, t.TempDir())
			p := newPublisher(t, s, fixedSigner(t))
			if tt.before != "" {
				mustPublish(t, p, tt.before, "before")
			}
			before := snapshot(t, s)
			res, err := p.Publish(context.Background(), tt.version, scan(t, demoInputs(t, "x")))
			if tt.is == nil && tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.before != "" && res.Latest != tt.before {
					t.Errorf("latest = %s, want it to stay at %s", res.Latest, tt.before)
				}
				checkTree(t, s)
				return
			}
			if err == nil {
				t.Fatalf("Publish(%q) succeeded", tt.version)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Publish(%q) = %v, want %v", tt.version, err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Publish(%q) = %v, want it to say %q", tt.version, err, tt.want)
			}
			sameSnapshot(t, before, snapshot(t, s))
		})
	}
}

func TestPublishIdentical(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	in := demoInputs(t, "one")
	if _, err := p.Publish(context.Background(), "26.1.1", scan(t, in)); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s)
	res, err := p.Publish(context.Background(), "26.1.1", scan(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Existing || len(res.Written) != 0 {
		t.Errorf("identical re-publish: existing %v, wrote %q; want a no-op", res.Existing, res.Written)
	}
	sameSnapshot(t, before, snapshot(t, s))
}

func TestPublishDifferentBytes(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	mustPublish(t, p, "26.1.1", "one")
	before := snapshot(t, s)

	t.Run("OtherContent", func(t *testing.T) {
		_, err := p.Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "other")))
		if !errors.Is(err, publish.ErrVersionExists) {
			t.Fatalf("Publish = %v, want ErrVersionExists", err)
		}
		sameSnapshot(t, before, snapshot(t, s))
	})
	t.Run("FewerArtifacts", func(t *testing.T) {
		in := demoInputs(t, "one")
		os.Remove(filepath.Join(in, "engine-macos-arm64"))
		inputs, err := publish.DefaultConfig().ScanInput(in, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Publish(context.Background(), "26.1.1", inputs); !errors.Is(err, publish.ErrVersionExists) {
			t.Fatalf("Publish = %v, want ErrVersionExists", err)
		}
		sameSnapshot(t, before, snapshot(t, s))
	})
}

// TestPublishOtherKey: the same bytes published again with another key
// are refused before anything is written (also in a dry run), so dl.pub,
// install and the SHA256SUMS signatures keep matching the artifacts' .sig.
func TestPublishOtherKey(t *testing.T) {
	s := dirStore(t, t.TempDir())
	mustPublish(t, newPublisher(t, s, fixedSigner(t)), "26.1.1", "one")
	before := snapshot(t, s)
	other, _ := testSigner(t)
	for _, dry := range []bool{true, false} {
		p := newPublisher(t, s, other)
		p.DryRun = dry
		_, err := p.Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "one")))
		if !errors.Is(err, publish.ErrOtherKey) {
			t.Fatalf("Publish with another key (dry run %v) = %v, want ErrOtherKey", dry, err)
		}
		sameSnapshot(t, before, snapshot(t, s))
	}
	// A new version with the other key is a rotation: allowed, with a warning.
	mustPublish(t, newPublisher(t, s, other), "26.1.2", "two")
}

// TestPublishLeftoverDifferentBytes: an unfinished publish left an
// artifact; a re-run with other bytes is refused rather than overwriting a
// canonical URL, and the same bytes are adopted.
func TestPublishLeftoverDifferentBytes(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	key := "bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
	if _, err := s.Put(context.Background(), key, strings.NewReader("leftover"), 8, publish.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := p.Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "one")))
	if !errors.Is(err, publish.ErrVersionExists) {
		t.Fatalf("Publish = %v, want ErrVersionExists", err)
	}
	if _, err := s.Stat(context.Background(), publish.KeyManifest); !errors.Is(err, publish.ErrNotFound) {
		t.Errorf("manifest written after a refused artifact: %v", err)
	}
}

func TestPublishDryRun(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	p.DryRun = true
	res, err := p.Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "one")))
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, s); len(got) != 0 {
		t.Fatalf("dry run wrote %v", got)
	}
	// The plan is the layout a real publish writes.
	want, _ := os.ReadFile("testdata/TestPublishTree.keys.golden")
	got := slices.Clone(res.Written)
	slices.Sort(got)
	if strings.Join(got, "\n")+"\n" != string(want) {
		t.Errorf("dry-run plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}

// publishAtOnce publishes versions at the same time, each by its own
// Publisher over a store from newStore, and fails t on any error.
func publishAtOnce(t *testing.T, newStore func() publish.Store, signer publish.Signer, versions ...string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(versions))
	for _, v := range versions {
		p := newPublisher(t, newStore(), signer)
		inputs := scan(t, demoInputs(t, v))
		wg.Go(func() {
			if _, err := p.Publish(context.Background(), v, inputs); err != nil {
				errs <- fmt.Errorf("publish %s: %w", v, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := false
	for err := range errs {
		t.Error(err)
		failed = true
	}
	if failed {
		t.FailNow()
	}
}

// TestPublishConcurrent races publishers of different versions on one
// directory, each with its own Store as separate processes would: every
// version ends in the manifest and latest at the newest.
func TestPublishConcurrent(t *testing.T) {
	root := t.TempDir()
	signer := fixedSigner(t)
	versions := []string{"26.1.1", "26.1.2", "26.2.1", "26.1.3", "25.9.9"}
	publishAtOnce(t, func() publish.Store { return dirStore(t, root) }, signer, versions...)
	s := dirStore(t, root)
	m := manifest(t, s)
	var got []string
	for _, r := range m.Releases {
		got = append(got, r.Version)
	}
	if want := []string{"26.2.1", "26.1.3", "26.1.2", "26.1.1", "25.9.9"}; !slices.Equal(got, want) {
		t.Errorf("manifest versions = %q, want %q", got, want)
	}
	if got := string(readKey(t, s, publish.KeyLatest)); got != "26.2.1\n" {
		t.Errorf("latest = %q, want 26.2.1", got)
	}
	redirects := readKey(t, s, publish.KeyRedirects)
	if !bytes.Contains(redirects, []byte("/x86/engine /bin/26.2.1/engine-26.2.1-linux-amd64.tar.gz 302\n")) {
		t.Errorf("_redirects does not send /x86/engine to 26.2.1:\n%s", redirects)
	}
	checkTree(t, s)
}

// TestPublishStoreFails crashes a publish at every one of its writes in
// turn, before the write and after it: after each crash the previous
// release is still fully served and every signed file verifies against
// its signature; a re-run completes the release.
func TestPublishStoreFails(t *testing.T) {
	root := t.TempDir()
	crashEveryWrite(t, dirStore(t, root), func(t *testing.T) publish.Store {
		copied := filepath.Join(t.TempDir(), "tree")
		if err := os.CopyFS(copied, os.DirFS(root)); err != nil {
			t.Fatal(err)
		}
		return dirStore(t, copied)
	})
}

// crashEveryWrite publishes 26.1.1 into prepared, counts the writes of
// publishing 26.1.2 on top of it, and then, for every write N and both
// kinds of crash, publishes 26.1.2 through a storetest.Crash failing write
// N into a copy of prepared that clone makes.
func crashEveryWrite(t *testing.T, prepared publish.Store, clone func(t *testing.T) publish.Store) {
	ctx := context.Background()
	signer := fixedSigner(t)
	// Two artifacts, a binary and an image (five builds), make every kind
	// of write of a publish, in half the writes of the built-in list.
	few := func(in []publish.Input) []publish.Input {
		return slices.DeleteFunc(in, func(in publish.Input) bool {
			return in.Spec.Name != "treasury-cli" && in.Spec.Name != "treasury-node"
		})
	}
	in1, in2 := few(scan(t, demoInputs(t, "one"))), few(scan(t, demoInputs(t, "two")))
	publishIn := func(t *testing.T, s publish.Store, version string, in []publish.Input) error {
		p := newPublisher(t, s, signer)
		p.Parallel = 1 // write N is the same write in every run
		_, err := p.Publish(ctx, version, in)
		return err
	}
	if err := publishIn(t, prepared, "26.1.1", in1); err != nil {
		t.Fatal(err)
	}
	counting := &storetest.Crash{Store: clone(t), At: -1}
	if err := publishIn(t, counting, "26.1.2", in2); err != nil {
		t.Fatal(err)
	}
	writes := counting.Writes()
	t.Logf("a publish of 26.1.2 makes %d writes", writes)
	if writes < 20 {
		t.Fatalf("a publish made %d writes; expected more", writes)
	}
	for n := range writes {
		for _, after := range []bool{false, true} {
			name := fmt.Sprintf("%d/before", n)
			if after {
				name = fmt.Sprintf("%d/after", n)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel() // each on its own copy; fsync-bound
				base := clone(t)
				err := publishIn(t, &storetest.Crash{Store: base, At: n, After: after}, "26.1.2", in2)
				if !errors.Is(err, storetest.ErrCrash) {
					t.Fatalf("Publish through a crashing store = %v, want ErrCrash", err)
				}
				checkTreeCrashed(t, base)
				if _, ok := manifest(t, base).Find("26.1.1"); !ok {
					t.Fatal("26.1.1 left the manifest")
				}
				if err := publishIn(t, base, "26.1.2", in2); err != nil {
					t.Fatalf("re-run: %v", err)
				}
				if got := strings.TrimSpace(string(readKey(t, base, publish.KeyLatest))); got != "26.1.2" {
					t.Errorf("after the re-run latest = %s", got)
				}
				checkTree(t, base)
			})
		}
	}
}

// corruptingStore flips a byte of every archive on its way into the
// directory store, like a link that lies.
type corruptingStore struct{ *dir.Store }

func (c corruptingStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	if !strings.HasSuffix(key, ".tar.gz") {
		return c.Store.Put(ctx, key, r, size, opts)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return publish.ObjectInfo{}, err
	}
	b[len(b)/2] ^= 1
	return c.Store.Put(ctx, key, bytes.NewReader(b), int64(len(b)), publish.PutOptions{ContentType: opts.ContentType})
}

// TestPublishCorruptStore: an archive changed on its way into the store
// stops the publish before anything refers to it. The directory store
// reports the digest of the bytes it wrote, so nothing is read back (a
// read back from the page cache would not see the disk either).
func TestPublishCorruptStore(t *testing.T) {
	tests := []struct {
		name  string
		store func(base *dir.Store, root string) publish.Store
	}{
		{"OnTheWay", func(base *dir.Store, _ string) publish.Store { return corruptingStore{base} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			base := dirStore(t, root)
			_, err := newPublisher(t, tt.store(base, root), fixedSigner(t)).Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "one")))
			if err == nil || !strings.Contains(err.Error(), "stored object has sha256") {
				t.Fatalf("Publish through a corrupting store = %v, want the integrity check to fail", err)
			}
			for _, key := range []string{publish.KeyManifest, publish.KeyLatest} {
				if _, err := base.Stat(context.Background(), key); !errors.Is(err, publish.ErrNotFound) {
					t.Errorf("%s written after a failed integrity check", key)
				}
			}
		})
	}
}

// checkTree checks what a reader of the tree relies on: every release of
// the manifest is complete (each artifact there, with its size, digest and
// a valid .sig equal to the manifest's, and its SHA256SUMS), the pointers
// name published versions, and every redirect leads to an object.
//
// Every signed file (releases.json, each SHA256SUMS, the channel record,
// every artifact with a .sig) verifies against its signature, and each
// .sig is one signature, as openssl takes it.
func checkTree(t *testing.T, s publish.Store) {
	t.Helper()
	checkSignedTree(t, s, true)
}

// checkTreeCrashed is checkTree for a tree a publish crashed in: a .sig
// may hold the signatures of a file's old and new bytes.
func checkTreeCrashed(t *testing.T, s publish.Store) {
	t.Helper()
	checkSignedTree(t, s, false)
}

func checkSignedTree(t *testing.T, s publish.Store, settled bool) {
	t.Helper()
	ctx := context.Background()
	pub, err := publish.ParsePublicKeyPEM(readKey(t, s, publish.KeyPublicKey))
	if err != nil {
		t.Fatal(err)
	}
	checkSigned(t, s, pub, publish.KeyManifest, settled)
	if b, err := readObject(s, publish.KeyChannel); err == nil {
		if _, err := publish.VerifyChannel(pub, b, time.Time{}); err != nil {
			t.Errorf("%s: %v", publish.KeyChannel, err)
		}
	}
	// Every file beside its .sig, whatever it is.
	list, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list {
		if file, ok := strings.CutSuffix(o.Key, ".sig"); ok && file != publish.KeyManifest {
			if _, err := s.Stat(ctx, file); err == nil {
				checkSigned(t, s, pub, file, settled)
			}
		}
	}
	m := manifest(t, s)
	for _, r := range m.Releases {
		v, _ := publish.ParseVersion(r.Version)
		for _, kind := range []string{publish.KindBinary, publish.KindImage} {
			if _, err := s.Stat(ctx, publish.SumsKey(kind, v)); err == nil {
				checkSigned(t, s, pub, publish.SumsKey(kind, v), settled)
			}
		}
	}
	for _, r := range m.Releases {
		for _, a := range r.Artifacts {
			body := readKey(t, s, a.Key)
			if int64(len(body)) != a.Size {
				t.Errorf("%s: %d bytes, manifest says %d", a.Key, len(body), a.Size)
			}
			sig := readKey(t, s, publish.SigKey(a.Key))
			if string(sig) != a.Signature {
				t.Errorf("%s.sig is not the manifest's signature", a.Key)
			}
			if err := publish.Verify(pub, bytes.NewReader(body), sig); err != nil {
				t.Errorf("%s: %v", a.Key, err)
			}
			v, _ := publish.ParseVersion(r.Version)
			sums := readKey(t, s, publish.SumsKey(a.Kind, v))
			if !bytes.Contains(sums, []byte(a.SHA256+"  "+a.FileName()+"\n")) {
				t.Errorf("%s is not in its SHA256SUMS", a.Key)
			}
		}
	}
	for _, key := range []string{publish.KeyLatest, publish.KeyPreview} {
		o, err := s.Open(ctx, key)
		if errors.Is(err, publish.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(o)
		o.Close()
		if _, ok := m.Find(strings.TrimSpace(string(b))); !ok {
			t.Errorf("%s names %q, which is not in the manifest", key, b)
		}
	}
	// Every short URL, as the placeholder rules of _redirects expand, leads
	// to an object of the tree.
	for _, r := range publish.ShortURLs(m) {
		if r.Status != 302 || strings.HasSuffix(r.To, "/sig") {
			continue
		}
		if _, err := s.Stat(ctx, strings.TrimPrefix(r.To, "/")); err != nil {
			t.Errorf("short URL %s leads to %s: %v", r.From, r.To, err)
		}
	}
	for _, key := range []string{publish.KeyInstall, publish.KeyIndex} {
		if _, err := s.Stat(ctx, key); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// checkSigned checks that the .sig of key verifies it; settled, that it
// is one signature.
func checkSigned(t *testing.T, s publish.Store, pub *ecdsa.PublicKey, key string, settled bool) {
	t.Helper()
	body := readKey(t, s, key)
	sig, err := readObject(s, publish.SigKey(key))
	if err != nil {
		t.Errorf("%s: no signature: %v", key, err)
		return
	}
	// Downloads are signed bare, releases.json and SHA256SUMS as
	// metadata at their URL.
	kind := publish.SignedSums
	switch {
	case key == publish.KeyManifest:
		kind = publish.SignedManifest
	case !strings.HasSuffix(key, "/SHA256SUMS"):
		kind = ""
	}
	if kind == "" {
		err = publish.Verify(pub, bytes.NewReader(body), sig)
	} else {
		err = publish.VerifyMetadataAny(pub, kind, baseURL+"/"+key, body, sig)
	}
	if err != nil {
		t.Errorf("%s beside a signature of other bytes: %v", key, err)
	}
	if n := len(publish.SignatureLines(sig)); settled && n != 1 {
		t.Errorf("%s.sig holds %d signatures after a finished publish, want 1", key, n)
	}
}

func readObject(s publish.Store, key string) ([]byte, error) {
	o, err := s.Open(context.Background(), key)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}

// TestPublishPreviewAgain: a CI retry of a preview after its release is a
// no-op, not a version-rule error.
func TestPublishPreviewAgain(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	mustPublish(t, p, "26.1.1", "one")
	pre := demoInputs(t, "pre")
	if _, err := p.Publish(context.Background(), "26.1.2-pre.1", scan(t, pre)); err != nil {
		t.Fatal(err)
	}
	mustPublish(t, p, "26.1.2", "two")
	res, err := p.Publish(context.Background(), "26.1.2-pre.1", scan(t, pre))
	if err != nil || !res.Existing || len(res.Written) != 0 {
		t.Fatalf("re-publish of the preview = %+v, %v; want a no-op", res, err)
	}
}

// TestNewPublisherBaseURL: a base URL that would leak credentials into the
// public script and page, or run code in a user's shell, is refused, and
// the error never shows the password.
func TestNewPublisherBaseURL(t *testing.T) {
	signer := fixedSigner(t)
	tests := []struct{ name, url, want string }{
		{"OK", "https://dl.example.com/releases/", ""},
		{"OKPortIPv6", "http://[::1]:8080", ""},
		{"ErrUserinfo", "https://ci:s3cret@dl.example.com", "user:password@"},
		{"ErrUser", "https://ci@dl.example.com", "user:password@"},
		{"ErrSchemeUserinfo", "ftp://ci:s3cret@dl.example.com", "absolute http(s) URL"},
		{"ErrUnparsedUserinfo", "https://ci:s3cret@dl example.com", "absolute http(s) URL"},
		{"ErrQuote", "https://dl.example.com/'$(id)'", "not allowed"},
		{"ErrBackquote", "https://dl.example.com/`id`", "not allowed"},
		{"ErrDollar", "https://dl.example.com/$HOME", "not allowed"},
		{"ErrQuery", "https://dl.example.com/?a=b", "query"},
		{"ErrScheme", "ftp://dl.example.com", "absolute http(s) URL"},
		{"ErrRelative", "/dl", "absolute http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := publish.NewPublisher(dirStore(t, t.TempDir()), signer, publish.DefaultConfig(), tt.url)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("NewPublisher(%q) = %v", tt.url, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("NewPublisher(%q) = %v, want an error with %q and without the password", tt.url, err, tt.want)
			}
		})
	}
}

// TestPublishSymlinkSwappedOut: a link in the input directory that is
// pointed out of it after the scan (a hostile build step) is not followed
// at upload: nothing of the file it points to is published or signed.
func TestPublishSymlinkSwappedOut(t *testing.T) {
	in := demoInputs(t, "one")
	link := filepath.Join(in, "treasury-cli-linux-amd64")
	os.Remove(link)
	if err := os.Symlink("treasury-cli-linux-arm64", link); err != nil {
		t.Fatal(err)
	}
	inputs := scan(t, in)
	secret := filepath.Join(t.TempDir(), "dl.key")
	writeFile(t, secret, []byte("#!/bin/sh\necho secret signing key\n"), 0o600)
	os.Remove(link)
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	s := dirStore(t, t.TempDir())
	_, err := newPublisher(t, s, fixedSigner(t)).Publish(context.Background(), "26.1.1", inputs)
	if err == nil || !strings.Contains(err.Error(), "symbolic links are followed only inside the input directory") {
		t.Fatalf("Publish = %v, want the link refused", err)
	}
	objs, _ := s.List(context.Background(), "bin/")
	for _, o := range objs {
		if strings.Contains(o.Key, "treasury-cli") && strings.Contains(o.Key, "linux-amd64") {
			t.Errorf("published %s from a link out of the input directory", o.Key)
		}
	}
}

// pausingStore holds the first Put of key until release is closed, after
// saying so on reached.
type pausingStore struct {
	publish.Store
	key     string
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (s *pausingStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	if key == s.key {
		s.once.Do(func() {
			close(s.reached)
			<-s.release
		})
	}
	return s.Store.Put(ctx, key, r, size, opts)
}

// TestPublishRaceDifferentBytes: two publishes of one version with
// different bytes at once. The first to claim the version wins; the other
// is refused before it writes anything; no mix of both inputs remains.
// Publisher A is paused at its first artifact while B runs whole, the
// interleaving that left both failing and a mixed bin/V before.
func TestPublishRaceDifferentBytes(t *testing.T) {
	raceDifferentBytes(t, dirStore(t, t.TempDir()))
}

func raceDifferentBytes(t *testing.T, s publish.Store) {
	t.Helper()
	paused := &pausingStore{Store: s, key: "bin/26.1.1/connector-26.1.1-linux-amd64.tar.gz", reached: make(chan struct{}), release: make(chan struct{})}
	a := newPublisher(t, paused, fixedSigner(t))
	a.Parallel = 1
	b := newPublisher(t, s, fixedSigner(t))
	inA, inB := scan(t, demoInputs(t, "A")), scan(t, demoInputs(t, "B"))
	errA := make(chan error, 1)
	go func() {
		_, err := a.Publish(context.Background(), "26.1.1", inA)
		errA <- err
	}()
	<-paused.reached
	_, errB := b.Publish(context.Background(), "26.1.1", inB)
	close(paused.release)
	if err := <-errA; err != nil {
		t.Fatalf("the first publisher failed: %v", err)
	}
	if !errors.Is(errB, publish.ErrVersionExists) {
		t.Fatalf("the second publisher = %v, want ErrVersionExists", errB)
	}
	checkTree(t, s)
	// Every artifact is A's.
	m := manifest(t, s)
	r, ok := m.Find("26.1.1")
	if !ok {
		t.Fatal("26.1.1 not published")
	}
	for _, art := range r.Artifacts {
		if art.Kind != publish.KindBinary {
			continue
		}
		body := readKey(t, s, art.Key)
		if bytes.Contains(gunzip(t, body), []byte(" B ")) {
			t.Errorf("%s holds B's bytes", art.Key)
		}
	}
	// And the same bytes again are a no-op.
	if _, err := b.Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "A"))); err != nil {
		t.Errorf("re-publishing A's bytes: %v", err)
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPublishCleansTemp: a publish removes the temporary files that
// killed publishes left in a directory store, once they are older than
// TempAge; a younger one, maybe a publish still running, is kept.
func TestPublishCleansTemp(t *testing.T) {
	root := t.TempDir()
	s := dirStore(t, root)
	old := filepath.Join(root, "img", "26.1.1", ".wharf-tmp-0123456789abcdef-treasury-node-26.1.1-amd64.tar")
	young := filepath.Join(root, "bin", "26.1.1", ".wharf-tmp-fedcba9876543210-engine-26.1.1-linux-amd64.tar.gz")
	for _, p := range []string{old, young} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		writeFile(t, p, bytes.Repeat([]byte("x"), 1<<20), 0o644)
	}
	past := time.Now().Add(-25 * time.Hour)
	os.Chtimes(old, past, past)
	p := newPublisher(t, s, fixedSigner(t))
	if p.TempAge != publish.DefaultTempAge {
		t.Errorf("TempAge = %v, want %v", p.TempAge, publish.DefaultTempAge)
	}
	if _, err := p.Publish(context.Background(), "26.1.2", scan(t, demoInputs(t, "one"))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("the old temporary file is still there")
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the young temporary file was removed: %v", err)
	}
}

// changingStore rewrites the image archives of an input directory (a
// flipped byte at offset at(archive), the size kept) when the claim is
// written: between the read of each archive into the registry tree and
// its upload.
type changingStore struct {
	*dir.Store
	tb     testing.TB
	inputs []publish.Input
	at     func([]byte) int
	// keepTimes sets the file's modification time back after the change.
	keepTimes bool
}

func (c changingStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	if strings.HasPrefix(key, ".claims/") {
		for _, in := range c.inputs {
			if in.Form != publish.FormImage {
				continue
			}
			b, err := os.ReadFile(in.Path)
			if err != nil {
				c.tb.Fatal(err)
			}
			st, err := os.Stat(in.Path)
			if err != nil {
				c.tb.Fatal(err)
			}
			b[c.at(b)] ^= 1
			if err := os.WriteFile(in.Path, b, 0o644); err != nil {
				c.tb.Fatal(err)
			}
			if c.keepTimes {
				if err := os.Chtimes(in.Path, st.ModTime(), st.ModTime()); err != nil {
					c.tb.Fatal(err)
				}
			}
		}
	}
	return c.Store.Put(ctx, key, r, size, opts)
}

// TestPublishInputChanged: an image archive rewritten after it was read
// (its digests taken once, for the claim, the manifests and the tar's
// digest) and before its upload stops the publish, and nothing refers to
// what was written: a changed layer is refused by its blob's digest or by
// the archive's, a byte changed after the end of the tar (no blob holds
// it) by the archive's. The directory store copies the archive and its
// blobs without reading them (publish.FileSection): there the file's
// change time and inode tell, even with its modification time set back.
func TestPublishInputChanged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		at        func([]byte) int
		keepTimes bool
		want      []error
	}{
		{"Layer", func(b []byte) int { return bytes.Index(b, []byte("etc/demo")) + 600 }, false, []error{publish.ErrInputChanged, publish.ErrChecksumMismatch}},
		{"AfterTheTar", func(b []byte) int { return len(b) - 1 }, false, []error{publish.ErrInputChanged}},
		{"LayerTimesKept", func(b []byte) int { return bytes.Index(b, []byte("etc/demo")) + 600 }, true, []error{publish.ErrInputChanged, publish.ErrChecksumMismatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := dirStore(t, t.TempDir())
			inputs := scan(t, demoInputs(t, "one"))
			_, err := newPublisher(t, changingStore{base, t, inputs, tc.at, tc.keepTimes}, fixedSigner(t)).Publish(context.Background(), "26.1.1", inputs)
			if !slices.ContainsFunc(tc.want, func(e error) bool { return errors.Is(err, e) }) {
				t.Fatalf("Publish of archives rewritten after their read = %v, want one of %v", err, tc.want)
			}
			for _, key := range []string{publish.KeyManifest, publish.KeyLatest} {
				if _, err := base.Stat(context.Background(), key); !errors.Is(err, publish.ErrNotFound) {
					t.Errorf("%s written after an input changed", key)
				}
			}
		})
	}
}
