package publish_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

// goInput writes cosign's executable (a Go program built from its
// module, with its build info) into a fresh input dir as treasury-cli's
// Linux build, edited by edit, and returns the dir and the file.
func goInput(t *testing.T, edit func([]byte) []byte) (dir, file string) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Fatalf("needs a Linux executable of amd64 or arm64, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	b, err := os.ReadFile(testenv.Tool(t, "cosign"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		b = edit(bytes.Clone(b))
	}
	dir = filepath.Join(t.TempDir(), "input")
	os.MkdirAll(dir, 0o755)
	file = filepath.Join(dir, "treasury-cli-linux-"+runtime.GOARCH)
	if err := os.WriteFile(file, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func partialScan(t *testing.T, dir string) []publish.Input {
	t.Helper()
	in, err := publish.DefaultConfig().ScanInput(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestGoSBOM: a Go executable's SBOM is made from its embedded build
// info (every module and version, the Go version, the build settings),
// attested beside the artifact, listed in releases.json and accepted by
// VerifyAttestation and by cosign verify-blob-attestation --type cyclonedx.
func TestGoSBOM(t *testing.T) {
	s, pubPath := testSigner(t)
	pub, _ := s.PublicKey(context.Background())
	dir, _ := goInput(t, nil)
	root := t.TempDir()
	p := newPublisher(t, dirStore(t, root), s)
	if _, err := p.Publish(context.Background(), "26.1.1", partialScan(t, dir)); err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, root)
	rel, _ := m.Find("26.1.1")
	a := rel.Artifacts[0]
	if len(a.Attestations) != 1 || a.Attestations[0].PredicateType != publish.PredicateCycloneDX {
		t.Fatalf("releases.json lists %+v, want the SBOM alone (no build known: no provenance)", a.Attestations)
	}
	bom, envPath := attestedSBOM(t, pub, root, a)
	props := map[string]string{}
	for _, p := range *bom.Metadata.Component.Properties {
		props[p.Name] = p.Value
	}
	have := map[string]bool{}
	if bom.Components != nil {
		for _, c := range *bom.Components {
			have[c.PackageURL] = true
		}
	}
	// What go version -m (the toolchain, not our code) reads in it.
	out, err := exec.Command("go", "version", "-m", testenv.Tool(t, "cosign")).Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		switch {
		case len(f) == 1 && strings.Contains(f[0], ": go"):
			if v := f[0][strings.Index(f[0], ": ")+2:]; props["cdx:go:version"] != v {
				t.Errorf("SBOM says Go %q, go version -m %q", props["cdx:go:version"], v)
			}
		case f[0] == "dep" && len(f) >= 3:
			deps++
			if !have["pkg:golang/"+f[1]+"@"+f[2]] {
				t.Errorf("SBOM lacks %s %s", f[1], f[2])
			}
		case f[0] == "build" && len(f) >= 2:
			k, v, _ := strings.Cut(f[1], "=")
			if props["cdx:go:build:"+k] != strings.Trim(v, "\"") {
				t.Errorf("SBOM build setting %s = %q, go version -m %q", k, props["cdx:go:build:"+k], v)
			}
		}
	}
	if deps < 50 || len(have) != deps {
		t.Errorf("SBOM lists %d modules, go version -m %d", len(have), deps)
	}

	cosign := testenv.Tool(t, "cosign")
	home := t.TempDir()
	cmd := exec.Command(cosign, "verify-blob-attestation", "--key", pubPath, "--type", "cyclonedx",
		"--signature", envPath, publish.CosignOffline, filepath.Join(root, a.Key))
	cmd.Env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign refused the SBOM attestation: %v\n%s", err, out)
	}
}

// attestedSBOM is the SBOM attested beside a in the tree at root, and the
// envelope's path, after checking the envelope against pub.
func attestedSBOM(t *testing.T, pub *ecdsa.PublicKey, root string, a publish.Artifact) (cdx.BOM, string) {
	t.Helper()
	envPath := filepath.Join(root, publish.SBOMAttestationKey(a.Key))
	env, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatalf("%s has no SBOM attestation: %v", a.Key, err)
	}
	st, err := publish.VerifyAttestation(pub, env, a.FileName(), a.SHA256, publish.PredicateCycloneDX)
	if err != nil {
		t.Fatal(err)
	}
	var bom cdx.BOM
	if err := json.Unmarshal(st.Predicate, &bom); err != nil {
		t.Fatal(err)
	}
	return bom, envPath
}

