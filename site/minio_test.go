package site_test

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
	"github.com/wharfhq/wharf/site"
)

// TestMinIO serves a tree from a real MinIO: streaming (with resume and
// signatures), presigned redirects, and a MinIO that dies and comes back.
func TestMinIO(t *testing.T) {
	m := testenv.NewMinIO(t) // of its own: the test kills it
	st := s3test.Store(t, m, "releases", s3.Options{MaxRetries: 1})
	tr := newTree(t, st)
	tr.big["treasury-node"] = 3<<20 + 5
	c := testenv.NewClock(time.Now().UTC())
	cr := newCreds(t, c)
	url, _ := serve(t, site.Config{Store: st, Auth: cr.db, Now: c.Now})
	tr.baseURL = url
	tr.publish("26.1.2")
	node := key(t, "26.1.2", "treasury-node", "x86")
	dir := t.TempDir()

	t.Run("Stream", func(t *testing.T) {
		got := curl(t, "-fL", "-u", cr.fullKey+":", url+"/x86/treasury-node")
		if sha256.Sum256([]byte(got)) != sha256.Sum256(tr.files[node]) {
			t.Error("streamed bytes differ")
		}
		if code := status(t, "-L", "-u", cr.basicKey+":", url+"/x86/treasury-node"); code != 403 {
			t.Errorf("basic key on an image: %d, want 403", code)
		}
	})
	t.Run("Resume", func(t *testing.T) {
		out := filepath.Join(dir, "node.tar")
		writeFile(t, out, tr.files[node][:1<<20])
		curl(t, "-f", "-C", "-", "-o", out, "-H", "Authorization: Bearer "+cr.alice, url+"/"+node)
		got, _ := os.ReadFile(out)
		if sha256.Sum256(got) != sha256.Sum256(tr.files[node]) {
			t.Error("resumed download differs")
		}
	})
	t.Run("SigVerifies", func(t *testing.T) {
		openssl := testenv.Tool(t, "openssl")
		writeFile(t, filepath.Join(dir, "art"), tr.files[node])
		writeFile(t, filepath.Join(dir, "sig.b64"), []byte(curl(t, "-fL", url+"/x86/treasury-node/sig")))
		writeFile(t, filepath.Join(dir, "dl.pub"), []byte(curl(t, "-f", url+"/dl.pub")))
		exec.Command(openssl, "base64", "-d", "-A", "-in", filepath.Join(dir, "sig.b64"), "-out", filepath.Join(dir, "sig")).Run()
		out, err := exec.Command(openssl, "dgst", "-sha256", "-verify", filepath.Join(dir, "dl.pub"), "-signature", filepath.Join(dir, "sig"), filepath.Join(dir, "art")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Verified OK") {
			t.Errorf("openssl: %v %s", err, out)
		}
	})
	t.Run("Presign", func(t *testing.T) {
		purl, _ := serve(t, site.Config{Store: st, Auth: cr.db, Now: c.Now, Presign: true})
		resp, _ := get(t, "GET", purl+"/"+node, "Authorization", "Bearer "+cr.alice)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != 302 || !strings.HasPrefix(loc, m.URL()) || !strings.Contains(loc, "response-content-disposition") {
			t.Fatalf("presign: %d %q", resp.StatusCode, loc)
		}
		// curl follows to MinIO (without our credentials) and names the
		// file from MinIO's Content-Disposition.
		cmd := exec.Command(testenv.Tool(t, "curl"), "-fsSLOJ", "-u", cr.fullKey+":", purl+"/x86/treasury-node")
		cmd.Dir = t.TempDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("curl via presigned URL: %v %s", err, out)
		}
		got, err := os.ReadFile(filepath.Join(cmd.Dir, "treasury-node-26.1.2-amd64.tar"))
		if err != nil || sha256.Sum256(got) != sha256.Sum256(tr.files[node]) {
			t.Errorf("presigned download: %v", err)
		}
		if code := status(t, purl+"/"+node); code != 401 {
			t.Errorf("presign without credentials: %d, want 401", code)
		}
	})
	t.Run("StoreGoneThenBack", func(t *testing.T) {
		if resp, body := get(t, "GET", url+"/healthz"); resp.StatusCode != 200 {
			t.Errorf("/healthz with MinIO up = %d %s", resp.StatusCode, body)
		}
		m.Kill()
		if resp, body := get(t, "GET", url+"/healthz"); resp.StatusCode != 503 {
			t.Errorf("/healthz with MinIO down = %d %s, want 503", resp.StatusCode, body)
		}
		for _, p := range []string{"/" + node, "/latest", "/x86/treasury-node/sig"} {
			resp, body := get(t, "GET", url+p, "Authorization", "Bearer "+cr.alice)
			if p == "/x86/treasury-node/sig" {
				// The redirect comes from the cached manifest; the signature
				// itself is in the store.
				resp, body = get(t, "GET", url+resp.Header.Get("Location"))
			}
			var er site.Error
			json.Unmarshal(body, &er)
			if resp.StatusCode != 503 || er.Code != 14 {
				t.Errorf("MinIO down: GET %s = %d %s, want 503 code 14", p, resp.StatusCode, body)
			}
		}
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		// MinIO answers 503 itself until it has initialised; so does
		// /healthz, then 200, with no restart of the server.
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			resp, body := get(t, "GET", url+"/healthz")
			if resp.StatusCode == 200 {
				break
			}
			if resp.StatusCode != 503 || time.Now().After(deadline) {
				t.Fatalf("/healthz after MinIO came back = %d %s", resp.StatusCode, body)
			}
			<-tick.C
		}
		got := curl(t, "-fL", "-u", cr.fullKey+":", url+"/x86/treasury-node")
		if sha256.Sum256([]byte(got)) != sha256.Sum256(tr.files[node]) {
			t.Error("after MinIO came back: bytes differ")
		}
	})
}
