package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
)

// TestVerifyAttestations: wharf verify checks a published download's
// signature and provenance in one command, offline, and refuses a changed
// envelope, another file's statement and another key's, saying why.
func TestVerifyAttestations(t *testing.T) {
	input := demoInputDir(t, "attest")
	dir := t.TempDir()
	key, store := filepath.Join(dir, "dl.key"), filepath.Join(dir, "public")
	mustRun(t, "keygen", "--out", key)
	commit := strings.Repeat("c0ffee", 6) + "c0ff"
	mustRun(t, "publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "https://dl.example.com",
		"--builder-id", "https://ci.example.com/release", "--source-repo", "https://git.example.com/treasury",
		"--source-commit", commit, "--source-ref", "refs/tags/v26.1.1", input)
	pub := filepath.Join(store, "dl.pub")
	file := filepath.Join(store, "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz")
	other := filepath.Join(store, "bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz")
	out := mustRun(t, "verify", "--key", pub, file)
	for _, want := range []string{"signature OK", "provenance OK", "built by https://ci.example.com/release", "from https://git.example.com/treasury@refs/tags/v26.1.1 commit " + commit} {
		if !strings.Contains(out, want) {
			t.Errorf("verify says\n%s\nwant %q", out, want)
		}
	}

	mustRun(t, "keygen", "--out", filepath.Join(dir, "o.key"))
	genuine, _ := os.ReadFile(file + ".provenance.intoto.jsonl")
	otherAtt, _ := os.ReadFile(other + ".provenance.intoto.jsonl")
	for _, tc := range []struct {
		name string
		att  []byte
		want string
	}{
		{"Tampered", bytes.Replace(genuine, []byte(`"payload":"`), []byte(`"payload":"AAAA`), 1), "no signature of the envelope verifies"},
		{"OtherFile", otherAtt, "the statement is about [engine-26.1.1-linux-amd64.tar.gz"},
		{"NotAnEnvelope", []byte("{}\n"), "payload type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(file+".provenance.intoto.jsonl", tc.att, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(file+".provenance.intoto.jsonl", genuine, 0o644) })
			out, _, err := pubRun(t, "verify", "--key", pub, file)
			if err == nil || shell.ExitCode(err) != 1 || !strings.Contains(err.Error(), "INVALID: provenance") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("verify = %v (exit %d)\n%s\nwant exit 1 saying %q", err, shell.ExitCode(err), out, tc.want)
			}
		})
	}
	t.Run("OtherKey", func(t *testing.T) {
		// The artifact signed by the release key, the provenance beside
		// it re-signed by another: the signature check passes, this fails.
		otherStore := filepath.Join(dir, "other")
		mustRun(t, "publish", "--version", "26.1.1", "--key", filepath.Join(dir, "o.key"), "--store", otherStore, "--base-url", "https://dl.example.com",
			"--builder-id", "https://evil.example.com", input)
		b, _ := os.ReadFile(filepath.Join(otherStore, "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz.provenance.intoto.jsonl"))
		os.WriteFile(file+".provenance.intoto.jsonl", b, 0o644)
		t.Cleanup(func() { os.WriteFile(file+".provenance.intoto.jsonl", genuine, 0o644) })
		_, _, err := pubRun(t, "verify", "--key", pub, file)
		if err == nil || !strings.Contains(err.Error(), "another key") {
			t.Fatalf("verify = %v, want the other key's provenance refused", err)
		}
	})
}

