package hosting_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site/hosting"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}

func defaultOptions() hosting.Options {
	return hosting.Options{
		Root:       "/srv/wharf/public",
		Upstream:   "http://127.0.0.1:8080",
		Listen:     "80",
		ServerName: "dl.example.com",
		Artifacts:  hosting.Artifacts(publish.DefaultConfig(), nil),
	}
}

// TestNginx, TestCaddy and TestS3Policy keep the rendered configurations
// for the built-in artifacts; the real servers run them in cmd/wharf's
// TestHosting and publish/s3's TestS3Policy.
func TestNginx(t *testing.T) {
	var buf bytes.Buffer
	if err := hosting.Nginx(&buf, defaultOptions()); err != nil {
		t.Fatal(err)
	}
	golden(t, buf.Bytes())
}

func TestCaddy(t *testing.T) {
	o := defaultOptions()
	o.Listen = ""
	var buf bytes.Buffer
	if err := hosting.Caddy(&buf, o); err != nil {
		t.Fatal(err)
	}
	golden(t, buf.Bytes())
}

func TestS3Policy(t *testing.T) {
	var buf bytes.Buffer
	err := hosting.S3Policy(&buf, hosting.PolicyOptions{Bucket: "releases", Prefix: "dl/", Artifacts: publish.DefaultArtifacts()})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, buf.Bytes())
	var p struct {
		Statement []struct {
			Action   []string
			Resource []string
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	for _, st := range p.Statement {
		if !slices.Equal(st.Action, []string{"s3:GetObject"}) {
			t.Errorf("actions %q, want s3:GetObject only (no listing)", st.Action)
		}
		for _, r := range st.Resource {
			for _, name := range []string{"engine", "treasury-node", "treasury-api"} {
				if strings.Contains(r, "/"+name+"-") {
					t.Errorf("resource %s opens %s", r, name)
				}
			}
		}
	}
}

func TestS3PolicyAmbiguousName(t *testing.T) {
	arts := []publish.ArtifactSpec{
		{Name: "tool", Kind: publish.KindBinary, Access: publish.AccessPublic},
		{Name: "tool-pro", Kind: publish.KindBinary, Access: publish.AccessBasic},
	}
	err := hosting.S3Policy(&bytes.Buffer{}, hosting.PolicyOptions{Bucket: "b", Artifacts: arts})
	if !errors.Is(err, hosting.ErrAmbiguousName) {
		t.Errorf("err = %v, want ErrAmbiguousName", err)
	}
}

// TestArtifactsFromManifest: a name public in the config but published
// as basic in some release is not public to the proxy, and a name only
// the manifest knows is taken in, never as public (the config does not
// say it is).
func TestArtifactsFromManifest(t *testing.T) {
	m := &publish.Manifest{Releases: []publish.Release{{Version: "26.1.1", Artifacts: []publish.Artifact{
		{Name: "treasury-cli", Kind: publish.KindBinary, Access: publish.AccessBasic},
		{Name: "extra", Kind: publish.KindImage, Access: publish.AccessPublic},
	}}}}
	got := map[string]string{}
	for _, a := range hosting.Artifacts(publish.DefaultConfig(), m) {
		got[a.Name] = a.Access
	}
	if got["treasury-cli"] != publish.AccessBasic || got["extra"] != publish.AccessBasic || got["engine"] != publish.AccessBasic {
		t.Errorf("access classes %v", got)
	}
	var buf bytes.Buffer
	if err := hosting.Nginx(&buf, hosting.Options{Root: "/srv", Upstream: "http://127.0.0.1:8080", Artifacts: hosting.Artifacts(publish.DefaultConfig(), m)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "# treasury-cli: public") {
		t.Error("treasury-cli is served without wharf though a release has it basic")
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*hosting.Options)
	}{
		{"RelativeRoot", func(o *hosting.Options) { o.Root = "public" }},
		{"RootWithSemicolon", func(o *hosting.Options) { o.Root = "/srv/a;b" }},
		{"UpstreamNotURL", func(o *hosting.Options) { o.Upstream = "127.0.0.1:8080" }},
		{"UpstreamWithPath", func(o *hosting.Options) { o.Upstream = "http://127.0.0.1:8080/wharf" }},
		{"ServerNameWithBrace", func(o *hosting.Options) { o.ServerName = "a}b" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultOptions()
			tt.edit(&o)
			if err := hosting.Nginx(&bytes.Buffer{}, o); err == nil {
				t.Error("nginx: no error")
			}
			if err := hosting.Caddy(&bytes.Buffer{}, o); err == nil {
				t.Error("caddy: no error")
			}
		})
	}
}