// jobSBOM is a build job's CycloneDX SBOM of the file of digest sum.
func jobSBOM(sum string) []byte {
	return fmt.Appendf(nil, `{"bomFormat":"CycloneDX","specVersion":"1.6","version":1,"metadata":{"component":{"type":"container","name":"treasury-node","hashes":[{"alg":"SHA-256","content":%q}]}},"components":[{"type":"library","name":"openssl","version":"3.0.15"}]}`, sum)
}

// TestJobSBOM: an image's SBOM from the build job, beside it, is attested
// when it names the image's SHA-256.
func TestJobSBOM(t *testing.T) {
	s, _ := testSigner(t)
	pub, _ := s.PublicKey(context.Background())
	dir := demoInputs(t, "job-sbom")
	img := filepath.Join(dir, "treasury-node-amd64.tar")
	b, _ := os.ReadFile(img)
	os.WriteFile(img+publish.SBOMSuffix, jobSBOM(fmt.Sprintf("%x", sha256.Sum256(b))), 0o644)
	root := t.TempDir()
	if _, err := newPublisher(t, dirStore(t, root), s).Publish(context.Background(), "26.1.1", scan(t, dir)); err != nil {
		t.Fatal(err)
	}
	rel, _ := readManifest(t, root).Find("26.1.1")
	a, _ := rel.Artifact("treasury-node", "x86")
	env, _ := os.ReadFile(filepath.Join(root, publish.SBOMAttestationKey(a.Key)))
	st, err := publish.VerifyAttestation(pub, env, a.FileName(), a.SHA256, publish.PredicateCycloneDX)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(st.Predicate), "openssl") {
		t.Errorf("the attested SBOM is not the job's: %s", st.Predicate)
	}
	if other, _ := rel.Artifact("treasury-node", "arm"); len(other.Attestations) != 0 {
		t.Errorf("an image without an SBOM got attestations %+v", other.Attestations)
	}
}

// TestSBOMRefused: an SBOM that cannot be published (the job's for other
// bytes, without a digest, not CycloneDX, for a file not there; a Go
// executable's corrupt build info) is a problem at wharf check and refuses
// publish before anything is written.
func TestSBOMRefused(t *testing.T) {
	s, _ := testSigner(t)
	magic := []byte("\xff Go buildinf:")
	for _, tc := range []struct {
		name  string
		input func(t *testing.T) string
		want  string
	}{
		{"BuildLineCorrupt", func(t *testing.T) string {
			dir, _ := goInput(t, func(b []byte) []byte {
				i := bytes.Index(b, magic)
				j := bytes.Index(b[i:], []byte("\nbuild\t-compiler=")) + i
				b[j+len("\nbuild\t-compiler")] = '-'
				return b
			})
			return dir
		}, "could not parse Go build info"},
		{"BuildInfoTruncated", func(t *testing.T) string {
			dir, _ := goInput(t, func(b []byte) []byte {
				i := bytes.Index(b, magic)
				copy(b[i+32:], []byte{0xff, 0xff, 0xff, 0xff})
				return b
			})
			return dir
		}, "Go build info embedded in the executable cannot be read"},
		{"JobSBOMOtherBytes", func(t *testing.T) string {
			dir := demoInputs(t, "sbom-other")
			os.WriteFile(filepath.Join(dir, "treasury-node-amd64.tar"+publish.SBOMSuffix), jobSBOM(strings.Repeat("ab", 32)), 0o644)
			return dir
		}, "is about bytes of sha256 abab"},
		{"JobSBOMNoDigest", func(t *testing.T) string {
			dir := demoInputs(t, "sbom-nodigest")
			os.WriteFile(filepath.Join(dir, "treasury-node-amd64.tar"+publish.SBOMSuffix), []byte(`{"bomFormat":"CycloneDX","specVersion":"1.6"}`), 0o644)
			return dir
		}, "names no SHA-256"},
		{"JobSBOMNotCycloneDX", func(t *testing.T) string {
			dir := demoInputs(t, "sbom-spdx")
			os.WriteFile(filepath.Join(dir, "treasury-node-amd64.tar"+publish.SBOMSuffix), []byte(`{"spdxVersion":"SPDX-2.3"}`), 0o644)
			return dir
		}, "bomFormat"},
		{"JobSBOMNotJSON", func(t *testing.T) string {
			dir := demoInputs(t, "sbom-xml")
			os.WriteFile(filepath.Join(dir, "engine-linux-amd64"+publish.SBOMSuffix), []byte(`<bom/>`), 0o644)
			return dir
		}, "not CycloneDX JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.input(t)
			_, problems, err := publish.DefaultConfig().CheckInput(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Errorf("check: %q, want a problem saying %q", problems, tc.want)
			}
			root := t.TempDir()
			_, err = newPublisher(t, dirStore(t, root), s).Publish(context.Background(), "26.1.1", partialScan(t, dir))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("publish: %v, want a refusal saying %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("publish refused but wrote %d entries", len(ents))
			}
		})
	}
	t.Run("SBOMOfNoFile", func(t *testing.T) {
		dir := demoInputs(t, "sbom-orphan")
		os.WriteFile(filepath.Join(dir, "engine-linux-amd64.tar.gz"+publish.SBOMSuffix), jobSBOM(strings.Repeat("ab", 32)), 0o644)
		_, err := publish.DefaultConfig().ScanInput(dir, false)
		if err == nil || !strings.Contains(err.Error(), "an SBOM of engine-linux-amd64.tar.gz, which is not in the directory") {
			t.Fatalf("scan: %v", err)
		}
	})
}