// TestCheckProvenance: wharf check and publish refuse provenance fields a
// statement cannot carry, and publish writes nothing then.
func TestCheckProvenance(t *testing.T) {
	input := demoInputDir(t, "check-prov")
	dir := t.TempDir()
	key, store := filepath.Join(dir, "dl.key"), filepath.Join(dir, "public")
	mustRun(t, "keygen", "--out", key)
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"ControlCharacter", []string{"--builder-id", "https://ci.example.com", "--source-ref", "refs/tags/v1\x1b[2K"}, "source ref"},
		{"Oversized", []string{"--builder-id", "https://ci.example.com/" + strings.Repeat("x", 1100)}, "at most 1024"},
		{"CommitNotHex", []string{"--builder-id", "https://ci.example.com", "--source-commit", "HEAD"}, "source commit"},
		{"NoBuilder", []string{"--source-repo", "https://git.example.com/treasury"}, "--builder-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := pubRun(t, append(append([]string{"check"}, tc.flags...), input)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check = %v, want a problem naming %q", err, tc.want)
			}
			args := append([]string{"publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "https://dl.example.com"}, tc.flags...)
			_, _, err = pubRun(t, append(args, input)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("publish = %v, want a refusal naming %q", err, tc.want)
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Errorf("publish refused but created %s (%v)", store, err)
			}
		})
	}
}

// relist rewrites the tree's releases.json with edit and signs it again
// with keyFile, as a holder of the release key could: what wharf verify
// then refuses is the attestations' own fault, not the manifest's.
func relist(t *testing.T, store, keyFile string, edit func(*publish.Manifest)) {
	t.Helper()
	path := filepath.Join(store, publish.KeyManifest)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := publish.ReadManifest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	var out bytes.Buffer
	if err := m.Encode(&out); err != nil {
		t.Fatal(err)
	}
	signer, err := publish.LoadSigner(t.Context(), keyFile)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := publish.SignMetadata(t.Context(), signer, publish.SignedManifest, "https://dl.example.com/"+publish.KeyManifest, out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, path, out.Bytes())
	writeTestFile(t, path+".sig", sig)
}

