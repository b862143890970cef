package publish

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/wharfhq/wharf/templates"
)

// The download page's template files in templates/.
const (
	PageTemplate      = "page.html.tmpl" // the page; its "login" template is the login form
	PageStyleTemplate = "page.css.tmpl"  // the stylesheet, served and inlined
)

const (
	pageDateLayout = "2 January 2006"
	// pageMaxVersions bounds the version picker.
	pageMaxVersions = 1000
)

// Link states of a PageFile: what following its link does for this visitor.
const (
	LinkDownload = "download" // the link downloads the file
	LinkLogin    = "login"    // the link leads to the login form first
	LinkDenied   = "denied"   // the visitor's session may not take it
)

// PageData is what the download page (templates/page.html.tmpl) is rendered
// with. NewPageData builds the part that comes from the manifest; the
// download server adds the visitor's session.
type PageData struct {
	Title   string // the page title before "Downloads", "" for the list
	BaseURL string // absolute URL of the download server, no trailing slash, for the commands
	// Static is true for index.html in the tree (static hosting): no login,
	// every release inline, relative links.
	Static bool
	Mac    bool // the visitor is on macOS: the quarantine note and terminal commands first
	// Stylesheet is the href of the stylesheet; when empty the style is inlined (Static).
	Stylesheet string
	Style      htmltemplate.CSS // the inlined style when Stylesheet is empty
	Script     string           // href of the optional script, or ""

	Sections []PageRelease // releases shown in full: latest and preview, or the chosen version
	Older    []PageRelease // Static only: every other release, collapsed
	Versions []PageVersion // every published version, newest first, for the picker
	Selected string        // the chosen version, "" for latest and preview
	Notice   string        // a message shown above the releases (e.g. an unknown version)

	Session *PageSession // nil when static or when the server has no login
}

// PageSession is the visitor's login state, filled in by the download server.
type PageSession struct {
	LoggedIn bool
	Name     string   // who: the user's name or the API key's id
	Kind     string   // "user" or "apikey"
	Orgs     []string // organisations it counts through
	Level    string   // basic, full or ""
	Allowed  []string // the access classes it may download
	Expires  time.Time
	CSRF     string // the form token for log out
}

// PageVersion is an entry of the version picker.
type PageVersion struct {
	Version string
	Kind    string // release or preview
	Label   string // "26.1.2 (latest release)"
	ID      string // the HTML id of its section
}

// PageRelease is a release as the page shows it.
type PageRelease struct {
	Title     string // "Latest release", "Latest preview", "Release 26.1.1"
	ID        string // the HTML id of its section
	Version   string
	Kind      string
	Published string // a date, "" when unknown
	Artifacts []PageArtifact
}

// PageArtifact is one artifact of a release with its builds.
type PageArtifact struct {
	Name    string
	Kind    string // binary or image
	Access  string // public, basic or full
	ID      string // HTML id
	Install string // the install script line (binaries)
	Files   []PageFile
}

// PageFile is one build of an artifact.
type PageFile struct {
	Build    string // x86, arm, mac
	Label    string // "Linux x86-64", "macOS Apple silicon"
	OS       string
	Platform string
	FileName string
	Path     string // the canonical download path, "/bin/..."
	Href     string // where its link goes (the server rewrites it per visitor)
	Link     string // LinkDownload, LinkLogin or LinkDenied
	SigHref  string // the signature: the download URL plus /sig
	Size     int64
	SizeText string
	SHA256   string
	Access   string
	Verify   string // the commands that fetch and verify the file
	Use      string // how to unpack it: tar xzf or docker load
}

// PageOptions select what NewPageData shows.
type PageOptions struct {
	BaseURL string // absolute URL of the server, for commands
	Latest  string // the version in /latest, "" when none
	Preview string // the version in /preview, "" when none
	Version string // a chosen version, "" for latest and preview
	Static  bool   // render for static hosting (index.html)
}

