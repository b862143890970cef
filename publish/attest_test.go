package publish_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// githubEnv is a release job's environment in GitHub Actions.
func githubEnv(k string) string {
	return map[string]string{
		"GITHUB_ACTIONS":      "true",
		"GITHUB_SERVER_URL":   "https://github.com",
		"GITHUB_REPOSITORY":   "acme/treasury",
		"GITHUB_SHA":          "0123456789abcdef0123456789abcdef01234567",
		"GITHUB_REF":          "refs/tags/v26.1.1",
		"GITHUB_RUN_ID":       "4242",
		"GITHUB_RUN_ATTEMPT":  "1",
		"GITHUB_WORKFLOW_REF": "acme/treasury/.github/workflows/release.yml@refs/tags/v26.1.1",
		"GITHUB_EVENT_NAME":   "push",
		"RUNNER_ENVIRONMENT":  "github-hosted",
	}[k]
}

// TestProvenanceStatement: the statement of a GitHub Actions job and of
// flags, field for field (golden files); a field not known is absent.
func TestProvenanceStatement(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    publish.Provenance
	}{
		{"GitHub", publish.ProvenanceFromEnv(githubEnv)},
		{"Flags", publish.Provenance{BuilderID: "https://ci.example.com/release", Repository: "https://git.example.com/treasury", Commit: strings.Repeat("ab", 20)}},
		{"BuilderOnly", publish.Provenance{BuilderID: "https://ci.example.com/release"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.p.Validate(); err != nil {
				t.Fatal(err)
			}
			st, err := publish.ProvenanceStatement(tc.p, "treasury-cli-26.1.1-linux-amd64.tar.gz", strings.Repeat("0f", 32))
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.MarshalIndent(st, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, append(b, '\n'))
		})
	}
	if !publish.ProvenanceFromEnv(func(string) string { return "" }).IsZero() {
		t.Error("outside GitHub Actions the environment gave a provenance")
	}
}

// TestProvenanceRefused: fields a statement cannot carry are refused,
// with the field named.
func TestProvenanceRefused(t *testing.T) {
	ok := publish.Provenance{BuilderID: "https://ci.example.com/release"}
	for _, tc := range []struct {
		name string
		edit func(*publish.Provenance)
		want string
	}{
		{"ControlCharacter", func(p *publish.Provenance) { p.Ref = "refs/tags/v1\n[ok] signed" }, "source ref"},
		{"Escape", func(p *publish.Provenance) { p.BuilderID += "\x1b[2J" }, "builder id"},
		{"Bidi", func(p *publish.Provenance) { p.Repository = "https://git.example.com/\u202etreasury" }, "source repository"},
		{"InvalidUTF8", func(p *publish.Provenance) { p.InvocationID = "run \xff" }, "build id"},
		{"Oversized", func(p *publish.Provenance) { p.Repository = "https://git.example.com/" + strings.Repeat("a", 2000) }, "1024"},
		{"CommitNotHex", func(p *publish.Provenance) { p.Commit = "main" }, "commit"},
		{"NoBuilder", func(p *publish.Provenance) { p.BuilderID = ""; p.Commit = strings.Repeat("a", 40) }, "builder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error naming %q", err, tc.want)
			}
			root := t.TempDir()
			pub := newPublisher(t, dirStore(t, root), mustSigner(t))
			pub.Provenance = p
			if _, err := pub.Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "p"))); err == nil {
				t.Fatal("publish accepted it")
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("publish refused but wrote %d entries", len(ents))
			}
		})
	}
}

func mustSigner(t *testing.T) publish.Signer {
	s, _ := testSigner(t)
	return s
}

