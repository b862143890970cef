package s3_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sys/unix"

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
	for _, arch := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, "treasury-node-"+arch+".tar")
		size := writeImage(tb, p, imgSize, uint64(len(files)), arch)
		files = append(files, benchFile{name: filepath.Base(p), path: p, size: size})
		total += size
	}
	return files, total
}

// writeImage writes a docker save archive for linux/arch whose one layer
// holds a file of size random bytes, as publish reads images (it refuses
// a tar that is no image), and returns the archive's size. The layer is
// written first beside it, since the config before it names its digest.
func writeImage(tb testing.TB, path string, size int64, seed uint64, arch string) int64 {
	tb.Helper()
	layerPath := path + ".layer"
	writeTar(tb, layerPath, []benchEntry{{name: "data", size: size, seed: seed}})
	defer os.Remove(layerPath)
	lf, err := os.Open(layerPath)
	if err != nil {
		tb.Fatal(err)
	}
	defer lf.Close()
	h := sha256.New()
	layerSize, err := io.Copy(h, lf)
	if err != nil {
		tb.Fatal(err)
	}
	config := fmt.Sprintf(`{"architecture":%q,"os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%x"]}}`, arch, h.Sum(nil))
	writeTar(tb, path, []benchEntry{
		{name: "manifest.json", data: []byte(`[{"Config":"config.json","RepoTags":["treasury-node:latest"],"Layers":["layer.tar"]}]`)},
		{name: "config.json", data: []byte(config)},
		{name: "layer.tar", size: layerSize, from: layerPath},
	})
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// benchEntry is a file of a tar writeTar writes: data, else size bytes
// of the file from, else size random bytes of seed.
type benchEntry struct {
	name string
	data []byte
	size int64
	from string
	seed uint64
}

func writeTar(tb testing.TB, path string, entries []benchEntry) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	for _, e := range entries {
		var r io.Reader
		switch {
		case e.data != nil:
			r, e.size = bytes.NewReader(e.data), int64(len(e.data))
		case e.from != "":
			src, err := os.Open(e.from)
			if err != nil {
				tb.Fatal(err)
			}
			defer src.Close()
			r = src
		default:
			r = rand.NewChaCha8([32]byte{byte(e.seed), byte(e.seed >> 8)})
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: e.size, Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		if _, err := io.CopyN(tw, r, e.size); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
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
		// A gzip header, so a publisher that sniffs the form accepts it.
		if left == size {
			switch filepath.Ext(path) {
			case ".gz":
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
func referenceUpload(tb testing.TB, m *testenv.MinIO, files []benchFile, bucket string) time.Duration {
	tb.Helper()
	ctx := context.Background()
	c, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, "")})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	for _, f := range files {
		r, err := os.Open(f.path)
		if err != nil {
			tb.Fatal(err)
		}
		_, err = c.PutObject(ctx, bucket, f.name, r, f.size, minio.PutObjectOptions{})
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
	sent := regexp.MustCompile(`(?m)^minio_api_requests_traffic_sent_bytes\{[^}]*\} ([0-9.e+]+)$`)
	for _, m := range sent.FindAllSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		out["sent bytes"] += v
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
		ref := referenceUpload(b, m, files, "reference")
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

// benchConfig is the release contents of the benchmark: the six binaries
// and one image, for the files of benchInput.
const benchConfig = `
[[artifact]]
name = "connector"
kind = "binary"
[[artifact]]
name = "cord"
kind = "binary"
[[artifact]]
name = "engine"
kind = "binary"
[[artifact]]
name = "signer"
kind = "binary"
[[artifact]]
name = "treasury-api"
kind = "binary"
[[artifact]]
name = "treasury-cli"
kind = "binary"
executable = "treasury"
access = "public"
[[artifact]]
name = "treasury-node"
kind = "image"
`

// wharfBinary is $WHARF_BIN (make bench passes bin/wharf), else a fresh
// build of cmd/wharf.
func wharfBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("WHARF_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			tb.Fatal(err)
		}
		return abs
	}
	p := filepath.Join(tb.TempDir(), "wharf")
	out, err := exec.Command("go", "build", "-o", p, "github.com/wharfhq/wharf/cmd/wharf").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build cmd/wharf: %v\n%s", err, out)
	}
	return p
}

// procStats is what the kernel counted for a finished process.
type procStats struct {
	wall   time.Duration
	maxRSS int64 // bytes, the peak resident set (VmHWM)
	rchar  int64 // bytes passed by read(2) and friends: files, sockets, pipes
}

// runMeasured runs cmd and reads its I/O counters from /proc while it is a
// zombie (waitid with WNOWAIT), then reaps it for its peak RSS.
func runMeasured(tb testing.TB, cmd *exec.Cmd) procStats {
	tb.Helper()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			if err != nil {
				tb.Fatalf("waitid: %v", err)
			}
			break
		}
	}
	wall := time.Since(start)
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", cmd.Process.Pid))
	if err != nil {
		tb.Fatalf("read the I/O counters of wharf publish: %v", err)
	}
	werr := cmd.Wait()
	if werr != nil {
		tb.Fatalf("wharf publish: %v", werr)
	}
	st := procStats{wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		st.maxRSS = ru.Maxrss << 10 // KiB on Linux
	}
	if m := regexp.MustCompile(`(?m)^rchar: (\d+)$`).FindSubmatch(io); m != nil {
		st.rchar, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	return st
}

