package publish_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testKey writes a fresh key pair as wharf keygen does and returns the
// paths of the private key and of dl.pub.
func testKey(t testing.TB) (keyPath, pubPath string) {
	t.Helper()
	priv, pub, err := publish.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyPath, pubPath = filepath.Join(dir, "dl.key"), filepath.Join(dir, "dl.pub")
	if err := os.WriteFile(keyPath, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubPath, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return keyPath, pubPath
}

// testSigner loads a fresh key from its PEM file through LoadSigner.
func testSigner(t testing.TB) (publish.Signer, string) {
	t.Helper()
	keyPath, pubPath := testKey(t)
	s, err := publish.LoadSigner(context.Background(), keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return s, pubPath
}

// opensslVerify checks with openssl, independent of our code, that sigText
// (base64 DER, the content of a .sig file) signs content under pubPEM.
func opensslVerify(t *testing.T, pubPEM, content, sigText []byte) {
	t.Helper()
	openssl := testenv.Tool(t, "openssl")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pub, file, sig := write("dl.pub", pubPEM), write("file", content), write("file.sig", sigText)
	der := filepath.Join(dir, "file.der")
	// base64 -d, as the documentation tells users.
	if out, err := exec.Command(openssl, "base64", "-d", "-A", "-in", sig, "-out", der).CombinedOutput(); err != nil {
		t.Fatalf("openssl base64 -d: %v\n%s", err, out)
	}
	out, err := exec.Command(openssl, "dgst", "-sha256", "-verify", pub, "-signature", der, file).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl dgst -verify refused the signature: %v\n%s", err, out)
	}
}

// opensslVerifyMetadata checks sigText as a signature of content as
// metadata of kind at url with the commands docs/publish.md gives a
// customer: the context built with printf, then openssl, under dash.
func opensslVerifyMetadata(t *testing.T, pubPEM []byte, kind, url string, content, sigText []byte) {
	t.Helper()
	openssl := testenv.Tool(t, "openssl")
	dir := t.TempDir()
	for name, b := range map[string][]byte{"dl.pub": pubPEM, "file": content, "file.sig": sigText} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `t="application/vnd.wharf.$KIND.v2; url=$URL"
{ printf 'DSSEv1 %d %s %d ' "${#t}" "$t" "$(wc -c <file)"; cat file; } >file.pae
"$OPENSSL" base64 -d -A -in file.sig -out file.der
"$OPENSSL" dgst -sha256 -verify dl.pub -signature file.der file.pae`
	cmd := exec.Command(testenv.Tool(t, "dash"), "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KIND="+kind, "URL="+url, "OPENSSL="+openssl)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl dgst -verify of the %s context refused the signature: %v\n%s", kind, err, out)
	}
}

func pubPEMOf(t testing.TB, s publish.Signer) []byte {
	t.Helper()
	pub, err := s.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := publish.PublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// demoInputs fills a fresh INPUT_DIR for the default config: a tiny shell
// script for every binary and build, a small docker-save-like tar for
// every image and build. seed changes every file's bytes.
func demoInputs(t testing.TB, seed string) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range publish.DefaultArtifacts() {
		for _, b := range publish.Builds() {
			switch {
			case a.Kind == publish.KindBinary:
				name := fmt.Sprintf("%s-%s-%s", a.Name, b.OS, b.Platform)
				body := fmt.Sprintf("#!/bin/sh\necho '%s %s %s/%s'\n", a.Executable, seed, b.OS, b.Platform)
				writeFile(t, filepath.Join(dir, name), []byte(body), 0o755)
			case b.Images:
				name := fmt.Sprintf("%s-%s.tar", a.Name, b.Platform)
				writeFile(t, filepath.Join(dir, name), imageTar(t, a.Name+" "+seed+" "+b.Platform, b.Platform), 0o644)
			}
		}
	}
	return dir
}

// imageTar is a small valid docker save archive of one layer for
// linux/arch.
func imageTar(t testing.TB, content, arch string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	layer := tarOf(t, false, tarFile{"etc/demo", 0o644, []byte(content + "\n")})
	files := []struct{ name, body string }{
		{"manifest.json", `[{"Config":"config.json","RepoTags":["demo:latest"],"Layers":["layer.tar"]}]`},
		{"config.json", `{"architecture":"` + arch + `","os":"linux","comment":"` + content + `","rootfs":{"type":"layers","diff_ids":["sha256:` + hex.EncodeToString(sha256Of(layer)) + `"]}}`},
		{"layer.tar", string(layer)},
	}
	for _, f := range files {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// imageLayout is an OCI image layout archive of one platform manifest
// that its index lists for linux/indexArch, whose config says
// linux/configArch, and whose one layer has the media type layerType.
func imageLayout(t testing.TB, indexArch, configArch, layerType string) []byte {
	t.Helper()
	layer := tarOf(t, false, tarFile{"etc/demo", 0o644, []byte("layout\n")})
	var files []tarFile
	blob := func(b []byte, mediaType string) oci.Descriptor {
		files = append(files, tarFile{"blobs/sha256/" + oci.Hex(oci.Digest(b)), 0o644, b})
		return oci.Descriptor{MediaType: mediaType, Digest: oci.Digest(b), Size: int64(len(b))}
	}
	cfg, err := json.Marshal(map[string]any{"architecture": configArch, "os": "linux", "rootfs": map[string]any{"type": "layers", "diff_ids": []string{oci.Digest(layer)}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := json.Marshal(oci.Manifest{SchemaVersion: 2, MediaType: oci.MediaTypeManifest,
		Config: blob(cfg, oci.MediaTypeConfig), Layers: []oci.Descriptor{blob(layer, layerType)}})
	if err != nil {
		t.Fatal(err)
	}
	md := blob(m, oci.MediaTypeManifest)
	md.Platform = &oci.Platform{OS: "linux", Architecture: indexArch}
	index, err := json.Marshal(oci.Index{SchemaVersion: 2, MediaType: oci.MediaTypeIndex, Manifests: []oci.Descriptor{md}})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, tarFile{"oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`)}, tarFile{"index.json", 0o644, index})
	return tarOf(t, false, files...)
}

func writeFile(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func sha256Of(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}
