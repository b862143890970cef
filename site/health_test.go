package site_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/site"
)

// TestHealthzReportsTheManifest: /healthz answers with what downloads are
// served from. A releases.json that does not parse (cut off, edited by
// hand) is 503 there as it is for every short URL when no earlier one was
// read, and 503 naming the earlier one while short URLs keep redirecting
// from it; so is a store directory removed while serving.
func TestHealthzReportsTheManifest(t *testing.T) {
	root := filepath.Join(t.TempDir(), "public")
	st, err := dir.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tr := newTree(t, st)
	tr.publish("26.1.1")
	good, _ := os.ReadFile(filepath.Join(root, "releases.json"))
	cut := good[:len(good)/2]
	edited := []byte(strings.Replace(string(good), `"releases": [`, `"releases": [,`, 1))
	newServer := func() func(path string) (int, string) {
		srv, err := site.New(site.Config{Store: dir.Open(root)})
		if err != nil {
			t.Fatal(err)
		}
		return func(path string) (int, string) {
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec.Code, rec.Body.String()
		}
	}
	for _, bad := range []struct {
		name string
		body []byte
	}{{"CutOff", cut}, {"HandEdited", edited}} {
		t.Run(bad.name+"AtStart", func(t *testing.T) {
			os.WriteFile(filepath.Join(root, "releases.json"), bad.body, 0o644)
			t.Cleanup(func() { os.WriteFile(filepath.Join(root, "releases.json"), good, 0o644) })
			get := newServer()
			if code, _ := get("/x86/treasury-cli"); code != 503 {
				t.Errorf("short URL = %d, want 503", code)
			}
			if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "cannot be read") {
				t.Errorf("/healthz = %d %s, want 503 saying the tree cannot be read", code, body)
			}
		})
		t.Run(bad.name+"WhileServing", func(t *testing.T) {
			get := newServer()
			if code, body := get("/healthz"); code != 200 || !strings.Contains(body, `"releases":1,"latest":"26.1.1"`) {
				t.Errorf("/healthz = %d %s, want 200 naming 1 release, latest 26.1.1", code, body)
			}
			os.WriteFile(filepath.Join(root, "releases.json"), bad.body, 0o644)
			if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "served from the releases.json read at") {
				t.Errorf("/healthz = %d %s, want 503 naming the manifest still served", code, body)
			}
			if code, _ := get("/x86/treasury-cli"); code != 302 {
				t.Errorf("short URL = %d, want 302 from the last manifest read", code)
			}
			os.WriteFile(filepath.Join(root, "releases.json"), good, 0o644)
			if code, body := get("/healthz"); code != 200 {
				t.Errorf("/healthz after repair = %d %s, want 200", code, body)
			}
		})
	}
	t.Run("DirectoryRemovedWhileServing", func(t *testing.T) {
		get := newServer()
		if code, _ := get("/healthz"); code != 200 {
			t.Fatalf("/healthz = %d", code)
		}
		moved := root + ".away"
		if err := os.Rename(root, moved); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Rename(moved, root) })
		if code, _ := get("/healthz"); code != 503 {
			t.Errorf("/healthz = %d, want 503", code)
		}
		if code, _ := get("/x86/treasury-cli"); code != 302 {
			t.Errorf("short URL = %d, want 302 from the last manifest read (docs/serve.md)", code)
		}
		if code, _ := get("/latest/x86/treasury-cli/sig"); code != 302 {
			t.Errorf("short /sig URL = %d, want 302", code)
		}
	})
}
