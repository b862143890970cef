package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
)

// registryCreds is a client's credentials for the registry: a Basic user
// name and password ("" for none).
type registryCreds struct{ user, pass string }

// dockerConfig writes a docker config.json with creds for host into a
// new directory (DOCKER_CONFIG), which crane, cosign and the Docker CLI
// read; none when creds are empty.
func dockerConfig(t *testing.T, host string, c registryCreds) string {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{"auths": map[string]any{}}
	if c.user != "" {
		cfg["auths"] = map[string]any{host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(c.user + ":" + c.pass))}}
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRegistryClients: real registry clients pull the images of a tree
// publish wrote, through wharf serve alone and through the nginx and
// Caddy recipes (which pass /v2/ to wharf; nginx serves the blobs wharf
// allows from the tree itself): anonymously and with a basic
// organisation's key refused, with a full organisation's key and with an
// access token (docker login -u token) pulled with the index digest
// releases.json names, and cosign verifies the signature offline.
func TestRegistryClients(t *testing.T) {
	crane := testenv.Tool(t, "crane")
	docker := testenv.Tool(t, "docker") // the CLI alone: manifest inspect needs no engine
	skopeo := testenv.Tool(t, "skopeo")
	cosign := testenv.Tool(t, "cosign")
	ctrd := testenv.NewContainerd(t)
	// Every client, through every route, comes from 127.0.0.1 with one of
	// two credentials, a few hundred requests in a few seconds: what is
	// tested here is that they pull, not the limits (TestRegistryRateLimit).
	e := newHostingEnv(t, "--rate-ip", "0", "--rate-key", "0")
	db := filepath.Join(e.dir, "wharf.db")
	mustRun(t, "org", "create", "globex", "--level", "full", "--db", db)
	fullKey := lastLine(mustRun(t, "apikey", "create", "--org", "globex", "--db", db))
	mustRun(t, "user", "add", "carol", "--org", "globex", "--db", db)
	fullToken := lastLine(mustRun(t, "token", "create", "--user", "carol", "--db", db))

	otherKey := filepath.Join(t.TempDir(), "other.key")
	mustRun(t, "keygen", "--out", otherKey)
	otherPub := strings.TrimSuffix(otherKey, ".key") + ".pub"
	node := releasedImage(t, e.store, "26.1.1", "treasury-node")

	fronts := map[string]string{"wharf": e.wharf}
	for _, proxy := range []string{"nginx", "caddy"} {
		if _, err := exec.LookPath(proxy); err != nil {
			testenv.Need(t, proxy, err)
		}
		fronts[proxy] = startProxy(t, e, proxy).URL()
	}
	for front, base := range fronts {
		t.Run("API/"+front, func(t *testing.T) {
			full := "Basic " + b64(fullKey+":x")
			errCode := func(body []byte) string {
				var e struct{ Errors []struct{ Code string } }
				if json.Unmarshal(body, &e) != nil || len(e.Errors) != 1 {
					return string(body)
				}
				return e.Errors[0].Code
			}
			layer := node.Platforms[0].Manifest
			for _, tc := range []struct {
				name, method, path, auth string
				status                   int
				code                     string // the registry error code
			}{
				{"LoginAnonymous", "GET", "/v2/", "", 401, "UNAUTHORIZED"},
				{"LoginBadKey", "GET", "/v2/", "Basic " + b64("wk_nope:x"), 401, "UNAUTHORIZED"},
				{"Login", "GET", "/v2/", full, 200, ""},
				{"BasicOrg", "GET", "/v2/treasury-node/manifests/26.1.1", "Basic " + b64(e.key+":x"), 403, "DENIED"},
				{"NoImage", "GET", "/v2/nope/manifests/latest", full, 404, "NAME_UNKNOWN"},
				{"NoTag", "GET", "/v2/treasury-node/manifests/9.9.9", full, 404, "MANIFEST_UNKNOWN"},
				{"NoBlob", "GET", "/v2/treasury-node/blobs/sha256:" + strings.Repeat("0", 64), full, 404, "BLOB_UNKNOWN"},
				{"BadDigest", "GET", "/v2/treasury-node/blobs/sha256:xyz", full, 404, "NAME_UNKNOWN"},
				{"Push", "PUT", "/v2/treasury-node/manifests/x", full, 405, "UNSUPPORTED"},
				{"Head", "HEAD", "/v2/treasury-node/manifests/26.1.1", full, 200, ""},
				{"ByDigest", "GET", "/v2/treasury-node/manifests/" + layer, full, 200, ""},
			} {
				resp, body := hget(t, tc.method, base+tc.path, "Authorization", tc.auth)
				if resp.StatusCode != tc.status {
					t.Errorf("%s: %s %s = %d, want %d: %s", tc.name, tc.method, tc.path, resp.StatusCode, tc.status, body)
					continue
				}
				if tc.code != "" && tc.method != "HEAD" && errCode(body) != tc.code {
					t.Errorf("%s: error %s, want %s", tc.name, errCode(body), tc.code)
				}
				if tc.status == 401 && resp.Header.Get("WWW-Authenticate") != `Basic realm="wharf"` {
					t.Errorf("%s: WWW-Authenticate %q", tc.name, resp.Header.Get("WWW-Authenticate"))
				}
			}
			resp, _ := hget(t, "HEAD", base+"/v2/treasury-node/manifests/26.1.1", "Authorization", full)
			if resp.Header.Get("Docker-Content-Digest") != node.Index || resp.Header.Get("Content-Type") != "application/vnd.oci.image.index.v1+json" {
				t.Errorf("HEAD the tag: digest %q, type %q", resp.Header.Get("Docker-Content-Digest"), resp.Header.Get("Content-Type"))
			}
			var im struct{ Layers []struct{ Digest string } }
			_, mb := hget(t, "GET", base+"/v2/treasury-node/manifests/"+layer, "Authorization", full)
			if json.Unmarshal(mb, &im) != nil || len(im.Layers) != 1 {
				t.Fatalf("manifest %s", mb)
			}
			resp, body := hget(t, "GET", base+"/v2/treasury-node/blobs/"+im.Layers[0].Digest, "Authorization", full, "Range", "bytes=0-9")
			if resp.StatusCode != 206 || len(body) != 10 || resp.Header.Get("Docker-Content-Digest") != im.Layers[0].Digest {
				t.Errorf("a blob's first 10 bytes = %d, %d bytes, digest %q", resp.StatusCode, len(body), resp.Header.Get("Docker-Content-Digest"))
			}
			if front == "nginx" {
				// nginx serves the blob from the tree (its own ETag: the
				// file's time in seconds and its size), wharf only decided.
				fi, err := os.Stat(filepath.Join(e.store, publish.RegistryBlobKey("treasury-node", im.Layers[0].Digest)))
				if err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf(`"%x-%x"`, fi.ModTime().Unix(), fi.Size())
				if etag := resp.Header.Get("ETag"); etag != want || resp.Header.Get("X-Accel-Redirect") != "" {
					t.Errorf("a blob through nginx has ETag %q (nginx's: %s) and X-Accel-Redirect %q: not served by nginx from the tree", etag, want, resp.Header.Get("X-Accel-Redirect"))
				}
			}
			// The internal location is no client's, and asking wharf to hand
			// a blob back gets nothing before the credentials are allowed.
			blob := "/v2/treasury-node/blobs/" + im.Layers[0].Digest
			if resp, _ := hget(t, "GET", base+site.AccelPrefix+blob[1:], "Authorization", full); resp.StatusCode != 404 {
				t.Errorf("GET %s%s = %d, want 404", site.AccelPrefix, blob[1:], resp.StatusCode)
			}
			for _, auth := range []string{"", "Basic " + b64(e.key+":x")} {
				resp, _ := hget(t, "GET", base+blob, "Authorization", auth, site.HeaderAccel, "1")
				if resp.StatusCode/100 == 2 || resp.Header.Get("X-Accel-Redirect") != "" {
					t.Errorf("%s with %s and %q = %d, X-Accel-Redirect %q", blob, site.HeaderAccel, auth, resp.StatusCode, resp.Header.Get("X-Accel-Redirect"))
				}
			}
		})
	}

	creds := []struct {
		name string
		c    registryCreds
		ok   bool
	}{
		{"Anonymous", registryCreds{}, false},
		{"BasicKey", registryCreds{e.key, "x"}, false},
		{"FullKey", registryCreds{fullKey, "x"}, true},
		{"FullToken", registryCreds{"token", fullToken}, true},
	}
	for front, url := range fronts {
		host := strings.TrimPrefix(url, "http://")
		ref := host + "/treasury-node:26.1.1"
		for _, cr := range creds {
			t.Run(front+"/"+cr.name, func(t *testing.T) {
				cfg := dockerConfig(t, host, cr.c)
				run := func(name string, args ...string) (string, error) {
					cmd := exec.Command(name, args...)
					home := t.TempDir()
					cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+cfg, "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=true")
					out, err := cmd.CombinedOutput()
					return string(out), err
				}
				check := func(client string, out string, err error) {
					t.Helper()
					if cr.ok && err != nil {
						t.Errorf("%s refused with %s: %v\n%s", client, cr.name, err, out)
					}
					if !cr.ok && err == nil {
						t.Errorf("%s pulled with %s:\n%s", client, cr.name, out)
					}
				}
				before := pulls(t, e.wharf)
				out, err := run(crane, "digest", "--insecure", ref)
				check("crane digest", out, err)
				if cr.ok && strings.TrimSpace(out) != node.Index {
					t.Errorf("crane digest = %q, releases.json names %s", out, node.Index)
				}
				dir := t.TempDir()
				out, err = run(crane, "pull", "--insecure", "--format", "oci", ref, dir)
				check("crane pull", out, err)
				if cr.ok {
					// What crane pulled is the index releases.json
					// names, and both its platforms' blobs.
					if idx, err := os.ReadFile(filepath.Join(dir, "index.json")); err != nil || !strings.Contains(string(idx), node.Index) {
						t.Errorf("crane pull wrote an index.json without %s: %s (%v)", node.Index, idx, err)
					}
					if after := pulls(t, e.wharf); after < before+2 {
						t.Errorf("wharf_downloads_total of treasury-node went from %d to %d for a pull of both platforms", before, after)
					}
					for _, p := range node.Platforms {
						if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(p.Manifest, "sha256:"))); err != nil {
							t.Errorf("crane pull: %v", err)
						}
					}
				}
				{
					out, err := run(docker, "manifest", "inspect", "--insecure", ref)
					check("docker manifest inspect", out, err)
					if cr.ok && !strings.Contains(out, node.Platforms[0].Manifest) {
						t.Errorf("docker manifest inspect does not list %s:\n%s", node.Platforms[0].Manifest, out)
					}
				}
				{
					args := []string{"copy", "--src-tls-verify=false", "--override-arch", "amd64", "docker://" + ref, "oci:" + filepath.Join(t.TempDir(), "oci") + ":x"}
					if cr.c.user != "" {
						args = append(args[:1], append([]string{"--src-creds", cr.c.user + ":" + cr.c.pass}, args[1:]...)...)
					}
					out, err := run(skopeo, args...)
					check("skopeo copy", out, err)
				}
				{
					// containerd pulls and unpacks (native snapshotter) the
					// platform of this machine.
					ns := strings.ToLower(front + "-" + cr.name)
					args := []string{"images", "pull", "--plain-http", "--snapshotter", "native"}
					if cr.c.user != "" {
						args = append(args, "--user", cr.c.user+":"+cr.c.pass)
					}
					out, err := ctrd.Ctr(t, ns, append(args, ref)...).CombinedOutput()
					check("ctr images pull", string(out), err)
					if cr.ok {
						ls, _ := ctrd.Ctr(t, ns, "images", "ls").CombinedOutput()
						if !strings.Contains(string(ls), node.Index) {
							t.Errorf("ctr images ls does not list %s:\n%s", node.Index, ls)
						}
					}
				}
				{
					verify := func(key string) (string, error) {
						return run(cosign, "verify", "--key", key, "--insecure-ignore-tlog=true", "--allow-insecure-registry", ref)
					}
					out, err := verify(filepath.Join(e.store, publish.KeyPublicKey))
					check("cosign verify", out, err)
					if cr.ok && !strings.Contains(out, node.Index) {
						t.Errorf("cosign verify printed no %s:\n%s", node.Index, out)
					}
					if cr.ok {
						if out, err := verify(otherPub); err == nil {
							t.Errorf("cosign verify passed with another key:\n%s", out)
						}
					}
				}
			})
		}
	}
}