// TestSBOMFromArchive: a Go executable packed by the build job
// (treasury-cli-linux-ARCH.tar.gz holding treasury at its top) gets the
// same SBOM as the raw executable, read in the one pass that hashes the
// archive.
func TestSBOMFromArchive(t *testing.T) {
	s, _ := testSigner(t)
	pub, _ := s.PublicKey(context.Background())
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Fatalf("needs a Linux executable of amd64 or arm64, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	exe, err := os.ReadFile(testenv.Tool(t, "crane")) // a Go program of 17 MB, quicker to pack than cosign
	if err != nil {
		t.Fatal(err)
	}
	name := "treasury-cli-linux-" + runtime.GOARCH
	rawDir, arcDir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(rawDir, name), exe, 0o755)
	writeFile(t, filepath.Join(arcDir, name+".tar.gz"), tarOf(t, true, tarFile{"treasury", 0o755, exe}), 0o644)
	predicate := func(dir string) string {
		t.Helper()
		root := t.TempDir()
		if _, err := newPublisher(t, dirStore(t, root), s).Publish(context.Background(), "26.1.1", partialScan(t, dir)); err != nil {
			t.Fatal(err)
		}
		rel, _ := readManifest(t, root).Find("26.1.1")
		bom, _ := attestedSBOM(t, pub, root, rel.Artifacts[0])
		bom.SerialNumber, bom.Metadata.Timestamp = "", "" // differ per run
		b, _ := json.Marshal(bom)
		return string(b)
	}
	if raw, arc := predicate(rawDir), predicate(arcDir); raw != arc {
		t.Errorf("the archive's SBOM differs from the raw executable's:\n%s\n%s", arc, raw)
	}
}

// TestBuildInfoMagicAnywhere: a file that is no Go executable to
// debug/buildinfo but holds the build info's magic is refused as corrupt
// wherever the magic is, across the boundaries of the reads that hash the
// file too; without it, it is an executable of another language (no SBOM,
// no problem). Raw and in an archive; offsets from a seeded generator.
func TestBuildInfoMagicAnywhere(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	magic := "\xff Go buildinf:"
	offsets := []int{0, 32<<10 - 1, 32<<10 - len(magic) + 1, 32<<10 - len(magic), 64<<10 + 3}
	for range 6 {
		offsets = append(offsets, 1+rng.IntN(200<<10))
	}
	for _, off := range offsets {
		for _, archive := range []bool{false, true} {
			for _, withMagic := range []bool{true, false} {
				body := make([]byte, off+len(magic)+rng.IntN(40<<10))
				for i := range body {
					body[i] = 'a' + byte(rng.IntN(26))
				}
				copy(body, "#!/bin/sh\n")
				if withMagic {
					copy(body[max(off, 10):], magic)
				}
				dir := demoInputs(t, "magic")
				name := filepath.Join(dir, "engine-linux-amd64")
				os.Remove(name)
				if archive {
					writeFile(t, name+".tar.gz", tarOf(t, true, tarFile{"engine", 0o755, body}), 0o644)
				} else {
					writeFile(t, name, body, 0o755)
				}
				_, problems, err := publish.DefaultConfig().CheckInput(dir)
				if err != nil {
					t.Fatal(err)
				}
				got := strings.Contains(strings.Join(problems, "\n"), "Go build info embedded in the executable cannot be read")
				if got != withMagic {
					t.Errorf("seed %d: magic at %d of %d bytes (in it: %v, archive: %v): refused %v; problems %q", seed, max(off, 10), len(body), withMagic, archive, got, problems)
				}
			}
		}
	}
}
