package s3_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
	"github.com/wharfhq/wharf/publish/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestConformance(t *testing.T) {
	for _, prefix := range []string{"", "some/prefix"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) publish.Store {
				return s3test.Store(t, testenv.SharedMinIO(t), prefix, s3.Options{PartSize: s3.MinPartSize})
			})
		})
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		in, bucket, prefix string
		err                bool
	}{
		{"s3://releases", "releases", "", false},
		{"s3://releases/", "releases", "", false},
		{"s3://releases/dl/wharf", "releases", "dl/wharf/", false},
		{"s3://releases/dl/wharf/", "releases", "dl/wharf/", false},
		{"s3://my.releases-1", "my.releases-1", "", false},
		{"releases", "", "", true},
		{"s3://", "", "", true},
		{"s3://Releases", "", "", true},
		{"s3://ab", "", "", true},
		{"s3://-releases", "", "", true},
		{"s3://releases/../x", "", "", true},
		{"s3://releases/a//b", "", "", true},
		{"s3://key:secret@releases", "", "", true},
		{"s3://releases?region=x", "", "", true},
		{"http://releases", "", "", true},
		{"s3://releases/a\\b", "", "", true},
	}
	for _, tt := range tests {
		bucket, prefix, err := s3.ParseURL(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseURL(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if bucket != tt.bucket || prefix != tt.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, want %q, %q", tt.in, bucket, prefix, tt.bucket, tt.prefix)
		}
	}
}

// TestSHA256 shows where ObjectInfo.SHA256 comes from: a single PUT keeps
// the server's whole-object checksum (Stat returns it); a multipart upload
// returns the whole-object SHA-256 from Put, verified through the server's
// composite checksum, and Stat has it only when the caller gave it.
func TestSHA256(t *testing.T) {
	s := s3test.Store(t, testenv.SharedMinIO(t), "", s3.Options{PartSize: s3.MinPartSize})
	ctx := t.Context()
	small := bytes.Repeat([]byte("s"), 1000)
	large := bytes.Repeat([]byte("large object "), storetest.LargeSize/13)
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	raw := func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
	tests := []struct {
		name     string
		data     []byte
		given    bool
		wantStat string
	}{
		{"single", small, false, sum(small)},
		{"single given", small, true, sum(small)},
		{"multipart", large, false, ""},
		{"multipart given", large, true, sum(large)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts publish.PutOptions
			if tt.given {
				opts.SHA256 = raw(tt.data)
			}
			info, err := s.Put(ctx, "obj/"+tt.name, bytes.NewReader(tt.data), int64(len(tt.data)), opts)
			if err != nil {
				t.Fatal(err)
			}
			if info.SHA256 != sum(tt.data) {
				t.Errorf("Put SHA256 = %q, want %s", info.SHA256, sum(tt.data))
			}
			st, err := s.Stat(ctx, "obj/"+tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if st.SHA256 != tt.wantStat {
				t.Errorf("Stat SHA256 = %q, want %q", st.SHA256, tt.wantStat)
			}
			if multipart := strings.Contains(st.ETag, "-"); multipart != (len(tt.data) > s3.MinPartSize) {
				t.Errorf("ETag %s: multipart %v for %d bytes", st.ETag, multipart, len(tt.data))
			}
		})
	}
	t.Run("server refuses a wrong checksum", func(t *testing.T) {
		wrong := raw([]byte("something else"))
		_, err := s.Put(ctx, "obj/wrong", bytes.NewReader(small), int64(len(small)), publish.PutOptions{SHA256: wrong})
		if !errors.Is(err, publish.ErrChecksumMismatch) || !strings.Contains(err.Error(), "nothing was written") {
			t.Errorf("Put with a wrong SHA256 = %v, want the server's refusal as ErrChecksumMismatch", err)
		}
	})
}

