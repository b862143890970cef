package s3

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// TestBuffersBounded runs more concurrent large Puts than the store has
// buffers: memory stays at (Concurrency+1) parts and all Puts complete.
func TestBuffersBounded(t *testing.T) {
	m := testenv.SharedMinIO(t)
	var b [6]byte
	rand.Read(b[:])
	rawurl := "s3://wharf-test-" + hex.EncodeToString(b[:])
	env := map[string]string{"AWS_ACCESS_KEY_ID": m.AccessKey, "AWS_SECRET_ACCESS_KEY": m.SecretKey}
	opts := Options{Endpoint: m.URL(), PartSize: MinPartSize, Concurrency: 2, Getenv: func(k string) string { return env[k] }}
	if err := MakeBucket(t.Context(), rawurl, opts); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), rawurl, opts)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 11<<20/16+1) // 11 MiB + 16: three parts
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			key := "big/" + string(rune('a'+i))
			if _, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)), publish.PutOptions{}); err != nil {
				t.Errorf("Put %s: %v", key, err)
			}
		})
	}
	wg.Wait()
	if got, limit := s.bufs.allocated.Load(), int64(opts.Concurrency+1); got > limit {
		t.Errorf("%d part buffers allocated, want at most Concurrency+1 = %d", got, limit)
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in             string
		host           string
		secure, custom bool
		err            bool
	}{
		{"", "s3.amazonaws.com", true, false, false},
		{"127.0.0.1:9000", "127.0.0.1:9000", true, true, false},
		{"http://127.0.0.1:9000", "127.0.0.1:9000", false, true, false},
		{"http://127.0.0.1:9000/", "127.0.0.1:9000", false, true, false},
		{"https://minio.example.com", "minio.example.com", true, true, false},
		{"https://s3.eu-west-1.amazonaws.com", "s3.eu-west-1.amazonaws.com", true, false, false},
		{"ftp://127.0.0.1:9000", "", false, false, true},
		{"http://127.0.0.1:9000/bucket", "", false, false, true},
		{"http://user:pw@127.0.0.1:9000", "", false, false, true},
		{"http://", "", false, false, true},
	}
	for _, tt := range tests {
		host, secure, custom, err := parseEndpoint(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("parseEndpoint(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && (host != tt.host || secure != tt.secure || custom != tt.custom) {
			t.Errorf("parseEndpoint(%q) = %q, secure %v, custom %v; want %q, %v, %v", tt.in, host, secure, custom, tt.host, tt.secure, tt.custom)
		}
	}
}

func TestAttachment(t *testing.T) {
	tests := []struct{ name, want string }{
		{"cord-26.1.1-linux-amd64.tar.gz", `attachment; filename="cord-26.1.1-linux-amd64.tar.gz"`},
		{"with space.tar", `attachment; filename="with space.tar"`},
		{`quote".tar`, `attachment; filename="quote\".tar"`},
		{"ünïcode.tar", `attachment; filename*=utf-8''%C3%BCn%C3%AFcode.tar`},
	}
	for _, tt := range tests {
		if got := attachment(tt.name); got != tt.want {
			t.Errorf("attachment(%q) = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestPartSizeFor(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		size int64
		want int
	}{
		{-1, 16 * mib},
		{0, 16 * mib},
		{500 * mib, 16 * mib},
		{16 * mib * maxParts, 16 * mib},
		{16*mib*maxParts + 1, 17 * mib},
		{200 << 30, 21 * mib},
	}
	for _, tt := range tests {
		got := partSizeFor(tt.size, 16*mib)
		if got != tt.want {
			t.Errorf("partSizeFor(%d) = %d, want %d", tt.size, got, tt.want)
		}
		if tt.size > 0 && int64(got)*maxParts < tt.size {
			t.Errorf("partSizeFor(%d) = %d: more than %d parts", tt.size, got, maxParts)
		}
	}
}
