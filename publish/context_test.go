package publish_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// kindArtifact stands for a download in the pairs of kinds: signed bare.
const kindArtifact = "artifact"

// kindAttestation stands for an in-toto statement in a DSSE envelope,
// signed under its own payload type and naming no tree.
const kindAttestation = "attestation"

// kindImageSig stands for a cosign image signature: a simple-signing
// payload naming a manifest digest, signed bare as cosign does.
const kindImageSig = "image signature"

// refusedArtifact reports whether publish refuses to sign b as a
// download, and wharf verify to verify it as one.
func refusedArtifact(b []byte) bool {
	head := b[:min(len(b), 512)]
	return publish.IsSignContext(head) || oci.LooksLikeJSON(head)
}

// contextOf is the byte string a signature of body as kind covers
// (kind being metadata or an attestation).
func contextOf(kind, url string, body []byte) []byte {
	if kind == kindAttestation {
		return publish.SignContext(publish.InTotoPayloadType, body)
	}
	return publish.SignContext(publish.PayloadType(kind, url), body)
}

// signAs signs b as kind at url the way publish does: a download bare,
// unless it starts as a metadata context (publish refuses it, ok false).
func signAs(t *testing.T, s publish.Signer, kind, url string, b []byte) (sig []byte, ok bool) {
	t.Helper()
	ctx := context.Background()
	if kind == kindImageSig {
		// publish signs only the payloads it writes itself.
		ref, d, err := oci.ParseSignaturePayload(b)
		if want, _ := oci.SignaturePayload(ref, d); err != nil || !bytes.Equal(b, want) {
			return nil, false
		}
	}
	if kind == kindArtifact || kind == kindImageSig {
		if kind == kindArtifact && refusedArtifact(b) {
			return nil, false
		}
		der, err := s.SignDigest(ctx, sha256Of(b))
		if err != nil {
			t.Fatal(err)
		}
		return publish.SignatureText(der), true
	}
	if kind == kindAttestation {
		der, err := s.SignDigest(ctx, sha256Of(contextOf(kind, url, b)))
		if err != nil {
			t.Fatal(err)
		}
		return publish.SignatureText(der), true
	}
	sig, err := publish.SignMetadata(ctx, s, kind, url, b)
	if err != nil {
		t.Fatal(err)
	}
	return sig, true
}

// acceptedAs reports whether the verifier wharf ships for kind at url
// accepts file with sig: wharf verify's for a download (which refuses a
// file starting as a metadata context), VerifyChannel on the record made
// of file and a signature line, VerifyMetadata and the strict parser of
// SHA256SUMS and releases.json.
func acceptedAs(pub *ecdsa.PublicKey, kind, url string, file, sig []byte) bool {
	switch kind {
	case kindArtifact:
		return !refusedArtifact(file) && publish.Verify(pub, bytes.NewReader(file), sig) == nil
	case kindImageSig:
		// cosign verify: the payload parses and names a digest, the
		// signature is over its bytes.
		_, d, err := oci.ParseSignaturePayload(file)
		return err == nil && publish.VerifyImageSignature(pub, d, file, sig) == nil
	case publish.SignedChannel:
		rec := append(append(bytes.Clone(file), "signature "...), append(sig, '\n')...)
		c, err := publish.VerifyChannel(pub, rec, time.Time{})
		return err == nil && c.ObjectURL() == url
	case publish.SignedSums:
		_, err := publish.ParseSums(file)
		return err == nil && publish.VerifyMetadata(pub, kind, url, file, sig) == nil
	case publish.SignedManifest:
		_, err := publish.ReadManifest(bytes.NewReader(file))
		return err == nil && publish.VerifyMetadata(pub, kind, url, file, sig) == nil
	case kindAttestation:
		// The file as an envelope's payload, checked for whatever file
		// and predicate it names itself.
		var st publish.Statement
		der, err := base64.StdEncoding.DecodeString(string(sig))
		if err != nil || json.Unmarshal(file, &st) != nil || len(st.Subject) == 0 {
			return false
		}
		env, _ := json.Marshal(publish.Envelope{PayloadType: publish.InTotoPayloadType, Payload: file, Signatures: []publish.EnvelopeSig{{Sig: der}}})
		_, err = publish.VerifyAttestation(pub, env, st.Subject[0].Name, st.Subject[0].Digest["sha256"], st.PredicateType)
		return err == nil
	}
	panic(kind)
}