// TestVerifyAttestation: a published provenance verifies for its file,
// and each way of passing another off is refused with its reason.
func TestVerifyAttestation(t *testing.T) {
	s, _ := testSigner(t)
	other, _ := testSigner(t)
	pub, _ := s.PublicKey(context.Background())
	root := t.TempDir()
	p := newPublisher(t, dirStore(t, root), s)
	p.Provenance = publish.ProvenanceFromEnv(githubEnv)
	mustPublish(t, p, "26.1.1", "att")
	m := readManifest(t, root)
	rel, _ := m.Find("26.1.1")
	a, _ := rel.Artifact("treasury-cli", "x86")
	b, _ := rel.Artifact("engine", "x86")
	if len(a.Attestations) != 1 || a.Attestations[0].Key != publish.ProvenanceKey(a.Key) || a.Attestations[0].PredicateType != publish.PredicateSLSA {
		t.Fatalf("releases.json lists %+v", a.Attestations)
	}
	env, err := os.ReadFile(filepath.Join(root, publish.ProvenanceKey(a.Key)))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(env); hex.EncodeToString(sum[:]) != a.Attestations[0].SHA256 {
		t.Errorf("releases.json has sha256 %s for the provenance, the file %x", a.Attestations[0].SHA256, sum)
	}
	if _, err := publish.VerifyAttestation(pub, env, a.FileName(), a.SHA256, publish.PredicateSLSA); err != nil {
		t.Fatalf("genuine provenance refused: %v", err)
	}

	var e publish.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	reenc := func(edit func(*publish.Envelope)) []byte {
		c := e
		c.Signatures = append([]publish.EnvelopeSig(nil), e.Signatures...)
		edit(&c)
		out, _ := json.Marshal(c)
		return out
	}
	otherSt, _ := publish.ProvenanceStatement(p.Provenance, a.FileName(), a.SHA256)
	byOther, err := publish.SignStatement(context.Background(), other, otherSt)
	if err != nil {
		t.Fatal(err)
	}
	sbomSt, _ := publish.NewStatement(a.FileName(), a.SHA256, publish.PredicateCycloneDX, map[string]string{"bomFormat": "CycloneDX"})
	sbom, _ := publish.SignStatement(context.Background(), s, sbomSt)
	sumsSig, _ := publish.SignMetadata(context.Background(), s, publish.SignedSums, baseURL+"/bin/26.1.1/SHA256SUMS", e.Payload)
	metaAsEnv := reenc(func(c *publish.Envelope) {
		der, _ := base64Decode(sumsSig)
		c.Signatures = []publish.EnvelopeSig{{Sig: der}}
	})
	for _, tc := range []struct {
		name     string
		env      []byte
		file     string
		sum      string
		predType string
		want     string
	}{
		{"TamperedPayload", reenc(func(c *publish.Envelope) {
			c.Payload = bytes.Replace(c.Payload, []byte("acme/treasury"), []byte("evil/treasury"), 1)
		}), a.FileName(), a.SHA256, publish.PredicateSLSA, "no signature of the envelope verifies"},
		{"PayloadType", reenc(func(c *publish.Envelope) { c.PayloadType = "application/json" }), a.FileName(), a.SHA256, publish.PredicateSLSA, "payload type"},
		{"NoSignature", reenc(func(c *publish.Envelope) { c.Signatures = nil }), a.FileName(), a.SHA256, publish.PredicateSLSA, "no signature"},
		{"OtherKey", byOther, a.FileName(), a.SHA256, publish.PredicateSLSA, "another key"},
		{"OtherFile", env, b.FileName(), b.SHA256, publish.PredicateSLSA, "not " + b.FileName()},
		{"OtherBytes", env, a.FileName(), b.SHA256, publish.PredicateSLSA, "the statement is about"},
		{"SBOMAsProvenance", sbom, a.FileName(), a.SHA256, publish.PredicateSLSA, "predicate type"},
		{"MetadataSignature", metaAsEnv, a.FileName(), a.SHA256, publish.PredicateSLSA, "no signature of the envelope verifies"},
		{"NotJSON", []byte("DSSEv1 28 application/vnd.in-toto+json 2 {}"), a.FileName(), a.SHA256, publish.PredicateSLSA, "not a DSSE envelope"},
		{"TwoEnvelopes", append(append([]byte{}, env...), env...), a.FileName(), a.SHA256, publish.PredicateSLSA, "more than one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := publish.VerifyAttestation(pub, tc.env, tc.file, tc.sum, tc.predType)
			if !errors.Is(err, publish.ErrBadAttestation) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrBadAttestation saying %q", err, tc.want)
			}
		})
	}
}

// TestProvenanceCosign: cosign verify-blob-attestation (its own code, off
// the network) accepts a published provenance for its file with dl.pub,
// and refuses it for another file, under another key, or changed.
func TestProvenanceCosign(t *testing.T) {
	cosign := testenv.Tool(t, "cosign")
	s, pubPath := testSigner(t)
	_, otherPub := testSigner(t)
	root, home := t.TempDir(), t.TempDir()
	p := newPublisher(t, dirStore(t, root), s)
	p.Provenance = publish.ProvenanceFromEnv(githubEnv)
	mustPublish(t, p, "26.1.1", "cosign-att")
	dir := filepath.Join(root, "bin", "26.1.1")
	archive := filepath.Join(dir, "treasury-cli-26.1.1-linux-amd64.tar.gz")
	run := func(key, att, target string) ([]byte, error) {
		cmd := exec.Command(cosign, "verify-blob-attestation", "--key", key, "--type", "slsaprovenance1",
			"--signature", att, publish.CosignOffline, target)
		cmd.Env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=true")
		return cmd.CombinedOutput()
	}
	att := publish.ProvenanceKey(archive)
	if out, err := run(pubPath, att, archive); err != nil {
		t.Fatalf("cosign refused a published provenance: %v\n%s", err, out)
	}
	if out, err := run(pubPath, att, filepath.Join(dir, "engine-26.1.1-linux-amd64.tar.gz")); err == nil {
		t.Fatalf("cosign accepted the provenance for another file:\n%s", out)
	}
	if out, err := run(otherPub, att, archive); err == nil {
		t.Fatalf("cosign accepted the provenance under another key:\n%s", out)
	}
	env, _ := os.ReadFile(att)
	var e publish.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	e.Payload = bytes.Replace(e.Payload, []byte("acme/treasury"), []byte("evil/treasury"), 1)
	tampered := filepath.Join(home, "tampered.intoto.jsonl")
	b, _ := json.Marshal(e)
	if err := os.WriteFile(tampered, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(pubPath, tampered, archive); err == nil {
		t.Fatalf("cosign accepted a changed envelope:\n%s", out)
	}
}

func readManifest(t *testing.T, root string) *publish.Manifest {
	t.Helper()
	f, err := os.Open(filepath.Join(root, publish.KeyManifest))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := publish.ReadManifest(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func base64Decode(sigText []byte) ([]byte, error) {
	return base64.StdEncoding.DecodeString(string(sigText))
}
