package publish_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
	"github.com/wharfhq/wharf/publish/storetest"
)

// TestPublishMinIO publishes to a real MinIO: two versions at once, each
// checked against MinIO's own SHA-256 checksums, then the whole tree.
func TestPublishMinIO(t *testing.T) {
	m := testenv.SharedMinIO(t)
	s3store := s3test.Store(t, m, "dl", s3.Options{})
	s := &readBackCounter{Store: s3store}
	signer := fixedSigner(t)
	publishAtOnce(t, func() publish.Store { return s }, signer, "26.1.1", "26.1.2")
	if got := string(readKey(t, s, publish.KeyLatest)); got != "26.1.2\n" {
		t.Errorf("latest = %q", got)
	}
	if got := len(manifest(t, s).Releases); got != 2 {
		t.Errorf("manifest has %d releases, want 2", got)
	}
	// The integrity check used MinIO's checksums: no artifact was read back.
	if n := s.artifactReads.Load(); n != 0 {
		t.Errorf("the publish read %d artifacts back from the store", n)
	}
	checkTree(t, s)
	pubPEM := readKey(t, s, publish.KeyPublicKey)
	key := "bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz"
	opensslVerify(t, pubPEM, readKey(t, s, key), readKey(t, s, key+".sig"))
}

// TestPublishRaceDifferentBytesMinIO: on S3 the claim is a conditional
// write (If-None-Match), so the first publisher wins there too.
func TestPublishRaceDifferentBytesMinIO(t *testing.T) {
	m := testenv.SharedMinIO(t)
	raceDifferentBytes(t, s3test.Store(t, m, "race", s3.Options{}))
}

// readBackCounter counts the artifacts opened for reading.
type readBackCounter struct {
	publish.Store
	artifactReads atomic.Int64
}

func (c *readBackCounter) Open(ctx context.Context, key string) (publish.Object, error) {
	if strings.HasSuffix(key, ".tar.gz") || strings.HasSuffix(key, ".tar") {
		c.artifactReads.Add(1)
	}
	return c.Store.Open(ctx, key)
}

// killingStore kills the MinIO server once the upload of an artifact has
// read some bytes, as a crash in the middle of a publish would.
type killingStore struct {
	publish.Store
	once sync.Once
	kill func()
}

func (k *killingStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	if strings.HasPrefix(key, "img/") && !strings.HasSuffix(key, ".sig") {
		r = io.MultiReader(io.LimitReader(r, 1000), &killReader{r: r, k: k})
	}
	return k.Store.Put(ctx, key, r, size, opts)
}

type killReader struct {
	r io.Reader
	k *killingStore
}

func (kr *killReader) Read(p []byte) (int, error) {
	kr.k.once.Do(kr.k.kill)
	return kr.r.Read(p)
}

// TestPublishMinIOKilled kills MinIO in the middle of a publish: after a
// restart the previous release is fully served, and a re-run completes.
func TestPublishMinIOKilled(t *testing.T) {
	m := testenv.NewMinIO(t)
	s := s3test.Store(t, m, "", s3.Options{})
	signer := fixedSigner(t)
	mustPublish(t, newPublisher(t, s, signer), "26.1.1", "one")

	in2 := scan(t, demoInputs(t, "two"))
	p := newPublisher(t, &killingStore{Store: s, kill: m.Kill}, signer)
	p.Parallel = 1
	_, err := p.Publish(context.Background(), "26.1.2", in2)
	if err == nil {
		t.Fatal("publish succeeded with MinIO killed")
	}
	if !errors.Is(err, publish.ErrUnavailable) {
		t.Errorf("publish = %v, want ErrUnavailable", err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	checkTree(t, s)
	if got := string(readKey(t, s, publish.KeyLatest)); got != "26.1.1\n" {
		t.Errorf("latest = %q after the crash, want 26.1.1", got)
	}
	res, err := newPublisher(t, s, signer).Publish(context.Background(), "26.1.2", in2)
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	if res.Latest != "26.1.2" {
		t.Errorf("latest after the re-run = %s", res.Latest)
	}
	checkTree(t, s)
}

// TestPublishStoreFailsMinIO crashes a publish to MinIO at every write in
// turn, as TestPublishStoreFails does on a directory: S3 replaces one
// object at a time too, and its conditional writes are If-Match headers.
func TestPublishStoreFailsMinIO(t *testing.T) {
	m := testenv.SharedMinIO(t)
	prepared := s3test.Store(t, m, "dl", s3.Options{})
	crashEveryWrite(t, prepared, func(t *testing.T) publish.Store {
		s := s3test.Store(t, m, "dl", s3.Options{})
		if err := storetest.Copy(t.Context(), s, prepared); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
