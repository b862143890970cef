package publish_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// BenchmarkPublishAttestations publishes a release of 22 artifacts and 4
// images of 2 platforms into a fresh directory tree without any
// attestation and with them (every artifact's provenance, a build job's
// SBOM beside one image, and each image's provenance and that SBOM
// attached at sha256-HEX.att), in ABBA order, and reports the median of
// each and their ratio: medians, because other jobs on a shared machine
// make single runs several times slower. Two releases:
//
//   - demo: the demo's files of a few hundred bytes, where the time is
//     the number of objects the directory store fsyncs;
//   - executables: the 18 executables (scripts, so neither run has an
//     SBOM made from Go build info) of 1 to 16 MiB, half of each random
//     bytes (packing compresses them as it does real executables);
//     WHARF_BENCH_ATTEST_MIB sets the largest (the others step up to it).
//
// Alone: go test -run '^$' -bench BenchmarkPublishAttestations -benchtime 20x ./publish/
func BenchmarkPublishAttestations(b *testing.B) {
	b.Run("demo", func(b *testing.B) {
		benchAttestations(b, demoInputs(b, "bench"), imageAttInputs(b, "bench"))
	})
	b.Run("executables", func(b *testing.B) {
		maxMiB := 16
		if s := os.Getenv("WHARF_BENCH_ATTEST_MIB"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				b.Fatalf("WHARF_BENCH_ATTEST_MIB=%q: want a number of MiB, at least 1", s)
			}
			maxMiB = n
		}
		attested := imageAttInputs(b, "bench")
		plain := b.TempDir()
		ents, err := os.ReadDir(attested)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var exes []string
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".tar") && !strings.HasSuffix(e.Name(), publish.SBOMSuffix) {
				exes = append(exes, e.Name())
			}
		}
		var total int64
		for i, name := range exes {
			p := filepath.Join(attested, name)
			size := max(1, maxMiB*(i+1)/len(exes)) << 20
			writeFile(b, p, paddedScript(rng, size), 0o755)
			total += int64(size)
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), publish.SBOMSuffix) {
				if err := os.Link(filepath.Join(attested, e.Name()), filepath.Join(plain, e.Name())); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Logf("%d executables, %d MiB in all", len(exes), total>>20)
		benchAttestations(b, plain, attested)
	})
}

// paddedScript is a shell script of size bytes: a line, then 4 KiB blocks
// alternately random and zero.
func paddedScript(rng *rand.Rand, size int) []byte {
	b := make([]byte, size)
	n := copy(b, "#!/bin/sh\necho padded\nexit 0\n")
	for off := n; off < size; off += 8 << 10 {
		for i := off; i < min(off+4<<10, size); i++ {
			b[i] = byte(rng.Uint32())
		}
	}
	return b
}

// benchAttestations publishes plain without attestations and attested
// (plain's files and an SBOM) with them, alternately, and reports the
// medians and their ratio, and how many objects each wrote (the directory
// store fsyncs each object and its directory).
func benchAttestations(b *testing.B, plain, attested string) {
	ctx := context.Background()
	signer := fixedSigner(b)
	var times [2][]time.Duration // without and with
	var objects [2]int           // keys written without and with
	publishOnce := func(attest bool) {
		root := filepath.Join(b.TempDir(), "t")
		p := newPublisher(b, dirStore(b, root), signer)
		in, i := plain, 0
		if attest {
			p.Provenance, in, i = publish.ProvenanceFromEnv(githubEnv), attested, 1
		}
		inputs := scan(b, in)
		start := time.Now()
		res, err := p.Publish(ctx, "26.1.1", inputs)
		if err != nil {
			b.Fatal(err)
		}
		times[i] = append(times[i], time.Since(start))
		objects[i] = len(res.Written)
		if err := os.RemoveAll(root); err != nil { // the larger trees would fill the disk
			b.Fatal(err)
		}
	}
	for n := 0; b.Loop(); n++ {
		first := n%2 == 0
		publishOnce(!first)
		publishOnce(first)
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	mo, mw := median(times[0]), median(times[1])
	b.ReportMetric(float64(mo.Microseconds())/1000, "ms-without")
	b.ReportMetric(float64(mw.Microseconds())/1000, "ms-with")
	b.ReportMetric(float64(mw)/float64(mo), "ratio")
	b.ReportMetric(float64(objects[0]), "objects-without")
	b.ReportMetric(float64(objects[1]), "objects-with")
}