// genBody is a well-formed file of kind for the tree at base, so that
// only the signature stands between it and acceptance.
func genBody(rng *rand.Rand, kind, base string) []byte {
	switch kind {
	case publish.SignedChannel:
		c := publish.Channel{Sequence: 1 + rng.Uint64N(1e6), Issued: time.Unix(1e9+rng.Int64N(1e9), 0).UTC(), URL: base,
			Latest: fmt.Sprintf("26.%d.%d", 1+rng.IntN(9), 1+rng.IntN(9))}
		c.Expires = c.Issued.Add(time.Duration(1+rng.IntN(1000)) * time.Hour)
		return c.Body()
	case publish.SignedSums:
		var b strings.Builder
		for i := range 1 + rng.IntN(4) {
			fmt.Fprintf(&b, "%064x  f%d-%d.tar.gz\n", rng.Uint64(), i, rng.IntN(1000))
		}
		return []byte(b.String())
	case publish.SignedManifest:
		return fmt.Appendf(nil, "{\"schema\":1,\"releases\":[{\"version\":\"26.1.%d\"}]}\n", 1+rng.IntN(9))
	case kindImageSig:
		b, _ := oci.SignaturePayload(strings.TrimPrefix(base, "https://")+"/treasury-node", fmt.Sprintf("sha256:%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()))
		if rng.IntN(4) == 0 {
			b = append([]byte(" "), b...) // what cosign reads too
		}
		return b
	case kindAttestation:
		return fmt.Appendf(nil, `{"_type":%q,"subject":[{"name":"treasury-cli-26.1.%d-linux-amd64.tar.gz","digest":{"sha256":"%064x"}}],"predicateType":%q,"predicate":{}}`,
			publish.StatementType, 1+rng.IntN(9), rng.Uint64(), []string{publish.PredicateSLSA, publish.PredicateCycloneDX}[rng.IntN(2)])
	}
	// A download: random bytes, sometimes shaped as the context a
	// metadata signature covers (the attacker's image named for it).
	b := make([]byte, 16+rng.IntN(200))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// urlOf is where a file of kind lives in the tree at base.
func urlOf(kind, base string) string {
	switch kind {
	case publish.SignedChannel:
		return base + "/channel"
	case publish.SignedSums:
		return base + "/bin/26.1.3/SHA256SUMS"
	case publish.SignedManifest:
		return base + "/releases.json"
	}
	return base + "/bin/26.1.3/treasury-cli-26.1.3-linux-amd64.tar.gz"
}

// TestNoSignatureCrossesKinds: for every pair of kinds (a download and
// each kind of metadata), bytes the key signs as one kind, for one tree,
// are never accepted as another kind or for another tree by any verifier
// wharf ships, whatever file the attacker pairs the signature with: the
// signed bytes themselves, the bytes a verifier of the other kind checks
// (the attacker's download named for it), or the file with its context
// taken off. The one accepted pairing is a kind with itself, for its own
// tree (a download, whose signature names no tree, for any).
func TestNoSignatureCrossesKinds(t *testing.T) {
	s, _ := testSigner(t)
	pub, _ := s.PublicKey(context.Background())
	rng := testenv.Rand(t, 1)
	kinds := append([]string{kindArtifact, kindAttestation, kindImageSig}, publish.SignedKinds()...)
	trees := []string{"https://dl.example.com", "https://staging.example.com", "https://dl.example.com/v2"}
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	if n := os.Getenv("WHARF_FUZZ_ROUNDS"); n != "" {
		fmt.Sscan(n, &rounds)
	}
	tried, accepted := 0, 0
	for range rounds {
		for _, signed := range kinds {
			for _, as := range kinds {
				base, other := trees[rng.IntN(len(trees))], trees[rng.IntN(len(trees))]
				target := genBody(rng, as, other) // what the attacker wants accepted
				candidates := [][]byte{target, genBody(rng, signed, base)}
				if as != kindArtifact {
					// The bytes the verifier of as checks, signed as signed.
					candidates = append(candidates, contextOf(as, urlOf(as, other), target))
				}
				for _, signedBytes := range candidates {
					sig, ok := signAs(t, s, signed, urlOf(signed, base), signedBytes)
					if !ok {
						continue // publish refuses to sign it
					}
					files := [][]byte{signedBytes, target}
					if signed != kindArtifact {
						files = append(files, contextOf(signed, urlOf(signed, base), signedBytes))
					}
					for _, file := range files {
						tried++
						if !acceptedAs(pub, as, urlOf(as, other), file, sig) {
							continue
						}
						accepted++
						// A download's signature is bare, as the spec
						// fixes it, and names no tree, nor does an
						// attestation (its subject is a file name and
						// digest): SHA256SUMS does.
						otherTree := base != other && as != kindArtifact && as != kindAttestation && as != kindImageSig
						if signed != as || otherTree || !bytes.Equal(file, signedBytes) {
							t.Fatalf("bytes signed as %s for %s accepted as %s for %s:\n%q", signed, base, as, other, file)
						}
					}
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatalf("%d attempts, none accepted: the generator never produced the genuine pairing", tried)
	}
	t.Logf("%d attempts over %d rounds, %d genuine pairings accepted, no other", tried, rounds, accepted)
}

// TestPublishRefusesSignContext: a download whose first bytes are the
// context metadata is signed in is refused by wharf check and by publish
// before anything is written: its signature would be one of metadata.
func TestPublishRefusesSignContext(t *testing.T) {
	ctx := context.Background()
	dir := demoInputs(t, "a")
	// A docker save whose first entry is named as the context of a
	// channel record begins: the attacker's image.
	name := "DSSEv1 64 " + publish.PayloadType(publish.SignedChannel, baseURL+"/channel")
	name = name[:min(len(name), 99)]
	img := tarOf(t, false, tarFile{name, 0o644, []byte("wharf-channel 2\n")},
		tarFile{"manifest.json", 0o644, []byte(`[{"Config":"config.json","Layers":[]}]`)},
		tarFile{"config.json", 0o644, []byte(`{"architecture":"amd64","os":"linux"}`)})
	if !bytes.HasPrefix(img, []byte("DSSEv1")) {
		t.Fatalf("the image starts %q", img[:16])
	}
	if err := os.WriteFile(filepath.Join(dir, "treasury-node-amd64.tar"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	_, problems, err := publish.DefaultConfig().CheckInput(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(problems, func(p string) bool {
		return strings.HasPrefix(p, "treasury-node-amd64.tar: starts with \"DSSEv1\"")
	}) {
		t.Errorf("CheckInput problems = %q, want the image refused", problems)
	}
	root := t.TempDir()
	store := dirStore(t, root)
	p := newPublisher(t, store, fixedSigner(t))
	p.Parallel = 1
	_, err = p.Publish(ctx, "26.1.3", scan(t, dir))
	if !errors.Is(err, publish.ErrLooksLikeMetadata) {
		t.Fatalf("Publish = %v, want ErrLooksLikeMetadata", err)
	}
	for _, k := range []string{"img/26.1.3/treasury-node-26.1.3-amd64.tar.sig", "img/26.1.3/SHA256SUMS.sig", publish.KeyChannel} {
		if _, err := os.Stat(filepath.Join(root, k)); err == nil {
			t.Errorf("%s written", k)
		}
	}
}

// TestResignUpgradesTree: a tree whose metadata was signed bare (as the
// release before signed it) no longer verifies; wharf channel resign's
// Resign signs every SHA256SUMS, releases.json and the record again in
// their contexts and writes the install script with the new sequence,
// leaving every download and its signature as they were.
func TestResignUpgradesTree(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := dirStore(t, root)
	s := fixedSigner(t)
	pub, _ := s.PublicKey(ctx)
	p := newPublisher(t, store, s)
	mustPublish(t, p, "26.1.1", "a")
	mustPublish(t, p, "26.1.2", "b")
	// Sign the metadata bare, as the earlier wharf did.
	bare := func(key string) {
		b := readKey(t, store, key)
		der, err := s.SignDigest(ctx, sha256Of(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, key+".sig"), publish.SignatureText(der), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums := []string{"bin/26.1.1/SHA256SUMS", "img/26.1.1/SHA256SUMS", "bin/26.1.2/SHA256SUMS", "img/26.1.2/SHA256SUMS"}
	for _, k := range append(sums, publish.KeyManifest) {
		bare(k)
	}
	rec := fmt.Sprintf("wharf-channel 1\nsequence 7\nissued 1772600767 2026-03-04T05:06:07Z\nurl %s\nlatest 26.1.2\n", baseURL)
	der, _ := s.SignDigest(ctx, sha256Of([]byte(rec)))
	if err := os.WriteFile(filepath.Join(root, publish.KeyChannel), []byte(rec+"signature "+string(publish.SignatureText(der))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, store)
	for _, k := range sums {
		if err := publish.VerifyMetadata(pub, publish.SignedSums, baseURL+"/"+k, readKey(t, store, k), readKey(t, store, k+".sig")); err == nil {
			t.Fatalf("%s: a bare signature verifies as metadata", k)
		}
	}

	c, written, err := p.Resign(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sequence != 8 || c.Latest != "26.1.2" || !c.Expires.Equal(c.Issued.Add(publish.DefaultChannelExpiry)) {
		t.Errorf("record %+v, want sequence 8 after the format 1 record's 7, latest 26.1.2, valid for %v", c, publish.DefaultChannelExpiry)
	}
	for _, k := range sums {
		if err := publish.VerifyMetadata(pub, publish.SignedSums, baseURL+"/"+k, readKey(t, store, k), readKey(t, store, k+".sig")); err != nil {
			t.Errorf("%s after Resign: %v", k, err)
		}
	}
	if err := publish.VerifyMetadata(pub, publish.SignedManifest, baseURL+"/"+publish.KeyManifest, readKey(t, store, publish.KeyManifest), readKey(t, store, publish.KeyManifest+".sig")); err != nil {
		t.Errorf("%s after Resign: %v", publish.KeyManifest, err)
	}
	if _, err := publish.VerifyChannel(pub, readKey(t, store, publish.KeyChannel), time.Time{}); err != nil {
		t.Errorf("channel after Resign: %v", err)
	}
	if !bytes.Contains(readKey(t, store, publish.KeyInstall), []byte("\tmin_sequence=8\n")) {
		t.Errorf("install does not carry min_sequence=8")
	}
	after := snapshot(t, store)
	for k, etag := range before {
		changed := after[k] != etag
		want := strings.HasSuffix(k, "SHA256SUMS.sig") || k == publish.KeyManifest+".sig" || k == publish.KeyChannel || k == publish.KeyInstall
		if changed != want {
			t.Errorf("%s changed %v, want %v", k, changed, want)
		}
	}
	t.Logf("written: %v", written)

	// Again: nothing is signed again but the record (and the script, for
	// its sequence).
	_, written, err = p.Resign(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(written, " ") != publish.KeyChannel+" "+publish.KeyInstall {
		t.Errorf("second Resign wrote %v, want the record and the script only", written)
	}

	t.Run("ErrConfigLacksBinary", func(t *testing.T) {
		cfg := publish.DefaultConfig()
		cfg.Artifacts = cfg.Artifacts[1:]
		q, err := publish.NewPublisher(store, s, cfg, baseURL)
		if err != nil {
			t.Fatal(err)
		}
		snap := snapshot(t, store)
		if _, _, err := q.Resign(ctx, time.Hour); err == nil || !strings.Contains(err.Error(), "which the config does not name") {
			t.Errorf("Resign = %v, want the missing binary named", err)
		}
		if got := snapshot(t, store); fmt.Sprint(got) != fmt.Sprint(snap) {
			t.Errorf("Resign with a short config wrote something")
		}
	})
}
