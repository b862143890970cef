package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

// spliceSize is above the 4 MiB from which CopyN splices, and not a round
// number of anything.
const spliceSize = 6<<20 + 12345

// randomBytes is n bytes of crypto/rand, which no compressor or
// deduplicator along the way can shortcut.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func putObject(t *testing.T, s *s3.Store, key string, data []byte) {
	t.Helper()
	if _, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)), publish.PutOptions{}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// copyResult is what CopyN returned in copyServer's handler, and whether
// the writer's ReadFrom was handed what net splices: an *io.LimitedReader
// of a *net.TCPConn.
type copyResult struct {
	written    int64
	err        error
	spliceable bool
}

// spyWriter is an http.ResponseWriter that notes what its ReadFrom is
// handed, and forwards it to net/http's.
type spyWriter struct {
	http.ResponseWriter
	spliceable bool
}

func (s *spyWriter) ReadFrom(src io.Reader) (int64, error) {
	if lr, ok := src.(*io.LimitedReader); ok {
		_, s.spliceable = lr.R.(*net.TCPConn)
	}
	return s.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
}

// copyServer is a real HTTP server on loopback whose GET ?off=&n= opens
// key, seeks to off and answers with CopyN(response, n), so that net/http
// hands CopyN's reader to a TCP connection as it does for wharf serve.
// Each request sends the cancel function of the object's context to
// cancels, then what CopyN returned to results.
func copyServer(t *testing.T, s *s3.Store, key string) (srvURL string, cancels <-chan context.CancelFunc, results <-chan copyResult) {
	t.Helper()
	cc := make(chan context.CancelFunc, 1)
	rc := make(chan copyResult, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		off, _ := strconv.ParseInt(r.FormValue("off"), 10, 64)
		n, _ := strconv.ParseInt(r.FormValue("n"), 10, 64)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		cc <- cancel
		obj, err := s.Open(ctx, key)
		if err != nil {
			rc <- copyResult{err: err}
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer obj.Close()
		if _, err := obj.Seek(off, io.SeekStart); err != nil {
			rc <- copyResult{err: err}
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(min(n, obj.Info().Size-off), 10))
		spy := &spyWriter{ResponseWriter: w}
		written, err := obj.(publish.Copier).CopyN(spy, n)
		rc <- copyResult{written, err, spy.spliceable}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, cc, rc
}

// TestCopyN: an object of a plain-HTTP store copies itself socket to
// socket into a TCP response, whole or from where a Range request seeks.
func TestCopyN(t *testing.T) {
	s := s3test.Store(t, testenv.SharedMinIO(t), "", s3.Options{})
	data := randomBytes(spliceSize)
	putObject(t, s, "img/big.tar", data)
	srvURL, cancels, results := copyServer(t, s, "img/big.tar")
	tests := []struct {
		name    string
		off, n  int64
		wantErr error // io.EOF: fewer than n bytes left
	}{
		{"whole", 0, spliceSize, nil},
		{"from the middle", 1<<20 + 7, spliceSize - (1<<20 + 7), nil},
		{"less than the rest", 100, 5 << 20, nil},
		{"more than the rest", 0, spliceSize + 10, io.EOF},
		{"more than the rest from the middle", 1 << 20, spliceSize, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Get(srvURL + "?off=" + strconv.FormatInt(tt.off, 10) + "&n=" + strconv.FormatInt(tt.n, 10))
			if err != nil {
				t.Fatal(err)
			}
			<-cancels
			h := sha256.New()
			_, err = io.Copy(h, resp.Body)
			resp.Body.Close()
			res := <-results
			if err != nil {
				t.Fatalf("reading the response: %v (CopyN: %d, %v)", err, res.written, res.err)
			}
			want := data[tt.off:min(tt.off+tt.n, spliceSize)]
			if res.written != int64(len(want)) || res.err != tt.wantErr {
				t.Errorf("CopyN = %d, %v, want %d, %v", res.written, res.err, len(want), tt.wantErr)
			}
			if got, want := h.Sum(nil), sha256.Sum256(want); !bytes.Equal(got, want[:]) {
				t.Errorf("response SHA-256 %x, want %x", got, want)
			}
			if !res.spliceable {
				t.Error("the response's ReadFrom was not handed a TCP connection to splice")
			}
		})
	}
}

// TestCopyNUnsupported: where CopyN has no faster way it says so and
// writes nothing, and Read then returns the object from the same place.
func TestCopyNUnsupported(t *testing.T) {
	m := testenv.SharedMinIO(t)
	rawurl, opts := s3test.Bucket(t, m)
	plain, err := s3.Open(t.Context(), rawurl, opts)
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(spliceSize)
	putObject(t, plain, "img/big.tar", data)
	tlsStore := httpsStore(t, m, rawurl)

	tests := []struct {
		name  string
		store *s3.Store
		off   int64
		n     int64
		w     func(*bytes.Buffer) io.Writer
	}{
		{"less than 4 MiB asked", plain, 0, 4<<20 - 1, func(b *bytes.Buffer) io.Writer { return b }},
		{"less than 4 MiB left", plain, spliceSize - 1<<20, 4 << 20, func(b *bytes.Buffer) io.Writer { return b }},
		{"writer without ReadFrom", plain, 0, spliceSize, func(b *bytes.Buffer) io.Writer { return struct{ io.Writer }{b} }},
		{"https endpoint", tlsStore, 0, spliceSize, func(b *bytes.Buffer) io.Writer { return b }},
		{"https endpoint from the middle", tlsStore, 1 << 20, 5 << 20, func(b *bytes.Buffer) io.Writer { return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.store.Open(t.Context(), "img/big.tar")
			if err != nil {
				t.Fatal(err)
			}
			defer obj.Close()
			if _, err := obj.Seek(tt.off, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			n, err := obj.(publish.Copier).CopyN(tt.w(&buf), tt.n)
			if n != 0 || !errors.Is(err, errors.ErrUnsupported) || buf.Len() != 0 {
				t.Fatalf("CopyN = %d, %v with %d bytes written, want 0, errors.ErrUnsupported with none", n, err, buf.Len())
			}
			rest, err := io.ReadAll(obj)
			if err != nil || !bytes.Equal(rest, data[tt.off:]) {
				t.Errorf("Read after CopyN: %d bytes, %v; want the %d from %d", len(rest), err, len(data)-int(tt.off), tt.off)
			}
		})
	}
}

// httpsStore opens the bucket of rawurl on m through a TLS proxy whose
// certificate it trusts.
func httpsStore(t *testing.T, m *testenv.MinIO, rawurl string) *s3.Store {
	t.Helper()
	target, _ := url.Parse(m.URL())
	tlsSrv := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(tlsSrv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	env := s3test.Env(m)
	env["AWS_CA_BUNDLE"] = caFile
	s, err := s3.Open(t.Context(), rawurl, s3.Options{Endpoint: tlsSrv.URL, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCopyNReplaced: an object replaced after Open fails CopyN with
// ErrPreconditionFailed before a byte is written, not with bytes of two
// versions.
func TestCopyNReplaced(t *testing.T) {
	s := s3test.Store(t, testenv.SharedMinIO(t), "", s3.Options{})
	for _, off := range []int64{0, 1 << 20} {
		t.Run("from "+strconv.FormatInt(off, 10), func(t *testing.T) {
			key := "img/replaced-" + strconv.FormatInt(off, 10) + ".tar"
			putObject(t, s, key, randomBytes(spliceSize))
			obj, err := s.Open(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			defer obj.Close()
			if _, err := obj.Seek(off, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			putObject(t, s, key, randomBytes(spliceSize))
			var buf bytes.Buffer
			n, err := obj.(publish.Copier).CopyN(&buf, spliceSize-off)
			if n != 0 || buf.Len() != 0 || !errors.Is(err, publish.ErrPreconditionFailed) {
				t.Errorf("CopyN of a replaced object = %d, %v with %d bytes written, want 0, ErrPreconditionFailed with none", n, err, buf.Len())
			}
		})
	}
}

// TestCopyNInterrupted: a copy whose store dies, or whose context ends,
// part-way fails with an error that says so, and the response it was
// writing ends short, never as a complete download.
func TestCopyNInterrupted(t *testing.T) {
	m := testenv.NewMinIO(t) // of its own: the test kills it
	s := s3test.Store(t, m, "", s3.Options{MaxRetries: 1})
	// Larger than every socket buffer and the splice pipe on the way
	// together (net.ipv4.tcp_rmem and tcp_wmem allow 32 + 4 MiB a socket
	// here), so MinIO is still sending when it is stopped: the client
	// reads nothing before that.
	const size = 80 << 20
	putObject(t, s, "img/huge.tar", randomBytes(size))
	srvURL, cancels, results := copyServer(t, s, "img/huge.tar")
	tests := []struct {
		name      string
		interrupt func(cancel context.CancelFunc)
		want      error
	}{
		{"context canceled", func(cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"MinIO killed", func(context.CancelFunc) { m.Kill() }, publish.ErrUnavailable}, // last: MinIO stays down
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Get(srvURL + "?off=0&n=" + strconv.Itoa(size))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// The headers are out: CopyN has its answer from MinIO and is
			// splicing it.
			tt.interrupt(<-cancels)
			got, err := io.Copy(io.Discard, resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) || got >= size {
				t.Errorf("the client read %d of %d bytes, %v; want fewer and io.ErrUnexpectedEOF", got, size, err)
			}
			res := <-results
			if !errors.Is(res.err, tt.want) || res.written >= size {
				t.Errorf("CopyN = %d, %v; want fewer than %d and %v", res.written, res.err, size, tt.want)
			}
			t.Logf("CopyN: %d bytes, %v", res.written, res.err)
		})
	}
}