func TestPresignGet(t *testing.T) {
	s := s3test.Store(t, testenv.SharedMinIO(t), "dl", s3.Options{})
	data := []byte("archive bytes")
	if _, err := s.Put(t.Context(), "bin/26.1.1/cord-26.1.1-linux-amd64.tar.gz", bytes.NewReader(data), int64(len(data)), publish.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := s.PresignGet(t.Context(), "bin/26.1.1/cord-26.1.1-linux-amd64.tar.gz", "cord-26.1.1-linux-amd64.tar.gz", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET presigned = %s %q, want 200 %q", resp.Status, body, data)
	}
	if got, want := resp.Header.Get("Content-Disposition"), `attachment; filename="cord-26.1.1-linux-amd64.tar.gz"`; got != want {
		t.Errorf("Content-Disposition = %q, want %q", got, want)
	}
	if _, err := s.PresignGet(t.Context(), "../x", "x", time.Minute); !errors.Is(err, publish.ErrInvalidKey) {
		t.Errorf("PresignGet(../x) = %v, want ErrInvalidKey", err)
	}
}

// TestOpenErrors: what a user reads for the usual set-up mistakes.
func TestOpenErrors(t *testing.T) {
	m := testenv.SharedMinIO(t)
	rawurl, good := s3test.Bucket(t, m)
	env := func(kv ...string) func(string) string {
		e := s3test.Env(m)
		for i := 0; i < len(kv); i += 2 {
			e[kv[i]] = kv[i+1]
		}
		return func(k string) string { return e[k] }
	}
	tests := []struct {
		name     string
		url      string
		opts     s3.Options
		sentinel error
		msg      string
	}{
		{"no such bucket", "s3://wharf-no-such-bucket", good, nil, `bucket "wharf-no-such-bucket" does not exist`},
		{"unknown access key", rawurl, s3.Options{Endpoint: m.URL(), Getenv: env("AWS_ACCESS_KEY_ID", "nobody")}, nil, "AWS_ACCESS_KEY_ID is not known"},
		{"wrong secret", rawurl, s3.Options{Endpoint: m.URL(), Getenv: env("AWS_SECRET_ACCESS_KEY", "wrong-secret")}, nil, "AWS_SECRET_ACCESS_KEY"},
		{"no credentials", rawurl, s3.Options{Endpoint: m.URL(), Getenv: func(string) string { return "" }}, nil, "no credentials found"},
		{"nothing listening", rawurl, s3.Options{Endpoint: "http://" + testenv.FreeAddr(t), Getenv: good.Getenv, MaxRetries: 1}, publish.ErrUnavailable, "cannot reach"},
		{"part size too small", rawurl, s3.Options{Endpoint: m.URL(), PartSize: 1 << 20, Getenv: good.Getenv}, nil, "part size"},
		{"bad store url", "s3://Bad_Bucket", good, nil, "not a valid S3 bucket name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "no credentials" {
				// Nothing for the fallback providers either.
				for _, k := range []string{"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY",
					"AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
					t.Setenv(k, "")
				}
				t.Setenv("HOME", t.TempDir())
				t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
			}
			_, err := s3.Open(t.Context(), tt.url, tt.opts)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("Open = %v, want errors.Is %v", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Open = %q, want it to say %q", err, tt.msg)
			}
		})
	}
}

