package publish_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// imageAttInputs is INPUT_DIR with a build job's SBOM beside
// treasury-node's amd64 image.
func imageAttInputs(t testing.TB, seed string) string {
	t.Helper()
	dir := demoInputs(t, seed)
	img := filepath.Join(dir, "treasury-node-amd64.tar")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, img+publish.SBOMSuffix, jobSBOM(fmt.Sprintf("%x", sha256.Sum256(b))), 0o644)
	return dir
}

// TestImageAttestations: a published image carries, at sha256-HEX.att of
// its index and of each platform manifest, the build's provenance and the
// platform's SBOM as cosign attest lays them out, each envelope signed by
// the release key and about the digest it is attached to; releases.json
// lists them; a re-run writes nothing, and a tampered attestation
// manifest is replaced by a valid one.
func TestImageAttestations(t *testing.T) {
	ctx := context.Background()
	s := dirStore(t, t.TempDir())
	signer := fixedSigner(t)
	pub, _ := signer.PublicKey(ctx)
	p := newPublisher(t, s, signer)
	p.Provenance = publish.ProvenanceFromEnv(githubEnv)
	in := imageAttInputs(t, "image-att")
	if _, err := p.Publish(ctx, "26.1.1", scan(t, in)); err != nil {
		t.Fatal(err)
	}
	rel := checkRegistry(t, s, signer, "26.1.1")
	node, _ := rel.Image("treasury-node")
	demo, _ := rel.Image("treasury-demo")
	for _, tc := range []struct {
		im   publish.Image
		want map[string][]string // digest -> predicate types of its .att's layers
	}{
		{node, map[string][]string{
			node.Index:                 {publish.PredicateSLSA, publish.PredicateCycloneDX},
			node.Platforms[0].Manifest: {publish.PredicateSLSA, publish.PredicateCycloneDX},
			node.Platforms[1].Manifest: {publish.PredicateSLSA},
		}},
		{demo, map[string][]string{
			demo.Index:                 {publish.PredicateSLSA},
			demo.Platforms[0].Manifest: {publish.PredicateSLSA},
			demo.Platforms[1].Manifest: {publish.PredicateSLSA},
		}},
	} {
		listed := map[string]bool{}
		for _, at := range tc.im.Attestations {
			listed[at.Envelope] = true
		}
		for d, want := range tc.want {
			m := readKey(t, s, publish.RegistryManifestKey(tc.im.Name, oci.AttestationTag(d)))
			layers, err := oci.ParseAttestationManifest(m)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range layers {
				pt := l.Annotations[oci.PredicateTypeAnnotation]
				got = append(got, pt)
				if sig, ok := l.Annotations[oci.CosignSignatureAnnotation]; !ok || sig != "" {
					t.Errorf("%s@%s: layer's signature annotation %q, %v; want it present and empty", tc.im.Name, d, sig, ok)
				}
				env := readKey(t, s, publish.RegistryBlobKey(tc.im.Name, l.Digest))
				st, err := publish.VerifyImageAttestation(pub, env, d, pt)
				if err != nil {
					t.Errorf("%s@%s: %v", tc.im.Name, d, err)
				} else if st.Subject[0].Name != tc.im.Repository {
					t.Errorf("subject %q, want %q", st.Subject[0].Name, tc.im.Repository)
				}
				if !listed[l.Digest] {
					t.Errorf("%s@%s: releases.json does not list the envelope %s", tc.im.Name, d, l.Digest)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s@%s.att has %v, want %v", tc.im.Name, d, got, want)
			}
		}
	}
	sbom := node.Attestations[1]
	if sbom.PredicateType != publish.PredicateCycloneDX || !slices.Equal(sbom.Subjects, []string{node.Index, node.Platforms[0].Manifest}) {
		t.Errorf("releases.json lists the SBOM as %+v", sbom)
	}
	// The SBOM of amd64 is not one of arm64.
	env := readKey(t, s, publish.RegistryBlobKey(node.Name, sbom.Envelope))
	if _, err := publish.VerifyImageAttestation(pub, env, node.Platforms[1].Manifest, publish.PredicateCycloneDX); !errors.Is(err, publish.ErrBadAttestation) {
		t.Errorf("the amd64 SBOM verifies for arm64: %v", err)
	}

	page := string(readKey(t, s, publish.KeyIndex))
	for _, typ := range []string{"slsaprovenance1", "cyclonedx"} {
		if want := "cosign verify-attestation --key dl.pub --type " + typ + " --insecure-ignore-tlog=true " + node.Ref(); !strings.Contains(page, want) {
			t.Errorf("index.html has no %q", want)
		}
	}
	if strings.Contains(page, "--type cyclonedx --insecure-ignore-tlog=true "+demo.Ref()) {
		t.Errorf("index.html gives an SBOM check for %s, which has none", demo.Name)
	}

	// Again: nothing is written.
	before := snapshot(t, s)
	if res, err := p.Publish(ctx, "26.1.1", scan(t, in)); err != nil || !res.Existing {
		t.Fatalf("publish again = %v", err)
	}
	sameSnapshot(t, before, snapshot(t, s))

	// A tampered attestation manifest (its provenance layer pointing at
	// the SBOM) is rewritten from the envelopes that verify.
	tag := publish.RegistryManifestKey(node.Name, oci.AttestationTag(node.Index))
	good := readKey(t, s, tag)
	bad := strings.Replace(string(good), oci.Hex(node.Attestations[0].Envelope), oci.Hex(sbom.Envelope), 1)
	if _, err := s.Put(ctx, tag, strings.NewReader(bad), int64(len(bad)), publish.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, "26.1.1", scan(t, in)); err != nil {
		t.Fatal(err)
	}
	if got := readKey(t, s, tag); string(got) != string(good) {
		t.Errorf("the tampered %s was not restored:\n%s", tag, got)
	}
}

// TestImageAttestationEdits: generated edits of a genuine image
// attestation (a bit of the signed statement or of the signature flipped,
// a statement about other digests spliced in with the signature kept,
// another key's envelope) are refused for every digest, and the genuine
// one passes for exactly the digests it is about.
func TestImageAttestationEdits(t *testing.T) {
	ctx := context.Background()
	rng := testenv.Rand(t, 1)
	s, _ := testSigner(t)
	other, _ := testSigner(t)
	pub, _ := s.PublicKey(ctx)
	digest := func() string {
		var b [32]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return oci.Digest(b[:])
	}
	sign := func(signer publish.Signer, subjects []string) []byte {
		st, err := publish.NewStatement("dl.example.com/treasury-node", oci.Hex(subjects[0]), publish.PredicateSLSA, map[string]any{"runDetails": map[string]any{"builder": map[string]string{"id": "https://ci.example.com/release"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range subjects[1:] {
			st.Subject = append(st.Subject, publish.Subject{Name: "dl.example.com/treasury-node", Digest: map[string]string{"sha256": oci.Hex(d)}})
		}
		env, err := publish.SignStatement(ctx, signer, st)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	for range 200 {
		subjects := []string{digest(), digest(), digest()}
		genuine := sign(s, subjects)
		for _, d := range subjects {
			if _, err := publish.VerifyImageAttestation(pub, genuine, d, publish.PredicateSLSA); err != nil {
				t.Fatalf("the genuine attestation refused for %s: %v", d, err)
			}
		}
		var e publish.Envelope
		if err := json.Unmarshal(genuine, &e); err != nil {
			t.Fatal(err)
		}
		edit := e
		var what string
		switch rng.IntN(4) {
		case 0:
			edit.Payload = slices.Clone(e.Payload)
			i := rng.IntN(len(edit.Payload))
			edit.Payload[i] ^= 1 << rng.IntN(8)
			what = fmt.Sprintf("bit of the statement's byte %d flipped", i)
		case 1:
			sig := slices.Clone(e.Signatures[0].Sig)
			i := rng.IntN(len(sig))
			sig[i] ^= 1 << rng.IntN(8)
			edit.Signatures = []publish.EnvelopeSig{{Sig: sig}}
			what = fmt.Sprintf("bit of the signature's byte %d flipped", i)
		case 2:
			var o publish.Envelope
			if err := json.Unmarshal(sign(s, []string{digest()}), &o); err != nil {
				t.Fatal(err)
			}
			edit.Payload = o.Payload
			what = "a statement about another digest, the signature kept"
		default:
			if err := json.Unmarshal(sign(other, subjects), &edit); err != nil {
				t.Fatal(err)
			}
			what = "signed by another key"
		}
		b, _ := json.Marshal(edit)
		for _, d := range append(subjects, digest()) {
			if _, err := publish.VerifyImageAttestation(pub, b, d, publish.PredicateSLSA); !errors.Is(err, publish.ErrBadAttestation) {
				t.Fatalf("%s: verifies for %s (%v)", what, d, err)
			}
		}
		if _, err := publish.VerifyImageAttestation(pub, genuine, digest(), publish.PredicateSLSA); !errors.Is(err, publish.ErrBadAttestation) {
			t.Fatalf("the genuine attestation verifies for a digest it is not about: %v", err)
		}
	}
}
