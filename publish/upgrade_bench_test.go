package publish_test

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// benchLayer is a layer of a generated image: one file of size
// incompressible bytes drawn from seed.
type benchLayer struct {
	seed string
	size int64
}

// writeLayeredImage writes a docker save archive for linux/amd64 of the
// layers, streamed (each layer is generated twice: for its digest, which
// the config written before it names, and into the archive).
func writeLayeredImage(tb testing.TB, path string, layers []benchLayer) {
	tb.Helper()
	write := func(w io.Writer, l benchLayer) {
		tw := tar.NewWriter(w)
		if err := tw.WriteHeader(&tar.Header{Name: l.seed, Mode: 0o644, Size: l.size, Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		var key [32]byte
		copy(key[:], l.seed)
		if _, err := io.CopyN(tw, rand.NewChaCha8(key), l.size); err != nil {
			tb.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	var diffIDs, names []string
	var sizes []int64
	for i, l := range layers {
		h := sha256.New()
		cw := &countWriter{w: h}
		write(cw, l)
		diffIDs = append(diffIDs, "sha256:"+hex.EncodeToString(h.Sum(nil)))
		sizes = append(sizes, cw.n)
		names = append(names, fmt.Sprintf("l%d/layer.tar", i))
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	small := func(name string, body []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			tb.Fatal(err)
		}
	}
	mj, _ := json.Marshal([]map[string]any{{"Config": "config.json", "RepoTags": []string{"treasury-node:bench"}, "Layers": names}})
	cj, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs}})
	small("manifest.json", mj)
	small("config.json", cj)
	for i, l := range layers {
		if err := tw.WriteHeader(&tar.Header{Name: names[i], Mode: 0o644, Size: sizes[i], Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		write(tw, l)
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// pullSet is what a registry client fetches to pull image:tag from the
// tree at root: the index, each platform's manifest, config and layers,
// by digest, with their sizes.
func pullSet(tb testing.TB, root, image, tag string) map[string]int64 {
	tb.Helper()
	read := func(key string) []byte {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	set := map[string]int64{}
	ib := read(publish.RegistryManifestKey(image, tag))
	set[oci.Digest(ib)] = int64(len(ib))
	var idx oci.Index
	if err := json.Unmarshal(ib, &idx); err != nil {
		tb.Fatal(err)
	}
	for _, d := range idx.Manifests {
		mb := read(publish.RegistryManifestKey(image, d.Digest))
		set[d.Digest] = int64(len(mb))
		var m oci.Manifest
		if err := json.Unmarshal(mb, &m); err != nil {
			tb.Fatal(err)
		}
		for _, b := range append([]oci.Descriptor{m.Config}, m.Layers...) {
			set[b.Digest] = b.Size
		}
	}
	return set
}

// registryBytes is the size of every file under the registry tree of the
// directory tree at root.
func registryBytes(tb testing.TB, root string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(filepath.Join(root, publish.RegistryDir), func(_ string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		n += fi.Size()
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkImageUpgrade publishes two patch releases of an image whose
// base layer (WHARF_BENCH_UPGRADE_BASE_MIB, default 400) did not change
// and whose application layer (WHARF_BENCH_UPGRADE_APP_MIB, default 20)
// did, into one directory tree, and reports what a customer who has the
// first pulls to upgrade to the second (the blobs and manifests the
// second's pull needs that the first's had not: by digest) against the
// tar download of the same upgrade (the second's archive), and what the
// second publish added to the registry tree:
//
//   - pull/tar:  the upgrade's pull over the tar download
//   - added/tar: the bytes the second publish added under v2/ over its tar
//
// make bench runs it (scripts/bench.sh publish_image).
func BenchmarkImageUpgrade(b *testing.B) {
	mib := func(env string, def int64) int64 {
		if v, err := strconv.ParseInt(os.Getenv(env), 10, 64); err == nil && v > 0 {
			return v
		}
		return def
	}
	base, app := mib("WHARF_BENCH_UPGRADE_BASE_MIB", 400)<<20, mib("WHARF_BENCH_UPGRADE_APP_MIB", 20)<<20
	cfg, err := publish.ParseConfig(strings.NewReader(benchImageConfig))
	if err != nil {
		b.Fatal(err)
	}
	var tarSize, pulled, added int64
	for b.Loop() {
		work := b.TempDir()
		tree := filepath.Join(work, "tree")
		p, err := publish.NewPublisher(dirStore(b, tree), fixedSigner(b), cfg, baseURL+"/")
		if err != nil {
			b.Fatal(err)
		}
		var sets [2]map[string]int64
		var before int64
		for j, v := range []string{"26.1.1", "26.1.2"} {
			in := filepath.Join(work, v)
			if err := os.MkdirAll(in, 0o755); err != nil {
				b.Fatal(err)
			}
			archive := filepath.Join(in, "treasury-node-amd64.tar")
			writeLayeredImage(b, archive, []benchLayer{{"base", base}, {"app-" + v, app}})
			inputs, err := cfg.ScanInput(in, true)
			if err != nil {
				b.Fatal(err)
			}
			before = registryBytes(b, tree)
			if _, err := p.Publish(context.Background(), v, inputs); err != nil {
				b.Fatal(err)
			}
			sets[j] = pullSet(b, tree, "treasury-node", v)
			st, err := os.Stat(archive)
			if err != nil {
				b.Fatal(err)
			}
			tarSize = st.Size()
		}
		added = registryBytes(b, tree) - before
		pulled = 0
		for d, n := range sets[1] {
			if _, had := sets[0][d]; !had {
				pulled += n
			}
		}
		if err := os.RemoveAll(work); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pulled)/float64(tarSize), "pull/tar")
	b.ReportMetric(float64(added)/float64(tarSize), "added/tar")
	b.Logf("an upgrade of a %d MiB image (a %d MiB base layer kept, a %d MiB layer changed): the pull fetches %d bytes, the tar download is %d: %.3f of the tar; the publish added %d bytes to v2/ (%.3f)",
		(base+app)>>20, base>>20, app>>20, pulled, tarSize, float64(pulled)/float64(tarSize), added, float64(added)/float64(tarSize))
}