// TestCABundle: AWS_CA_BUNDLE (set on this machine to the system bundle)
// neither breaks plain HTTP nor HTTPS, and makes a private CA trusted.
func TestCABundle(t *testing.T) {
	m := testenv.SharedMinIO(t)
	rawurl, _ := s3test.Bucket(t, m)
	target, _ := url.Parse(m.URL())
	tlsSrv := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(tlsSrv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	// Credentials from the test; everything else from the real environment.
	env := func(bundle string) func(string) string {
		e := s3test.Env(m)
		return func(k string) string {
			if k == "AWS_CA_BUNDLE" && bundle != "-" {
				return bundle
			}
			if v, ok := e[k]; ok {
				return v
			}
			return os.Getenv(k)
		}
	}
	tests := []struct {
		name, endpoint, bundle string
		msg                    string // "" for success
	}{
		{"http, environment's bundle", m.URL(), "-", ""},
		{"http, system bundle", m.URL(), "/etc/ssl/certs/ca-certificates.crt", ""},
		{"http, missing bundle ignored", m.URL(), "/nonexistent/ca.pem", ""},
		{"https, private CA in bundle", tlsSrv.URL, caFile, ""},
		{"https, no bundle", tlsSrv.URL, "", "not trusted"},
		{"https, system bundle", tlsSrv.URL, "/etc/ssl/certs/ca-certificates.crt", "not trusted"},
		{"https, missing bundle", tlsSrv.URL, "/nonexistent/ca.pem", "AWS_CA_BUNDLE"},
		{"https, not PEM", tlsSrv.URL, "/etc/hostname", "AWS_CA_BUNDLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := s3.Open(t.Context(), rawurl, s3.Options{Endpoint: tt.endpoint, Getenv: env(tt.bundle), MaxRetries: 1})
			if tt.msg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("Open = %v, want an error saying %q", err, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			data := bytes.Repeat([]byte("x"), s3.MinPartSize+1) // multipart too
			if _, err := s.Put(t.Context(), "k", bytes.NewReader(data), int64(len(data)), publish.PutOptions{}); err != nil {
				t.Fatalf("Put: %v", err)
			}
			if _, err := s.Stat(t.Context(), "k"); err != nil {
				t.Fatalf("Stat: %v", err)
			}
		})
	}
}

// killingReader kills the server after n bytes have been read, as a crash
// in the middle of an upload.
type killingReader struct {
	r    io.Reader
	n    int64
	kill func()
	once sync.Once
}

func (k *killingReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	k.n -= int64(n)
	if k.n <= 0 {
		k.once.Do(k.kill)
	}
	return n, err
}

// TestKilledMidPut: the server dies during a multipart upload: Put fails
// with ErrUnavailable, nothing of the new object is visible after a
// restart, the old object is intact, and the same Put then succeeds.
func TestKilledMidPut(t *testing.T) {
	m := testenv.NewMinIO(t)
	rawurl, opts := s3test.Bucket(t, m)
	opts.PartSize = s3.MinPartSize
	s, err := s3.Open(t.Context(), rawurl, opts) // default retries: rides out a restart
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = 1 // fail at once when the server is gone
	crashing, err := s3.Open(t.Context(), rawurl, opts)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte("26.1.1\n")
	if _, err := s.Put(t.Context(), "latest", bytes.NewReader(old), int64(len(old)), publish.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("image layer "), 4*s3.MinPartSize/12)
	for _, key := range []string{"img/big.tar", "latest"} {
		// The server answers again (a restart may take a moment to be ready).
		if _, err := s.Stat(t.Context(), "latest"); err != nil {
			t.Fatal(err)
		}
		r := &killingReader{r: bytes.NewReader(data), n: 2 * s3.MinPartSize, kill: m.Kill}
		_, err := crashing.Put(t.Context(), key, r, int64(len(data)), publish.PutOptions{})
		if !errors.Is(err, publish.ErrUnavailable) {
			t.Fatalf("Put %s with the server killed = %v, want ErrUnavailable", key, err)
		}
		t.Logf("Put %s: %v", key, err)
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Stat(t.Context(), "img/big.tar"); !errors.Is(err, publish.ErrNotFound) {
		t.Errorf("Stat of the interrupted object = %v, want ErrNotFound", err)
	}
	obj, err := s.Open(t.Context(), "latest")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, old) {
		t.Errorf("latest = %q, %v after an interrupted overwrite, want %q", got, err, old)
	}
	info, err := s.Put(t.Context(), "img/big.tar", bytes.NewReader(data), int64(len(data)), publish.PutOptions{})
	if err != nil {
		t.Fatalf("Put after restart: %v", err)
	}
	if want := sha256.Sum256(data); info.SHA256 != hex.EncodeToString(want[:]) {
		t.Errorf("Put after restart: SHA256 %s, want %x", info.SHA256, want)
	}
}

// TestChecksumNotConfirmed: against an S3 API that accepts writes but
// keeps no checksums (it echoes none), Put reports no SHA-256, so the
// publisher falls back to reading the object back.
func TestChecksumNotConfirmed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		q := r.URL.Query()
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		switch {
		case r.Method == http.MethodHead || r.Method == http.MethodGet && q.Has("location"):
			if q.Has("location") {
				io.WriteString(w, `<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></LocationConstraint>`)
			}
		case r.Method == http.MethodPost && q.Has("uploads"):
			io.WriteString(w, `<InitiateMultipartUploadResult><Bucket>plain</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
		case r.Method == http.MethodPost && q.Has("uploadId"):
			io.WriteString(w, `<CompleteMultipartUploadResult><Bucket>plain</Bucket><Key>k</Key><ETag>"abc-2"</ETag></CompleteMultipartUploadResult>`)
		case r.Method == http.MethodPut:
		default:
			http.Error(w, "unexpected", http.StatusNotImplemented)
		}
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}
	s, err := s3.Open(t.Context(), "s3://plain", s3.Options{Endpoint: srv.URL, PartSize: s3.MinPartSize, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{100, s3.MinPartSize + 100} {
		data := bytes.Repeat([]byte("x"), n)
		info, err := s.Put(t.Context(), "k", bytes.NewReader(data), int64(n), publish.PutOptions{})
		if err != nil {
			t.Fatalf("Put %d bytes: %v", n, err)
		}
		if info.SHA256 != "" {
			t.Errorf("Put %d bytes: SHA256 %q though the server confirmed no checksum", n, info.SHA256)
		}
	}
}

// cancelingReader cancels its context after n bytes.
type cancelingReader struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancelingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= int64(n); c.n <= 0 {
		c.cancel()
	}
	return n, err
}

// TestPutCanceled: a multipart Put whose context ends half-way fails with
// the context's error, leaves nothing visible, and aborts its upload so no
// parts are left behind.
func TestPutCanceled(t *testing.T) {
	m := testenv.SharedMinIO(t)
	rawurl, opts := s3test.Bucket(t, m)
	opts.PartSize = s3.MinPartSize
	s, err := s3.Open(t.Context(), rawurl, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	data := bytes.Repeat([]byte("layer "), 4*s3.MinPartSize/6)
	r := &cancelingReader{r: bytes.NewReader(data), n: 2*s3.MinPartSize + 10, cancel: cancel}
	if _, err := s.Put(ctx, "img/big.tar", r, int64(len(data)), publish.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with its context canceled = %v, want context.Canceled", err)
	}
	if _, err := s.Stat(t.Context(), "img/big.tar"); !errors.Is(err, publish.ErrNotFound) {
		t.Errorf("Stat after a canceled Put = %v, want ErrNotFound", err)
	}
	c, err := minio.NewCore(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	bucket, _, _ := s3.ParseURL(rawurl)
	pending := func(key string) int {
		t.Helper()
		uploads, err := c.ListMultipartUploads(t.Context(), bucket, key, "", "", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(uploads.Uploads)
	}
	// The listing sees an upload that is left open.
	id, err := c.NewMultipartUpload(t.Context(), bucket, "img/control.tar", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.AbortMultipartUpload(context.Background(), bucket, "img/control.tar", id)
	if n := pending("img/control.tar"); n != 1 {
		t.Fatalf("control: %d uploads listed, want 1", n)
	}
	if n := pending("img/big.tar"); n != 0 {
		t.Errorf("%d multipart uploads left after a canceled Put, want 0 (aborted)", n)
	}
}

// TestCleanTemp: incomplete multipart uploads (a publish killed in the
// middle of an image) older than the age are aborted, with their parts;
// younger ones, which may be a publish still running, are kept.
func TestCleanTemp(t *testing.T) {
	m := testenv.SharedMinIO(t)
	rawurl, opts := s3test.Bucket(t, m)
	s, err := s3.Open(t.Context(), rawurl, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.NewCore(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	bucket, _, _ := s3.ParseURL(rawurl)
	part := bytes.Repeat([]byte("x"), 1<<20)
	const key = "img/26.1.1/treasury-node-26.1.1-amd64.tar"
	id, err := c.NewMultipartUpload(t.Context(), bucket, key, minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObjectPart(t.Context(), bucket, key, id, 1, bytes.NewReader(part), int64(len(part)), minio.PutObjectPartOptions{}); err != nil {
		t.Fatal(err)
	}
	pending := func() int {
		t.Helper()
		uploads, err := c.ListMultipartUploads(t.Context(), bucket, key, "", "", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(uploads.Uploads)
	}
	if n, _, err := s.CleanTemp(t.Context(), time.Hour, []string{key}); err != nil || n != 0 || pending() != 1 {
		t.Fatalf("CleanTemp(1h) = %d, %v; %d pending; want the young upload kept", n, err, pending())
	}
	n, _, err := s.CleanTemp(t.Context(), -time.Minute, []string{key}) // everything is older than a minute from now
	if err != nil || n != 1 {
		t.Fatalf("CleanTemp = %d, %v; want 1", n, err)
	}
	if got := pending(); got != 0 {
		t.Errorf("%d incomplete uploads left, want 0", got)
	}
}