// NewPageData builds the page of a manifest. A chosen version that is not
// in the manifest is reported in Notice, and latest and preview are shown
// instead.
func NewPageData(m *Manifest, opts PageOptions) *PageData {
	d := &PageData{BaseURL: strings.TrimRight(opts.BaseURL, "/"), Static: opts.Static}
	if m == nil {
		m = &Manifest{}
	}
	releases := slices.Clone(m.Releases)
	slices.SortStableFunc(releases, func(a, b Release) int {
		va, errA := ParseVersion(a.Version)
		vb, errB := ParseVersion(b.Version)
		if errA != nil || errB != nil {
			return strings.Compare(b.Version, a.Version)
		}
		return vb.Compare(va)
	})
	for i, r := range releases {
		if i == pageMaxVersions {
			break
		}
		label := r.Version
		switch r.Version {
		case opts.Latest:
			label += " (latest release)"
		case opts.Preview:
			label += " (latest preview)"
		default:
			if r.Kind == KindPreview {
				label += " (preview)"
			}
		}
		d.Versions = append(d.Versions, PageVersion{Version: r.Version, Kind: r.Kind, Label: label, ID: releaseID(r.Version)})
	}
	find := func(v string) (Release, bool) {
		for _, r := range releases {
			if r.Version == v {
				return r, true
			}
		}
		return Release{}, false
	}
	if opts.Version != "" {
		if r, ok := find(opts.Version); ok {
			d.Selected = r.Version
			d.Sections = append(d.Sections, d.release(r, releaseTitle(r, opts)))
			return d
		}
		d.Notice = "That version is not published; showing the latest release instead."
		if len(opts.Version) <= 64 {
			d.Notice = fmt.Sprintf("Version %s is not published; showing the latest release instead.", opts.Version)
		}
	}
	shown := map[string]bool{}
	for _, v := range []string{opts.Latest, opts.Preview} {
		if r, ok := find(v); ok && v != "" && !shown[v] {
			shown[v] = true
			d.Sections = append(d.Sections, d.release(r, releaseTitle(r, opts)))
		}
	}
	if opts.Static {
		for _, r := range releases {
			if !shown[r.Version] {
				d.Older = append(d.Older, d.release(r, releaseTitle(r, opts)))
			}
		}
	}
	return d
}

func releaseTitle(r Release, opts PageOptions) string {
	switch {
	case r.Version == opts.Latest:
		return "Latest release"
	case r.Version == opts.Preview:
		return "Latest preview"
	case r.Kind == KindPreview:
		return "Preview " + r.Version
	}
	return "Release " + r.Version
}

// release builds the view of r: artifacts grouped by name, builds in the
// order of Builds.
func (d *PageData) release(r Release, title string) PageRelease {
	pr := PageRelease{Title: title, ID: releaseID(r.Version), Version: r.Version, Kind: r.Kind}
	if !r.Published.IsZero() {
		pr.Published = r.Published.UTC().Format(pageDateLayout)
	}
	index := map[string]int{}
	for _, a := range r.Artifacts {
		i, ok := index[a.Name]
		if !ok {
			i = len(pr.Artifacts)
			index[a.Name] = i
			pa := PageArtifact{Name: a.Name, Kind: a.Kind, Access: a.Access, ID: releaseID(r.Version + "-" + a.Name)}
			if a.Kind == KindBinary {
				pa.Install = fmt.Sprintf("curl -fsSL %s | binary=%s version=%s sh",
					shellQuote(d.BaseURL+"/"+KeyInstall), shellQuote(a.Name), shellQuote(r.Version))
			}
			pr.Artifacts = append(pr.Artifacts, pa)
		}
		pr.Artifacts[i].Files = append(pr.Artifacts[i].Files, d.file(a))
		// The strictest class of any build is the one the artifact shows.
		if accessRank(a.Access) > accessRank(pr.Artifacts[i].Access) {
			pr.Artifacts[i].Access = a.Access
		}
	}
	order := map[string]int{}
	for i, b := range Builds() {
		order[b.Name] = i
	}
	for i := range pr.Artifacts {
		slices.SortStableFunc(pr.Artifacts[i].Files, func(a, b PageFile) int { return order[a.Build] - order[b.Build] })
	}
	// Binaries before images, and the public ones (what anyone can take) first.
	slices.SortStableFunc(pr.Artifacts, func(a, b PageArtifact) int {
		if d := kindRank(a.Kind) - kindRank(b.Kind); d != 0 {
			return d
		}
		return accessRank(a.Access) - accessRank(b.Access)
	})
	return pr
}

