package publish_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/publish"
)

// The golden files are rewritten with go test -update. The flag may be
// registered by another test file of the package too.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// golden compares got with testdata/<test name>.golden.
func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if updateGolden() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendered output (go test -update rewrites it); got:\n%s", path, got)
	}
}

// pageManifest is a small tree: a release, an older release and a preview,
// artifacts in an order the page must not keep (image first, public last).
func pageManifest() *publish.Manifest {
	m := &publish.Manifest{}
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for i, v := range []string{"26.1.1", "26.2.1", "26.2.2-pre.3"} {
		ver, err := publish.ParseVersion(v)
		if err != nil {
			panic(err)
		}
		r := publish.Release{Version: v, Kind: ver.Kind(), Published: day.AddDate(0, 0, 7*i)}
		for _, spec := range []publish.ArtifactSpec{
			{Name: "treasury-node", Kind: publish.KindImage, Access: publish.AccessFull},
			{Name: "engine", Kind: publish.KindBinary, Access: publish.AccessBasic},
			{Name: "treasury-cli", Kind: publish.KindBinary, Access: publish.AccessPublic},
		} {
			for _, b := range publish.Builds() {
				if spec.Kind == publish.KindImage && !b.Images {
					continue
				}
				a := publish.Artifact{
					Name: spec.Name, Kind: spec.Kind, Build: b.Name, OS: b.OS, Platform: b.Platform,
					Key:       publish.Key(spec.Kind, spec.Name, ver, b),
					Size:      int64(1500000 + 1000*len(r.Artifacts)),
					SHA256:    strings.Repeat("ab", 32),
					Signature: "MEUCIQ==",
					Access:    spec.Access,
				}
				if v == "26.2.1" {
					// The latest release with its provenance, the images
					// with an SBOM too; the others without.
					a.Attestations = []publish.Attestation{{PredicateType: publish.PredicateSLSA, Key: publish.ProvenanceKey(a.Key), SHA256: strings.Repeat("cd", 32)}}
					if spec.Kind == publish.KindImage {
						a.Attestations = append(a.Attestations, publish.Attestation{PredicateType: publish.PredicateCycloneDX, Key: publish.SBOMAttestationKey(a.Key), SHA256: strings.Repeat("ef", 32)})
					}
				}
				r.Artifacts = append(r.Artifacts, a)
			}
		}
		if v == "26.2.1" {
			r.Provenance = &publish.ReleaseProvenance{BuilderID: "https://github.com/wharfhq/treasury/.github/workflows/release.yml@refs/tags/v26.2.1",
				Repository: "https://github.com/wharfhq/treasury", Commit: strings.Repeat("5eed", 10), Ref: "refs/tags/v26.2.1"}
		}
		m.Merge(r)
	}
	return m
}

func TestRenderIndex(t *testing.T) {
	r, err := publish.NewPageRenderer()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.RenderIndex(&buf, pageManifest(), "https://dl.example.com/"); err != nil {
		t.Fatal(err)
	}
	golden(t, buf.Bytes())
}

