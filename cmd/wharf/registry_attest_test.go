package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// TestRegistryAttestations: cosign verify-attestation (its own code, the
// transparency log off, no network) checks an image's provenance and SBOM
// by digest through wharf serve's /v2/ with a full organisation's key, for
// the index releases.json names and for a platform's manifest, and
// refuses them under another key and without credentials. wharf verify
// checks them too; a tampered and a swapped attestation manifest are
// refused by both.
func TestRegistryAttestations(t *testing.T) {
	cosign := testenv.Tool(t, "cosign")
	dir := t.TempDir()
	store, fullKey, addr := serveAttested(t, dir, "26.1.1", "registry-att")
	pub := filepath.Join(dir, "dl.pub")
	mustRun(t, "keygen", "--out", filepath.Join(dir, "other.key"))

	rel, _ := readTreeManifest(t, store).Find("26.1.1")
	node, _ := rel.Image("treasury-node")
	demo, _ := rel.Image("treasury-demo")
	if len(node.Attestations) != 3 {
		t.Fatalf("releases.json lists %d attestations of treasury-node, want a provenance and 2 SBOMs: %+v", len(node.Attestations), node.Attestations)
	}
	out := mustRun(t, "verify", "--key", pub, store)
	if !strings.Contains(out, "2 provenance and 4 SBOM attestations of images OK") {
		t.Errorf("wharf verify printed:\n%s", out)
	}

	full := dockerConfig(t, addr, registryCreds{fullKey, "x"})
	anon := dockerConfig(t, addr, registryCreds{})
	verify := func(cfg, pubKey, typ, ref string) (string, error) {
		cmd := exec.Command(cosign, "verify-attestation", "--key", pubKey, "--type", typ,
			"--insecure-ignore-tlog=true", "--allow-insecure-registry", ref)
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+cfg, "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=true")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	repo := addr + "/treasury-node"
	for _, tc := range []struct {
		name, cfg, key, typ, ref string
		ok                       bool
		want                     string // in a statement cosign prints
	}{
		{"Provenance", full, pub, "slsaprovenance1", repo + "@" + node.Index, true, "https://ci.example.com/release"},
		{"SBOM", full, pub, "cyclonedx", repo + "@" + node.Index, true, "openssl"},
		{"PlatformProvenance", full, pub, "slsaprovenance1", repo + "@" + node.Platforms[1].Manifest, true, "https://ci.example.com/release"},
		{"PlatformSBOM", full, pub, "cyclonedx", repo + "@" + node.Platforms[0].Manifest, true, "treasury-node-amd64"},
		{"ByTag", full, pub, "slsaprovenance1", repo + ":26.1.1", true, "https://ci.example.com/release"},
		{"OtherKey", full, filepath.Join(dir, "other.pub"), "slsaprovenance1", repo + "@" + node.Index, false, ""},
		{"Anonymous", anon, pub, "slsaprovenance1", repo + "@" + node.Index, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := verify(tc.cfg, tc.key, tc.typ, tc.ref)
			if tc.ok && err != nil {
				t.Fatalf("cosign verify-attestation refused: %v\n%s", err, out)
			}
			if !tc.ok && err == nil {
				t.Fatalf("cosign verify-attestation passed:\n%s", out)
			}
			if tc.ok && !strings.Contains(attestedStatements(out), tc.want) {
				t.Errorf("cosign printed no statement with %q:\n%s", tc.want, out)
			}
		})
	}

	tag := filepath.Join(store, filepath.FromSlash(publish.RegistryManifestKey(node.Name, oci.AttestationTag(node.Index))))
	good, err := os.ReadFile(tag)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		att  func(t *testing.T) []byte // the attestation manifest put in place of the index's
		want string                    // what wharf verify says
	}{
		// treasury-demo's index attestations, their envelopes copied into
		// treasury-node's repository: signed by the key, about another
		// image.
		{"Swapped", func(t *testing.T) []byte {
			att := readStoreFile(t, store, publish.RegistryManifestKey(demo.Name, oci.AttestationTag(demo.Index)))
			layers, _ := oci.ParseAttestationManifest(att)
			for _, l := range layers {
				copyStoreFile(t, store, publish.RegistryBlobKey(demo.Name, l.Digest), publish.RegistryBlobKey(node.Name, l.Digest))
			}
			return att
		}, "changed or swapped"},
		// The provenance's statement edited (another source commit), its
		// signature kept: a new blob the manifest points at.
		{"Tampered", func(t *testing.T) []byte {
			envKey := publish.RegistryBlobKey(node.Name, node.Attestations[0].Envelope)
			var e publish.Envelope
			if err := json.Unmarshal(readStoreFile(t, store, envKey), &e); err != nil {
				t.Fatal(err)
			}
			e.Payload = bytes.ReplaceAll(e.Payload, []byte("c0ffee"), []byte("bad000"))
			env, _ := json.Marshal(e)
			writeTestFile(t, filepath.Join(store, filepath.FromSlash(publish.RegistryBlobKey(node.Name, oci.Digest(env)))), env)
			return bytes.ReplaceAll(good, []byte(oci.Hex(node.Attestations[0].Envelope)), []byte(oci.Hex(oci.Digest(env))))
		}, "changed or swapped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeTestFile(t, tag, tc.att(t))
			t.Cleanup(func() { writeTestFile(t, tag, good) })
			if out, err := verify(full, pub, "slsaprovenance1", repo+"@"+node.Index); err == nil {
				t.Errorf("cosign verify-attestation passed:\n%s", out)
			}
			_, _, err := pubRun(t, "verify", "--key", pub, store)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("wharf verify = %v, want %q", err, tc.want)
			}
		})
	}
}

// attestedStatements are the statements of the envelopes cosign
// verify-attestation printed, one a line.
func attestedStatements(out string) string {
	var sts []string
	for _, line := range strings.Split(out, "\n") {
		var e publish.Envelope
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &e) == nil {
			sts = append(sts, string(e.Payload))
		}
	}
	return strings.Join(sts, "\n")
}

func readTreeManifest(t *testing.T, store string) *publish.Manifest {
	t.Helper()
	m, err := publish.ReadManifest(bytes.NewReader(readStoreFile(t, store, publish.KeyManifest)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readStoreFile(t *testing.T, store, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, filepath.FromSlash(key)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyStoreFile(t *testing.T, store, from, to string) {
	t.Helper()
	writeTestFile(t, filepath.Join(store, filepath.FromSlash(to)), readStoreFile(t, store, from))
}
