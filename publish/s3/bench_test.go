package s3_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

// The publish benchmark's input: six binaries for three builds, as ready
// archives, and one image for two platforms. WHARF_BENCH_IMAGE_MIB and
// WHARF_BENCH_BINARY_MIB change the sizes (500 and 4 by default).
var benchBinaries = []string{"connector", "cord", "engine", "signer", "treasury-api", "treasury-cli"}

type benchFile struct {
	name string // as in INPUT_DIR
	path string
	size int64
}

func envMiB(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && v > 0 {
		return v
	}
	return def
}

// benchInput writes the input files into dir: incompressible bytes from a
// fast seeded generator.
func benchInput(tb testing.TB, dir string) (files []benchFile, total int64) {
	tb.Helper()
	binSize := envMiB("WHARF_BENCH_BINARY_MIB", 4) << 20
	imgSize := envMiB("WHARF_BENCH_IMAGE_MIB", 500) << 20
	add := func(name string, size int64) {
		p := filepath.Join(dir, name)
		writeRandom(tb, p, size, uint64(len(files)))
		files = append(files, benchFile{name: name, path: p, size: size})
		total += size
	}
	for _, b := range []struct{ os, platform string }{{"linux", "amd64"}, {"linux", "arm64"}, {"macos", "arm64"}} {
		for _, name := range benchBinaries {
			add(fmt.Sprintf("%s-%s-%s.tar.gz", name, b.os, b.platform), binSize)
		}
	}
	add("treasury-node-amd64.tar", imgSize)
	add("treasury-node-arm64.tar", imgSize)
	return files, total
}

func writeRandom(tb testing.TB, path string, size int64, seed uint64) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := min(left, int64(len(buf)))
		rng.Read(buf[:n])
		// A gzip or tar header, so a publisher that sniffs the form accepts it.
		if left == size {
			if filepath.Ext(path) == ".gz" {
				copy(buf, []byte{0x1f, 0x8b, 0x08})
			}
		}
		w.Write(buf[:n])
		left -= n
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// referenceUpload uploads every file with minio-go PutObject and nothing
// else: the cost of moving the bytes.
func referenceUpload(tb testing.TB, m *testenv.MinIO, files []benchFile) time.Duration {
	tb.Helper()
	ctx := context.Background()
	c, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, "")})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.MakeBucket(ctx, "reference", minio.MakeBucketOptions{}); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	for _, f := range files {
		r, err := os.Open(f.path)
		if err != nil {
			tb.Fatal(err)
		}
		_, err = c.PutObject(ctx, "reference", f.name, r, f.size, minio.PutObjectOptions{})
		r.Close()
		if err != nil {
			tb.Fatalf("reference PutObject %s: %v", f.name, err)
		}
	}
	return time.Since(start)
}

// apiRequests reads MinIO's count of S3 requests by API name (the server
// runs with MINIO_PROMETHEUS_AUTH_TYPE=public).
func apiRequests(tb testing.TB, m *testenv.MinIO) map[string]float64 {
	tb.Helper()
	resp, err := http.Get(m.URL() + "/minio/metrics/v3/api/requests")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("metrics: %s: %s", resp.Status, body)
	}
	re := regexp.MustCompile(`(?m)^minio_api_requests_total\{[^}]*name="([A-Za-z]+)"[^}]*\} ([0-9.e+]+)$`)
	out := map[string]float64{}
	for _, m := range re.FindAllSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		out[string(m[1])] += v
	}
	return out
}

// countingReader counts the bytes read from the input files.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// BenchmarkStorePut uploads the benchmark input through s3.Store the way
// the publisher does (hashing while streaming, then comparing with the
// store's SHA-256) against minio-go PutObject of the same files.
//
//	go test -run '^$' -bench BenchmarkStorePut -benchtime 1x ./publish/s3/
func BenchmarkStorePut(b *testing.B) {
	b.Setenv("MINIO_PROMETHEUS_AUTH_TYPE", "public")
	m := testenv.NewMinIO(b)
	files, total := benchInput(b, b.TempDir())
	b.SetBytes(total)
	s := s3test.Store(b, m, "", s3.Options{})
	b.ResetTimer()
	for b.Loop() {
		ref := referenceUpload(b, m, files)
		before := apiRequests(b, m)
		var read int64
		start := time.Now()
		for _, f := range files {
			r, err := os.Open(f.path)
			if err != nil {
				b.Fatal(err)
			}
			h := sha256.New()
			info, err := s.Put(context.Background(), "bin/"+f.name, io.TeeReader(countingReader{r, &read}, h), f.size, publish.PutOptions{})
			r.Close()
			if err != nil {
				b.Fatal(err)
			}
			if info.SHA256 != fmt.Sprintf("%x", h.Sum(nil)) {
				b.Fatalf("%s: store SHA256 %s, read %x", f.name, info.SHA256, h.Sum(nil))
			}
		}
		took := time.Since(start)
		after := apiRequests(b, m)
		b.ReportMetric(took.Seconds()/ref.Seconds(), "put/ref")
		b.ReportMetric(float64(read)/float64(total), "read/input")
		b.ReportMetric(after["GetObject"]-before["GetObject"], "GETs")
		b.ReportMetric(after["PutObject"]+after["PutObjectPart"]-before["PutObject"]-before["PutObjectPart"], "PUTs")
		b.Logf("store put %v, reference %v (%.2fx) for %d MiB; read %d of %d bytes; GETs %v",
			took.Round(time.Millisecond), ref.Round(time.Millisecond), took.Seconds()/ref.Seconds(), total>>20, read, total, after["GetObject"]-before["GetObject"])
	}
}