func (d *PageData) file(a Artifact) PageFile {
	f := PageFile{
		Build:    a.Build,
		Label:    buildLabel(a),
		OS:       a.OS,
		Platform: a.Platform,
		FileName: a.FileName(),
		Path:     "/" + escapePath(a.Key),
		Size:     a.Size,
		SizeText: humanSize(a.Size),
		SHA256:   a.SHA256,
		Access:   a.Access,
		Link:     LinkDownload,
	}
	f.Href, f.SigHref = f.Path, f.Path+"/sig"
	if d.Static {
		// Relative links keep index.html working under any prefix.
		f.Href, f.SigHref = strings.TrimPrefix(f.Href, "/"), strings.TrimPrefix(f.SigHref, "/")
	}
	url := d.BaseURL + f.Path
	name := shellQuote(f.FileName)
	switch {
	case a.Kind == KindImage:
		f.Use = "docker load -i " + name
	case a.OS == "macos":
		// A browser download is quarantined; the flag goes before unpacking.
		f.Use = "xattr -d com.apple.quarantine " + name + "\ntar xzf " + name + " -C ~/.local/bin"
	default:
		f.Use = "tar xzf " + name + " -C ~/.local/bin"
	}
	auth := ""
	if a.Access != AccessPublic {
		auth = "-u \"$api_key:\" "
	}
	f.Verify = strings.Join([]string{
		fmt.Sprintf("curl -fsSL %s-o %s %s", auth, name, shellQuote(url)),
		fmt.Sprintf("curl -fsSL -o %s %s", shellQuote(f.FileName+".sig"), shellQuote(url+"/sig")),
		fmt.Sprintf("curl -fsSL -o dl.pub %s", shellQuote(d.BaseURL+"/"+KeyPublicKey)),
		fmt.Sprintf("openssl dgst -sha256 -verify dl.pub -signature <(base64 -d %s) %s", shellQuote(f.FileName+".sig"), name),
		fmt.Sprintf("cosign verify-blob --key dl.pub --signature %s --insecure-ignore-tlog=true %s", shellQuote(f.FileName+".sig"), name),
	}, "\n")
	return f
}

func buildLabel(a Artifact) string {
	osName := map[string]string{"linux": "Linux", "macos": "macOS"}[a.OS]
	if osName == "" {
		osName = a.OS
	}
	arch := map[string]string{"amd64": "x86-64", "arm64": "ARM64"}[a.Platform]
	if arch == "" {
		arch = a.Platform
	}
	if a.OS == "macos" && a.Platform == "arm64" {
		arch = "Apple silicon"
	}
	return osName + " " + arch
}

func accessRank(access string) int {
	switch access {
	case AccessPublic:
		return 0
	case AccessBasic:
		return 1
	}
	return 2
}

func kindRank(kind string) int {
	if kind == KindImage {
		return 1
	}
	return 0
}

// escapePath escapes each element of an object key for use in a URL path.
func escapePath(key string) string {
	els := strings.Split(key, "/")
	for i, el := range els {
		els[i] = url.PathEscape(el)
	}
	return strings.Join(els, "/")
}

func releaseID(version string) string { return "v" + htmlID(version) }

// htmlID makes an HTML id from s: letters, digits and dashes.
func htmlID(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell unless it is made of safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// PageRenderer renders the download page. It parses the templates once;
// it is safe for concurrent use.
type PageRenderer struct {
	page  *htmltemplate.Template
	style string
}

// NewPageRenderer parses the page and its stylesheet, failing on a missing
// or broken template.
func NewPageRenderer() (*PageRenderer, error) {
	page, err := templates.HTML(PageTemplate, htmltemplate.FuncMap{
		"join": strings.Join,
	})
	if err != nil {
		return nil, fmt.Errorf("download page: %w", err)
	}
	st, err := templates.Text(PageStyleTemplate)
	if err != nil {
		return nil, fmt.Errorf("download page style: %w", err)
	}
	var css bytes.Buffer
	if err := st.Execute(&css, nil); err != nil {
		return nil, fmt.Errorf("download page style: %w", err)
	}
	return &PageRenderer{page: page, style: css.String()}, nil
}

// Style returns the page's stylesheet, which the server serves and the
// static page inlines.
func (p *PageRenderer) Style() []byte { return []byte(p.style) }

// Render writes the page named name (the page, or "login" for the login
// form) for d. A static page gets the stylesheet inlined.
func (p *PageRenderer) Render(w io.Writer, name string, d any) error {
	if pd, ok := d.(*PageData); ok && pd.Stylesheet == "" {
		pd.Style = htmltemplate.CSS(p.style)
	}
	if err := p.page.ExecuteTemplate(w, name, d); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return nil
}

// RenderIndex renders the static index.html of a tree: every release, no
// login, relative links, the stylesheet inlined.
func (p *PageRenderer) RenderIndex(w io.Writer, m *Manifest, baseURL string) error {
	latest, _ := m.Newest(KindRelease)
	preview, _ := m.Newest(KindPreview)
	opts := PageOptions{BaseURL: baseURL, Static: true}
	if latest != (Version{}) {
		opts.Latest = latest.String()
	}
	if preview != (Version{}) {
		opts.Preview = preview.String()
	}
	return p.Render(w, PageTemplate, NewPageData(m, opts))
}