func TestNewPageData(t *testing.T) {
	m := pageManifest()
	tests := []struct {
		name     string
		opts     publish.PageOptions
		sections []string
		notice   bool
	}{
		{"LatestAndPreview", publish.PageOptions{Latest: "26.2.1", Preview: "26.2.2-pre.3"}, []string{"26.2.1", "26.2.2-pre.3"}, false},
		{"NoPreview", publish.PageOptions{Latest: "26.2.1"}, []string{"26.2.1"}, false},
		{"ChosenVersion", publish.PageOptions{Latest: "26.2.1", Version: "26.1.1"}, []string{"26.1.1"}, false},
		{"UnknownVersion", publish.PageOptions{Latest: "26.2.1", Version: "9.9.9"}, []string{"26.2.1"}, true},
		{"PointerNotInManifest", publish.PageOptions{Latest: "27.1.1"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := publish.NewPageData(m, tt.opts)
			var got []string
			for _, s := range d.Sections {
				got = append(got, s.Version)
			}
			if strings.Join(got, ",") != strings.Join(tt.sections, ",") {
				t.Errorf("sections = %v, want %v", got, tt.sections)
			}
			if (d.Notice != "") != tt.notice {
				t.Errorf("notice = %q, want one: %v", d.Notice, tt.notice)
			}
			if len(d.Versions) != 3 || d.Versions[0].Version != "26.2.2-pre.3" || d.Versions[2].Version != "26.1.1" {
				t.Errorf("versions = %+v, want every version newest first", d.Versions)
			}
		})
	}

	t.Run("ArtifactsPerBuild", func(t *testing.T) {
		d := publish.NewPageData(m, publish.PageOptions{BaseURL: "https://dl.example.com", Latest: "26.2.1"})
		arts := d.Sections[0].Artifacts
		var names []string
		for _, a := range arts {
			var builds []string
			for _, f := range a.Files {
				builds = append(builds, f.Build)
			}
			names = append(names, a.Name+":"+strings.Join(builds, "/"))
		}
		want := "treasury-cli:x86/arm/mac engine:x86/arm/mac treasury-node:x86/arm"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("artifacts = %s, want %s", got, want)
		}
		cli := arts[0]
		if want := "curl -fsSL https://dl.example.com/install | binary=treasury-cli version=26.2.1 sh"; cli.Install != want {
			t.Errorf("install line = %q, want %q", cli.Install, want)
		}
		f := cli.Files[2]
		if f.Path != "/bin/26.2.1/treasury-cli-26.2.1-macos-arm64.tar.gz" || f.SigHref != f.Path+"/sig" {
			t.Errorf("mac file path %q, sig %q", f.Path, f.SigHref)
		}
		for _, want := range []string{
			"openssl dgst -sha256 -verify dl.pub -signature <(base64 -d treasury-cli-26.2.1-macos-arm64.tar.gz.sig) treasury-cli-26.2.1-macos-arm64.tar.gz",
			"cosign verify-blob --key dl.pub --signature treasury-cli-26.2.1-macos-arm64.tar.gz.sig --private-infrastructure=true treasury-cli-26.2.1-macos-arm64.tar.gz",
		} {
			if !strings.Contains(f.Verify, want) {
				t.Errorf("verify commands lack %q:\n%s", want, f.Verify)
			}
		}
		if want := "xattr -d com.apple.quarantine treasury-cli-26.2.1-macos-arm64.tar.gz\n"; !strings.HasPrefix(f.Use, want) {
			t.Errorf("mac use = %q, want it to start with %q", f.Use, want)
		}
		if img := arts[2].Files[0]; img.Use != "docker load -i treasury-node-26.2.1-amd64.tar" {
			t.Errorf("image use = %q", img.Use)
		}
	})
}

func TestPageDataVisitor(t *testing.T) {
	m := pageManifest()
	m.Releases[0].NotesHTML = "<p>notes</p>"
	t.Run("Prefer", func(t *testing.T) {
		for prefer, want := range map[string]string{"": "x86 arm mac", "x86": "x86 arm mac", "arm": "arm x86 mac", "mac": "mac x86 arm", "win": "x86 arm mac"} {
			d := publish.NewPageData(m, publish.PageOptions{Latest: "26.2.1", Prefer: prefer})
			r := d.Sections[0]
			var cols, mine []string
			for _, c := range r.Columns {
				cols = append(cols, c.Build)
				if c.Mine {
					mine = append(mine, c.Build)
				}
			}
			if got := strings.Join(cols, " "); got != want {
				t.Errorf("Prefer %q: columns %s, want %s", prefer, got, want)
			}
			if len(mine) > 1 || (len(mine) == 1) != (prefer != "" && prefer != "win") || len(mine) == 1 && mine[0] != prefer {
				t.Errorf("Prefer %q: marked %v", prefer, mine)
			}
			// Every row has a cell per column, in the same order, with the
			// file of that build or none (images on macOS).
			for _, a := range r.Artifacts {
				if len(a.Cells) != len(r.Columns) {
					t.Fatalf("%s: %d cells for %d columns", a.Name, len(a.Cells), len(r.Columns))
				}
				for i, c := range a.Cells {
					if c.Column != r.Columns[i] || c.File != nil && c.File.Build != c.Column.Build || (c.File == nil) != (a.Kind == publish.KindImage && c.Column.Build == "mac") {
						t.Errorf("%s: cell %d = %+v under %+v", a.Name, i, c.File, r.Columns[i])
					}
				}
			}
		}
	})
	t.Run("Notes", func(t *testing.T) {
		d := publish.NewPageData(m, publish.PageOptions{Version: "26.2.2-pre.3"})
		if d.Sections[0].Notes != "<p>notes</p>" {
			t.Errorf("notes = %q", d.Sections[0].Notes)
		}
	})
	t.Run("UseCredential", func(t *testing.T) {
		for cred, want := range map[string][]string{
			"":        {"binary=engine version=26.2.1 sh", "curl -fsSL -u API_KEY: -o engine-26.2.1-linux-amd64.tar.gz"},
			"token":   {"binary=engine version=26.2.1 token=ACCESS_TOKEN sh", `curl -fsSL -H "Authorization: Bearer ACCESS_TOKEN" -o engine-26.2.1-linux-amd64.tar.gz`},
			"api_key": {"binary=engine version=26.2.1 api_key=API_KEY sh", "curl -fsSL -u API_KEY: -o engine-26.2.1-linux-amd64.tar.gz"},
		} {
			d := publish.NewPageData(m, publish.PageOptions{BaseURL: "https://dl", Latest: "26.2.1"})
			if cred != "" {
				d.UseCredential(cred)
			}
			r := d.Sections[0]
			engine, cli := r.Artifacts[1], r.Artifacts[0]
			if !strings.HasSuffix(engine.Install, want[0]) || !strings.HasPrefix(engine.Files[0].Verify, want[1]) {
				t.Errorf("credential %q: install %q, verify %q; want %q, %q", cred, engine.Install, engine.Files[0].Verify, want[0], want[1])
			}
			if cli.Install != "curl -fsSL https://dl/install | binary=treasury-cli version=26.2.1 sh" || strings.Contains(cli.Files[0].Verify, "API_KEY") {
				t.Errorf("credential %q: a public binary's commands changed: %q", cred, cli.Install)
			}
			if r.Credential != cred || !r.NeedsLogin() || len(r.InstallLines()) != 2 {
				t.Errorf("credential %q: release says %q, needs login %v, %d install lines", cred, r.Credential, r.NeedsLogin(), len(r.InstallLines()))
			}
		}
	})
}