// BenchmarkPublish runs the real `wharf publish` on about 1 GiB (eighteen
// archives and two image tars) into a fresh MinIO, against a reference in
// the same run that uploads the same files with minio-go PutObject and
// nothing else, in the order reference, publish, publish, reference. It
// reports:
//
//   - publish/ref: wall time of the two publishes over the two references' (target ≤ 1.15)
//   - read/input:  bytes the publishing process read (rchar) over the input
//     bytes: 1.00 when every file is read once (sockets count too; their
//     answers are small)
//   - rss_MiB:     peak RSS of the publishing process (target < 256)
//   - GETs, sent/input: GET requests the server answered during the publish
//     and bytes it sent over the input bytes: near 0 when the integrity
//     check uses the store's checksum instead of downloading again
//
// make bench runs it (scripts/bench.sh); alone:
//
//	go test -run '^$' -bench BenchmarkPublish -benchtime 1x ./publish/s3/
func BenchmarkPublish(b *testing.B) {
	b.Setenv("MINIO_PROMETHEUS_AUTH_TYPE", "public")
	wharf := wharfBinary(b)
	m := testenv.NewMinIO(b)
	work := b.TempDir()
	in := filepath.Join(work, "dist")
	if err := os.Mkdir(in, 0o755); err != nil {
		b.Fatal(err)
	}
	files, total := benchInput(b, in)
	config := filepath.Join(work, "wharf.toml")
	if err := os.WriteFile(config, []byte(benchConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	privPEM, _, err := publish.GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	key := filepath.Join(work, "dl.key")
	if err := os.WriteFile(key, privPEM, 0o600); err != nil {
		b.Fatal(err)
	}
	opts := s3test.Options(m)
	if err := s3.MakeBucket(context.Background(), "s3://releases", opts); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "AWS_ACCESS_KEY_ID="+m.AccessKey, "AWS_SECRET_ACCESS_KEY="+m.SecretKey, "AWS_REGION=us-east-1")
	b.SetBytes(total)
	b.ResetTimer()
	n := 0
	// One publish: a new version of the same files, its process measured
	// and the server's GETs and bytes sent counted around it.
	publishOnce := func() (st procStats, gets, sent float64) {
		n++
		before := apiRequests(b, m)
		version := fmt.Sprintf("26.1.%d", n)
		log, err := os.Create(filepath.Join(work, "publish-"+version+".log"))
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(wharf, "publish", "--version", version, "--key", key, "--config", config,
			"--store", "s3://releases/dl", "--s3-endpoint", m.URL(), "--base-url", "https://dl.example.com", in)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = log, log
		st = runMeasured(b, cmd)
		log.Close()
		after := apiRequests(b, m)
		return st, after["GetObject"] - before["GetObject"], after["sent bytes"] - before["sent bytes"]
	}
	for b.Loop() {
		// Reference, publish, publish, reference: whatever drifts during
		// the run (the page cache, MinIO's growing data) weighs on both.
		ref := referenceUpload(b, m, files, fmt.Sprintf("reference-%d", n+1))
		st1, gets1, sent1 := publishOnce()
		st2, gets2, sent2 := publishOnce()
		ref += referenceUpload(b, m, files, fmt.Sprintf("reference-%d", n))
		wall := st1.wall + st2.wall
		ratio := wall.Seconds() / ref.Seconds()
		read := max(st1.rchar, st2.rchar)
		rss := max(st1.maxRSS, st2.maxRSS)
		gets, sent := max(gets1, gets2), max(sent1, sent2)
		b.ReportMetric(ratio, "publish/ref")
		b.ReportMetric(float64(read)/float64(total), "read/input")
		b.ReportMetric(float64(rss)/(1<<20), "rss_MiB")
		b.ReportMetric(gets, "GETs")
		b.ReportMetric(sent/float64(total), "sent/input")
		b.Logf("%d files, %d MiB: publish %v + %v, reference PutObject %v in all (before and after): ratio %.2f (target <= 1.15)",
			len(files), total>>20, st1.wall.Round(time.Millisecond), st2.wall.Round(time.Millisecond), ref.Round(time.Millisecond), ratio)
		b.Logf("wharf publish read at most %d bytes for %d input bytes (%.4fx), peak RSS %d MiB (target < 256)",
			read, total, float64(read)/float64(total), rss>>20)
		b.Logf("during a publish the server answered at most %.0f GETs and sent %.0f bytes (%.5f of the input): no artifact downloaded again",
			gets, sent, sent/float64(total))
	}
}
