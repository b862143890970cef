package hosting_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
		KeyRate:    10, // wharf serve's --rate-key 10/s
		KeyBurst:   10,
	}
}

// TestNginxKeyRate: wharf's --rate-key as nginx's limit_req counts it
// (per second, or per minute when that is not whole; the burst beyond the
// first request), and no limit at all for 0.
func TestNginxKeyRate(t *testing.T) {
	for _, tt := range []struct {
		rate  float64
		burst int
		want  []string // in the configuration; nil: no limit_req
	}{
		{10, 10, []string{"rate=10r/s;", "burst=9 nodelay;"}},
		{1, 1, []string{"rate=1r/s;", "burst=0 nodelay;"}},
		{0.5, 30, []string{"rate=30r/m;", "burst=29 nodelay;"}},
		{1.0 / 3600, 1, []string{"rate=1r/m;", "burst=0 nodelay;"}},
		{0, 0, nil},
	} {
		t.Run(fmt.Sprint(tt.rate), func(t *testing.T) {
			o := defaultOptions()
			o.KeyRate, o.KeyBurst = tt.rate, tt.burst
			var buf bytes.Buffer
			if err := hosting.Nginx(&buf, o); err != nil {
				t.Fatal(err)
			}
			conf := buf.String()
			if tt.want == nil && strings.Contains(conf, "limit_req") {
				t.Errorf("rate 0: the configuration limits")
			}
			for _, w := range tt.want {
				if !strings.Contains(conf, w) {
					t.Errorf("rate %v, burst %d: no %q in the configuration", tt.rate, tt.burst, w)
				}
			}
		})
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
		{"NegativeKeyRate", func(o *hosting.Options) { o.KeyRate = -1 }},
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

// pinnedRelease is a release with a binary for two builds and an image,
// for the --pin-latest configurations.
func pinnedRelease(v, kind string) *publish.Release {
	art := func(name, k, b, osName, plat, key string) publish.Artifact {
		return publish.Artifact{Name: name, Kind: k, Build: b, OS: osName, Platform: plat, Key: key}
	}
	return &publish.Release{Version: v, Kind: kind, Artifacts: []publish.Artifact{
		art("engine", publish.KindBinary, "x86", "linux", "amd64", "bin/"+v+"/engine-"+v+"-linux-amd64.tar.gz"),
		art("engine", publish.KindBinary, "mac", "macos", "arm64", "bin/"+v+"/engine-"+v+"-macos-arm64.tar.gz"),
		art("engine", publish.KindImage, "x86", "linux", "amd64", "img/"+v+"/engine-"+v+"-amd64.tar"),
		art("treasury-node", publish.KindImage, "arm", "linux", "arm64", "img/"+v+"/treasury-node-"+v+"-arm64.tar"),
	}}
}

// TestPinned keeps the configurations with latest and preview written in
// (wharf hosting --pin-latest): the first artifact of a name and build
// wins, as in wharf serve, and mac is also macos.
func TestPinned(t *testing.T) {
	o := defaultOptions()
	o.Latest = pinnedRelease("26.1.1", publish.KindRelease)
	o.Preview = pinnedRelease("26.2.0-pre.1", publish.KindPreview)
	for _, tt := range []struct {
		name   string
		render func(io.Writer, hosting.Options) error
		want   []string
	}{
		{"nginx", hosting.Nginx, []string{
			`location = /x86/engine { add_header Cache-Control "no-cache" always; return 302 /bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz; }`,
			`location = /latest/macos/engine/sig { add_header Cache-Control "no-cache" always; return 302 /bin/26.1.1/engine-26.1.1-macos-arm64.tar.gz/sig; }`,
			`location = /preview/arm/treasury-node { add_header Cache-Control "no-cache" always; return 302 /img/26.2.0-pre.1/treasury-node-26.2.0-pre.1-arm64.tar; }`,
		}},
		{"caddy", hosting.Caddy, []string{
			"\t\t/x86/engine /bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz\n",
			"\t\t/preview/mac/engine/sig /bin/26.2.0-pre.1/engine-26.2.0-pre.1-macos-arm64.tar.gz/sig\n",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := o
			if tt.name == "caddy" {
				o.Listen = ""
			}
			var buf bytes.Buffer
			if err := tt.render(&buf, o); err != nil {
				t.Fatal(err)
			}
			golden(t, buf.Bytes())
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("no %q", w)
				}
			}
			if strings.Contains(buf.String(), "/x86/engine /img/") || strings.Contains(buf.String(), "location = /x86/engine { add_header Cache-Control \"no-cache\" always; return 302 /img/") {
				t.Error("the image engine shadows the binary engine listed first")
			}
		})
	}
}

// TestPinnedNames: a pinned name that a configuration could not hold
// safely is refused, never written.
func TestPinnedNames(t *testing.T) {
	for _, name := range []string{"a;b", "a b", "a$b", "a}b", "../x", ".hidden", "a/b"} {
		o := defaultOptions()
		r := pinnedRelease("26.1.1", publish.KindRelease)
		r.Artifacts[0].Name = name
		o.Latest = r
		o.Listen = ""
		if err := hosting.Nginx(&bytes.Buffer{}, o); err == nil {
			t.Errorf("nginx: name %q written", name)
		}
		if err := hosting.Caddy(&bytes.Buffer{}, o); err == nil {
			t.Errorf("caddy: name %q written", name)
		}
	}
}
