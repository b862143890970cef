package publish_test

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// benchImageConfig is a release of one image.
const benchImageConfig = `
[[artifact]]
name = "treasury-node"
kind = "image"
`

// writeBenchImage writes a docker save archive for linux/amd64 whose one
// layer is a tar holding size incompressible bytes, streamed (the layer
// is hashed as it is generated, so no copy of it is held in memory).
func writeBenchImage(tb testing.TB, path string, size int64) {
	tb.Helper()
	// The layer: one tar entry of size bytes. Its digest is needed for the
	// config, which docker save writes before the layer; generate it twice.
	layer := func(w io.Writer) {
		tw := tar.NewWriter(w)
		if err := tw.WriteHeader(&tar.Header{Name: "data", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		r := rand.NewChaCha8([32]byte{'l', 'a', 'y', 'e', 'r'})
		if _, err := io.CopyN(tw, r, size); err != nil {
			tb.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	h := sha256.New()
	cw := &countWriter{w: h}
	layer(cw)
	diffID := "sha256:" + hex.EncodeToString(h.Sum(nil))
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	small := func(name, body string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			tb.Fatal(err)
		}
	}
	small("manifest.json", `[{"Config":"config.json","RepoTags":["treasury-node:bench"],"Layers":["layer.tar"]}]`)
	small("config.json", `{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["`+diffID+`"]}}`)
	if err := tw.WriteHeader(&tar.Header{Name: "layer.tar", Mode: 0o644, Size: cw.n, Typeflag: tar.TypeReg}); err != nil {
		tb.Fatal(err)
	}
	layer(tw)
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// readBytes is what this process has read so far (rchar of /proc/self/io:
// read(2) and friends, files and sockets).
func readBytes(tb testing.TB) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		tb.Skipf("no /proc/self/io: %v", err)
	}
	m := regexp.MustCompile(`(?m)^rchar: (\d+)$`).FindSubmatch(b)
	if m == nil {
		tb.Fatalf("no rchar in /proc/self/io")
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// copyDurably copies src into a new file in dir and fsyncs it, as the
// directory store writes an object: the reference `cp` of the archive.
func copyDurably(tb testing.TB, src, dir string) time.Duration {
	tb.Helper()
	start := time.Now()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.CreateTemp(dir, "copy-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.Remove(out.Name())
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

// copySectionDurably copies n bytes of src from off into a new file in
// dir and fsyncs it: what the directory store does for a blob.
func copySectionDurably(tb testing.TB, src string, off, n int64, dir string) {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	if _, err := in.Seek(off, io.SeekStart); err != nil {
		tb.Fatal(err)
	}
	out, err := os.CreateTemp(dir, "blob-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.Remove(out.Name())
	if _, err := io.CopyN(out, in, n); err != nil {
		tb.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

// floorOf is the least a publish of the image must do, one after the
// other: the archive's SHA-256 (its signature's) and each blob's (its
// name, checked against the config), at the same time on two cores, then
// a durable copy of the tar and one of each blob, at the same time (as
// publish writes them). Either hash alone would let a corrupt archive
// through.
func floorOf(tb testing.TB, archive string, blobs []oci.Blob, dir string) time.Duration {
	tb.Helper()
	start := time.Now()
	f, err := os.Open(archive)
	if err != nil {
		tb.Fatal(err)
	}
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		for _, b := range blobs {
			if _, err := io.Copy(sha256.New(), io.NewSectionReader(f, b.Offset, b.Size)); err != nil {
				tb.Error(err)
			}
		}
	}()
	if _, err := io.Copy(sha256.New(), io.NewSectionReader(f, 0, 1<<62)); err != nil {
		tb.Fatal(err)
	}
	<-hashed
	f.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range blobs {
			copySectionDurably(tb, archive, b.Offset, b.Size, dir)
		}
	}()
	copyDurably(tb, archive, dir)
	<-done
	return time.Since(start)
}

// BenchmarkPublishImage publishes a release of one image (a docker save
// archive of WHARF_BENCH_IMAGE_MIB, default 500, in one layer) into a fresh
// directory tree, against io.Copy of the same archive into a file of the
// same directory, fsynced as the store fsyncs (cp), in ABBA order, and
// reports the medians:
//
//   - publish/cp:  the publish over the copy of its tar; publish writes the
//     tar and, in the registry tree, its layer: twice the bytes of the copy
//   - publish/2cp: the publish over two such copies (the bytes it writes)
//   - publish/floor: the publish over the least it must do (floorOf: the
//     archive's and its blobs' SHA-256 on two cores, then the copies of
//     the tar and of its blobs at the same time), in the same ABBA rounds
//   - read/input:  bytes the process read during a publish over the
//     archive's size (each read of the archive counts 1; rchar counts
//     the bytes copy_file_range copies too, so the directory store's two
//     kernel copies, of the tar and of its layer, count 2 of the 3)
//
// make bench runs it (scripts/bench.sh publish); alone:
//
//	go test -run '^$' -bench BenchmarkPublishImage -benchtime 3x ./publish/
func BenchmarkPublishImage(b *testing.B) {
	ctx := context.Background()
	mib := int64(500)
	if v, err := strconv.ParseInt(os.Getenv("WHARF_BENCH_IMAGE_MIB"), 10, 64); err == nil && v > 0 {
		mib = v
	}
	work := b.TempDir()
	in := filepath.Join(work, "dist")
	if err := os.Mkdir(in, 0o755); err != nil {
		b.Fatal(err)
	}
	archive := filepath.Join(in, "treasury-node-amd64.tar")
	writeBenchImage(b, archive, mib<<20)
	st, err := os.Stat(archive)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := publish.ParseConfig(strings.NewReader(benchImageConfig))
	if err != nil {
		b.Fatal(err)
	}
	inputs, err := cfg.ScanInput(in, true)
	if err != nil {
		b.Fatal(err)
	}
	signer := fixedSigner(b)
	af, err := os.Open(archive)
	if err != nil {
		b.Fatal(err)
	}
	im, err := oci.Read(af, st.Size(), "amd64", oci.Limits{})
	af.Close()
	if err != nil {
		b.Fatal(err)
	}
	var pubs, cps, floors []time.Duration
	var reads []float64
	publishOnce := func(n int) {
		tree := filepath.Join(work, fmt.Sprintf("tree-%d", n))
		p, err := publish.NewPublisher(dirStore(b, tree), signer, cfg, baseURL+"/")
		if err != nil {
			b.Fatal(err)
		}
		before := readBytes(b)
		start := time.Now()
		if _, err := p.Publish(ctx, "26.1.1", inputs); err != nil {
			b.Fatal(err)
		}
		pubs = append(pubs, time.Since(start))
		reads = append(reads, float64(readBytes(b)-before)/float64(st.Size()))
		if err := os.RemoveAll(tree); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for b.Loop() {
		cps = append(cps, copyDurably(b, archive, work))
		floors = append(floors, floorOf(b, archive, im.Blobs(), work))
		publishOnce(n)
		n++
		publishOnce(n)
		n++
		floors = append(floors, floorOf(b, archive, im.Blobs(), work))
		cps = append(cps, copyDurably(b, archive, work))
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	slices.Sort(reads)
	mp, mc, mf := median(pubs), median(cps), median(floors)
	b.ReportMetric(mp.Seconds()/mc.Seconds(), "publish/cp")
	b.ReportMetric(mp.Seconds()/(2*mc.Seconds()), "publish/2cp")
	b.ReportMetric(mp.Seconds()/mf.Seconds(), "publish/floor")
	b.ReportMetric(reads[len(reads)/2], "read/input")
	b.Logf("a %d MiB image: publish %v (median of %d), cp of its tar %v (median of %d), the floor (its and its blobs' SHA-256, then cp of the tar and of its blobs at once) %v: %.2fx cp, %.2fx two cps, %.2fx the floor; the process read %.2fx the archive",
		st.Size()>>20, mp.Round(time.Millisecond), len(pubs), mc.Round(time.Millisecond), len(cps), mf.Round(time.Millisecond),
		mp.Seconds()/mc.Seconds(), mp.Seconds()/(2*mc.Seconds()), mp.Seconds()/mf.Seconds(), reads[len(reads)/2])
}