// sha256Hex is the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestVerifyTreeAttestations: wharf verify TREE checks every attestation
// releases.json lists (its digest, its place, its signature by dl.pub in
// the attestation context, its subject), and refuses a changed, swapped,
// missing or misplaced one, another file's statement and another key's,
// saying which file and why.
func TestVerifyTreeAttestations(t *testing.T) {
	dir := t.TempDir()
	key, store := filepath.Join(dir, "dl.key"), filepath.Join(dir, "public")
	mustRun(t, "keygen", "--out", key)
	publishArgs := func(key, store string) []string {
		return append([]string{"publish", "--version", "26.1.1", "--key", key, "--store", store, "--base-url", "https://dl.example.com"}, provenanceArgs("26.1.1")...)
	}
	input := attestedInputDir(t, "tree")
	mustRun(t, append(publishArgs(key, store), input)...)
	pub := filepath.Join(store, "dl.pub")
	out := mustRun(t, "verify", "--key", pub, store)
	if want := "22 provenance and 4 SBOM attestations OK"; !strings.Contains(out, want) {
		t.Fatalf("verify TREE says\n%s\nwant %q", out, want)
	}
	// Another key's tree of the same inputs, for its envelopes.
	mustRun(t, "keygen", "--out", filepath.Join(dir, "o.key"))
	otherStore := filepath.Join(dir, "other")
	mustRun(t, append(publishArgs(filepath.Join(dir, "o.key"), otherStore), input)...)

	const (
		cli    = "bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz"
		engine = "bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"
		image  = "img/26.1.1/treasury-node-26.1.1-amd64.tar"
	)
	read := func(k string) []byte {
		b, err := os.ReadFile(filepath.Join(store, k))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// listAs sets the listed SHA-256 of the attestation at k to sum.
	listAs := func(k, sum string) func(*publish.Manifest) {
		return func(m *publish.Manifest) {
			for ri := range m.Releases {
				for ai := range m.Releases[ri].Artifacts {
					for i, at := range m.Releases[ri].Artifacts[ai].Attestations {
						if at.Key == k {
							m.Releases[ri].Artifacts[ai].Attestations[i].SHA256 = sum
						}
					}
				}
			}
		}
	}
	cliProv := publish.ProvenanceKey(cli)
	genuine := read(cliProv)
	tampered := bytes.Replace(genuine, []byte(`"payload":"`), []byte(`"payload":"AAAA`), 1)
	otherFile := read(publish.ProvenanceKey(engine))
	otherKey, err := os.ReadFile(filepath.Join(otherStore, cliProv))
	if err != nil {
		t.Fatal(err)
	}
	sbomAsProv := read(publish.SBOMAttestationKey(image))
	// The release key's signature over the statement itself, as an
	// artifact is signed, rather than over DSSE's PAE of it.
	var env publish.Envelope
	if err := json.Unmarshal(genuine, &env); err != nil {
		t.Fatal(err)
	}
	signer, err := publish.LoadSigner(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(env.Payload)
	if env.Signatures[0].Sig, err = signer.SignDigest(t.Context(), digest[:]); err != nil {
		t.Fatal(err)
	}
	bare, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		write []byte                  // the new content of cliProv, nil: removed
		edit  func(*publish.Manifest) // releases.json relisted and re-signed, nil: as published
		want  string
	}{
		{"ErrChanged", tampered, nil, "it was changed or swapped"},
		{"ErrSwapped", otherFile, nil, "it was changed or swapped"},
		{"ErrMissing", nil, nil, "the tree has no such object"},
		{"ErrChangedRelisted", tampered, listAs(cliProv, sha256Hex(tampered)), "no signature of the envelope verifies"},
		{"ErrOtherFileRelisted", otherFile, listAs(cliProv, sha256Hex(otherFile)), "the statement is about [engine-26.1.1-linux-amd64.tar.gz"},
		{"ErrOtherKeyRelisted", otherKey, listAs(cliProv, sha256Hex(otherKey)), "signed by another key"},
		{"ErrOutOfContextRelisted", bare, listAs(cliProv, sha256Hex(bare)), "no signature of the envelope verifies"},
		{"ErrOtherPredicateRelisted", sbomAsProv, listAs(cliProv, sha256Hex(sbomAsProv)), "predicate type"},
		{"ErrMisplaced", genuine, func(m *publish.Manifest) {
			a := &m.Releases[0].Artifacts[0]
			a.Attestations[0].Key = publish.ProvenanceKey(engine)
			if a.Key == engine {
				a.Attestations[0].Key = cliProv
			}
		}, "lists it as the https://slsa.dev/provenance/v1 attestation of"},
		{"ErrManifestEditedUnsigned", genuine, nil, ""},
	}
	manifest, manifestSig := read(publish.KeyManifest), read(publish.KeyManifest+".sig")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() {
				writeTestFile(t, filepath.Join(store, cliProv), genuine)
				writeTestFile(t, filepath.Join(store, publish.KeyManifest), manifest)
				writeTestFile(t, filepath.Join(store, publish.KeyManifest+".sig"), manifestSig)
			})
			if tt.write == nil {
				os.Remove(filepath.Join(store, cliProv))
			} else {
				writeTestFile(t, filepath.Join(store, cliProv), tt.write)
			}
			want := tt.want
			switch {
			case tt.edit != nil:
				relist(t, store, key, tt.edit)
			case want == "":
				// releases.json relisted without the key: its own
				// signature fails first.
				writeTestFile(t, filepath.Join(store, publish.KeyManifest), bytes.Replace(manifest, []byte(sha256Hex(genuine)), []byte(sha256Hex(tampered)), 1))
				want = "releases.json: INVALID"
			}
			out, _, err := pubRun(t, "verify", "--key", pub, store)
			if err == nil || shell.ExitCode(err) != 1 || !strings.Contains(err.Error(), want) {
				t.Fatalf("verify TREE = %v (exit %d)\n%s\nwant exit 1 saying %q", err, shell.ExitCode(err), out, want)
			}
			t.Logf("refused: %v", err)
		})
	}
}
