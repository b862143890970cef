package publish_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// BenchmarkPublishAttestations publishes the demo release (22 artifacts,
// 4 images of 2 platforms, a build job's SBOM beside one image) into a
// fresh directory tree without provenance and with it (every artifact's
// provenance, the SBOM of a Go executable where there is one and the
// job's, each image's attached at sha256-HEX.att), alternating, and
// reports both times and their ratio.
func BenchmarkPublishAttestations(b *testing.B) {
	ctx := context.Background()
	signer := fixedSigner(b)
	in := imageAttInputs(b, "bench")
	var without, with time.Duration
	n := 0
	for ; b.Loop(); n++ {
		for _, attest := range []bool{false, true} {
			p := newPublisher(b, dirStore(b, filepath.Join(b.TempDir(), "t")), signer)
			if attest {
				p.Provenance = publish.ProvenanceFromEnv(githubEnv)
			}
			inputs := scan(b, in)
			start := time.Now()
			res, err := p.Publish(ctx, "26.1.1", inputs)
			if err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			if attest {
				with += d
			} else {
				without += d
			}
			if n == 0 {
				b.Logf("attest %v: %d objects written", attest, len(res.Written))
			}
		}
	}
	b.ReportMetric(float64(without.Milliseconds())/float64(n), "ms-without/op")
	b.ReportMetric(float64(with.Milliseconds())/float64(n), "ms-with/op")
	b.ReportMetric(float64(with)/float64(without), "ratio")
}