// pulls is wharf_downloads_total of treasury-node at base, summed over
// builds and organisations.
func pulls(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "wharf_downloads_total{") && strings.Contains(line, `artifact="treasury-node"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

// TestRegistryRateLimit: a pull counts once against the credential's
// --rate-key, at its platform manifest; its index and blobs take nothing.
// Past the limit the registry answers 429 TOOMANYREQUESTS with a
// Retry-After in seconds, and a client's reads of the index still pass.
func TestRegistryRateLimit(t *testing.T) {
	crane := testenv.Tool(t, "crane")
	e := newHostingEnv(t, "--rate-key", "2/m", "--rate-ip", "0")
	db := filepath.Join(e.dir, "wharf.db")
	mustRun(t, "org", "create", "globex", "--level", "full", "--db", db)
	key := lastLine(mustRun(t, "apikey", "create", "--org", "globex", "--db", db))
	full := "Basic " + b64(key+":x")
	node := releasedImage(t, e.store, "26.1.1", "treasury-node")
	platform := node.Platforms[0].Manifest
	get := func(path string) *http.Response {
		t.Helper()
		resp, _ := hget(t, "GET", e.wharf+"/v2/treasury-node/"+path, "Authorization", full)
		return resp
	}
	// Indexes take nothing: many of them leave the two pulls.
	for range 5 {
		if resp := get("manifests/26.1.1"); resp.StatusCode != 200 {
			t.Fatalf("the index: %d, want 200 (an index is not counted)", resp.StatusCode)
		}
	}
	for i := range 2 {
		if resp := get("manifests/" + platform); resp.StatusCode != 200 {
			t.Fatalf("pull %d: the platform manifest: %d, want 200", i+1, resp.StatusCode)
		}
	}
	resp, body := hget(t, "GET", e.wharf+"/v2/treasury-node/manifests/"+platform, "Authorization", full)
	if resp.StatusCode != 429 || !strings.Contains(string(body), "TOOMANYREQUESTS") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the third pull in a minute: %d, Retry-After %q: %s; want 429 TOOMANYREQUESTS with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if _, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil {
		t.Errorf("Retry-After %q is not seconds", resp.Header.Get("Retry-After"))
	}
	// crane digest reads the index only: not limited.
	host := strings.TrimPrefix(e.wharf, "http://")
	cmd := exec.Command(crane, "digest", "--insecure", host+"/treasury-node:26.1.1")
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerConfig(t, host, registryCreds{key, "x"}))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != node.Index {
		t.Errorf("crane digest past the limit = %v: %s, want %s (an index is not counted)", err, out, node.Index)
	}
}

// releasedImage is the image name of release version as the releases.json
// of the directory store lists it; the test fails when it lists none.
func releasedImage(t *testing.T, store, version, name string) publish.Image {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, publish.KeyManifest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := publish.ReadManifest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	rel, ok := m.Find(version)
	if !ok {
		t.Fatalf("releases.json lists no release %s", version)
	}
	img, ok := rel.Image(name)
	if !ok || img.Index == "" {
		t.Fatalf("releases.json lists no %s image in %s: %+v", name, version, rel.Images)
	}
	return img
}
