package s3_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

// TestPublishCacheControl: every object a publish writes to S3 carries the
// Cache-Control of its kind as object metadata, which the bucket (or a CDN
// in front of it) sends with every GET: versioned public objects cached a
// year and immutable, basic and full artifacts private, the top of the tree
// revalidated. The image is over the part size, so the multipart upload
// carries it too.
func TestPublishCacheControl(t *testing.T) {
	m := testenv.SharedMinIO(t)
	s := s3test.Store(t, m, "dl", s3test.Options(m))
	signer, _ := newSigner(t)
	if _, err := newPublisher(t, s, signer).Publish(t.Context(), "26.1.1", releaseInput(t, "26.1.1", 17<<20)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, want string
	}{
		{"bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz", publish.CacheImmutable},
		{"bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz.sig", publish.CacheImmutable},
		{"bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz.sig", publish.CacheImmutable},
		{"bin/26.1.1/SHA256SUMS", publish.CacheImmutable},
		{"img/26.1.1/SHA256SUMS.sig", publish.CacheImmutable},
		{"bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz", publish.CachePrivate},
		{"img/26.1.1/treasury-node-26.1.1-amd64.tar", publish.CachePrivate},
		{publish.KeyLatest, publish.CacheRevalidate},
		{publish.KeyManifest, publish.CacheRevalidate},
		{publish.KeyRedirects, publish.CacheRevalidate},
		{publish.KeyIndex, publish.CacheRevalidate},
		{publish.KeyInstall, publish.CacheRevalidate},
		{publish.KeyPublicKey, publish.CacheRevalidate},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			u, err := s.PresignGet(t.Context(), tt.key, "", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			// A presigned URL is for GET; one byte of it is enough.
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
			req.Header.Set("Range", "bytes=0-0")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusPartialContent {
				t.Fatalf("GET %s: %s", tt.key, resp.Status)
			}
			if got := resp.Header.Get("Cache-Control"); got != tt.want {
				t.Errorf("Cache-Control = %q, want %q", got, tt.want)
			}
		})
	}
}
