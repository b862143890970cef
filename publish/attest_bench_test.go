package publish_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// BenchmarkPublishAttestations publishes the demo release (22 artifacts,
// 4 images of 2 platforms) into a fresh directory tree without any
// attestation and with them (every artifact's provenance, a build job's
// SBOM beside one image, and each image's provenance and that SBOM
// attached at sha256-HEX.att), in ABBA order, and reports the median of
// each and their ratio: medians, because other jobs on a shared machine
// make single runs several times slower.
func BenchmarkPublishAttestations(b *testing.B) {
	ctx := context.Background()
	signer := fixedSigner(b)
	plain, attested := demoInputs(b, "bench"), imageAttInputs(b, "bench") // the same files, and an SBOM
	var without, with []time.Duration
	publishOnce := func(attest bool) {
		p := newPublisher(b, dirStore(b, filepath.Join(b.TempDir(), "t")), signer)
		in := plain
		if attest {
			p.Provenance, in = publish.ProvenanceFromEnv(githubEnv), attested
		}
		inputs := scan(b, in)
		start := time.Now()
		if _, err := p.Publish(ctx, "26.1.1", inputs); err != nil {
			b.Fatal(err)
		}
		if attest {
			with = append(with, time.Since(start))
		} else {
			without = append(without, time.Since(start))
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
	mw, mo := median(with), median(without)
	b.ReportMetric(float64(mo.Microseconds())/1000, "ms-without")
	b.ReportMetric(float64(mw.Microseconds())/1000, "ms-with")
	b.ReportMetric(float64(mw)/float64(mo), "ratio")
}