func TestRenderEscapes(t *testing.T) {
	m := pageManifest()
	evil := `<script>alert("x")</script>`
	r := &m.Releases[0]
	r.Artifacts[0].Name = evil
	r.Artifacts[0].Key = "bin/" + r.Version + "/" + `"><img src=x onerror=alert(1)>.tar.gz`
	r.Artifacts[0].SHA256 = `<b>bold</b>`
	p, err := publish.NewPageRenderer()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.RenderIndex(&buf, m, "https://dl.example.com"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>bold"} {
		if strings.Contains(out, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Errorf("the page does not show the escaped name")
	}
}

// TestPageStalePreviewAndPhone: a preview older than the latest release
// (26.2.2-pre.3 after 26.2.2) is folded, one newer is not; on a phone a
// release leads with its install lines, then its notes, then its table,
// folded.
func TestPageStalePreviewAndPhone(t *testing.T) {
	m := pageManifest()
	r, err := publish.NewPageRenderer()
	if err != nil {
		t.Fatal(err)
	}
	render := func(d *publish.PageData) string {
		t.Helper()
		var buf bytes.Buffer
		if err := r.Render(&buf, publish.PageTemplate, d); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	t.Run("PreviewNewer", func(t *testing.T) {
		d := publish.NewPageData(m, publish.PageOptions{Latest: "26.2.1", Preview: "26.2.2-pre.3"})
		if len(d.Sections) != 2 || d.Sections[1].Stale {
			t.Fatalf("sections %+v, want the preview not stale", d.Sections)
		}
		if page := render(d); strings.Contains(page, `class="old stale"`) {
			t.Error("a preview newer than the release is folded")
		}
	})
	t.Run("PreviewOlder", func(t *testing.T) {
		stale := pageManifest()
		stale.Merge(publish.Release{Version: "26.2.2", Kind: publish.KindRelease, Artifacts: m.Releases[0].Artifacts})
		d := publish.NewPageData(stale, publish.PageOptions{Latest: "26.2.2", Preview: "26.2.2-pre.3"})
		if len(d.Sections) != 2 || !d.Sections[1].Stale || d.Sections[0].Stale {
			t.Fatalf("sections %+v, want the preview alone stale", d.Sections)
		}
		page := render(d)
		i, j := strings.Index(page, `<details class="old stale">`), strings.Index(page, `id="v26-2-2-pre-3"`)
		if i < 0 || j < i || !strings.Contains(page, "Latest preview 26.2.2-pre.3 · ") || !strings.Contains(page, "older than the latest release</summary>") {
			t.Errorf("the stale preview is not folded:\n%s", page)
		}
	})
	t.Run("Phone", func(t *testing.T) {
		m := pageManifest()
		m.Releases[1].NotesHTML = "<p>Notes of 26.2.1.</p>"
		page := render(publish.NewPageData(m, publish.PageOptions{BaseURL: "https://dl.example.com", Latest: "26.2.1", Phone: true}))
		install := strings.Index(page, `<div class="install">`)
		notes := strings.Index(page, `<div class="notes">`)
		fold := strings.Index(page, `<details class="files">`)
		table := strings.Index(page, `<table class="downloads">`)
		if install < 0 || notes < install || fold < notes || table < fold || !strings.Contains(page, "Nothing here runs on a phone") {
			t.Errorf("phone page: install at %d, notes %d, fold %d, table %d; want them in that order", install, notes, fold, table)
		}
		desktop := render(publish.NewPageData(m, publish.PageOptions{BaseURL: "https://dl.example.com", Latest: "26.2.1"}))
		if strings.Contains(desktop, `class="files"`) || strings.Index(desktop, `<div class="notes">`) > strings.Index(desktop, `<table class="downloads">`) {
			t.Error("the desktop page folds its table or puts the notes after it")
		}
	})
}
