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
	// Phone is true for a visitor on a phone or tablet, where no build
	// runs: each release leads with its install lines and notes, and its
	// table is folded.
	Phone bool
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

	prefer string // the visitor's build
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

// PageRelease is a release as the page shows it: a table of artifacts
// (rows) by build (columns), the visitor's build first.
type PageRelease struct {
	Title     string // "Latest release", "Latest preview", "Release 26.1.1"
	ID        string // the HTML id of its section
	Version   string
	Kind      string
	Published string            // a date, "" when unknown
	Notes     htmltemplate.HTML // the release notes, rendered at publish (RenderNotes); "" when none
	Columns   []PageColumn      // the builds, the visitor's first
	Artifacts []PageArtifact
	// Credential is the visitor's kind of login for the commands'
	// placeholders: "token", "api_key", or "" (none, or a static page).
	Credential string
	// Stale is a preview older than the latest release (26.1.3-pre.1
	// after 26.1.3): the page folds it.
	Stale bool
	Phone bool // see PageData.Phone
	// Built is what the release's provenance says of its build; nil
	// when it has none.
	Built *PageBuilt
}

// PageBuilt is a release's build on the page.
type PageBuilt struct {
	Builder     string // the builder's ID, "" when not known
	Commit      string // the source commit, "" when not known
	CommitShort string // its first 12 digits
	Source      string // the source repository's URL, "" when not known
	Ref         string // the ref built, "" when not known
}

// InstallLines are the install script lines of the release's binaries.
func (r PageRelease) InstallLines() []string {
	var lines []string
	for _, a := range r.Artifacts {
		if a.Install != "" {
			lines = append(lines, a.Install)
		}
	}
	return lines
}

// NeedsLogin reports whether a binary of the release needs a login.
func (r PageRelease) NeedsLogin() bool {
	for _, a := range r.Artifacts {
		if a.Kind == KindBinary && a.Access != AccessPublic {
			return true
		}
	}
	return false
}

// PageColumn is a build as a column of the release table.
type PageColumn struct {
	Build string // x86, arm, mac
	Label string // "Linux x86-64"
	Mine  bool   // the visitor's system
}

// PageArtifact is one artifact of a release with its builds.
type PageArtifact struct {
	Name    string
	Kind    string // binary or image
	Access  string // public, basic or full
	ID      string // HTML id
	Install string // the install script line (binaries)
	// Pull is how to pull the image from the registry instead (docker
	// login and pull, a Kubernetes pull secret, cosign verify), "" when
	// the release has no registry image of it.
	Pull  string
	Files []PageFile
	// Cells are the artifact's files under the release's Columns, nil
	// where it has no build (images on macOS). They point into Files.
	Cells []PageCell
}

// PageCell is one cell of the release table.
type PageCell struct {
	Column PageColumn
	File   *PageFile // nil: no file for this build
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
	// ProvenanceHref and SBOMHref link its attestations, "" for one it
	// has not.
	ProvenanceHref, SBOMHref string
	Size                     int64
	SizeText                 string
	SHA256                   string
	Access                   string
	Verify                   string // the commands that fetch and verify the file
	Use                      string // how to unpack it: tar xzf or docker load
}

// PageOptions select what NewPageData shows.
type PageOptions struct {
	BaseURL string // absolute URL of the server, for commands
	Latest  string // the version in /latest, "" when none
	Preview string // the version in /preview, "" when none
	Version string // a chosen version, "" for latest and preview
	Static  bool   // render for static hosting (index.html)
	// Prefer is the build of the visitor's system (x86, arm, mac), shown
	// first; "" keeps the order of Builds.
	Prefer string
	Phone  bool // the visitor is on a phone or tablet (PageData.Phone)
}

// NewPageData builds the page of a manifest. A chosen version that is not
// in the manifest is reported in Notice, and latest and preview are shown
// instead.
func NewPageData(m *Manifest, opts PageOptions) *PageData {
	d := &PageData{BaseURL: strings.TrimRight(opts.BaseURL, "/"), Static: opts.Static, Phone: opts.Phone, prefer: opts.Prefer}
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
			pr := d.release(r, releaseTitle(r, opts))
			pr.Stale = v == opts.Preview && olderThan(v, opts.Latest)
			d.Sections = append(d.Sections, pr)
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

// olderThan reports whether version a is older than b; false when either
// does not parse.
func olderThan(a, b string) bool {
	va, errA := ParseVersion(a)
	vb, errB := ParseVersion(b)
	return errA == nil && errB == nil && va.Compare(vb) < 0
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
	pr := PageRelease{Title: title, ID: releaseID(r.Version), Version: r.Version, Kind: r.Kind, Phone: d.Phone}
	if !r.Published.IsZero() {
		pr.Published = r.Published.UTC().Format(pageDateLayout)
	}
	index := map[string]int{}
	for _, a := range r.Artifacts {
		i, ok := index[a.Name]
		if !ok {
			i = len(pr.Artifacts)
			index[a.Name] = i
			pr.Artifacts = append(pr.Artifacts, PageArtifact{Name: a.Name, Kind: a.Kind, Access: a.Access, ID: releaseID(r.Version + "-" + a.Name)})
		}
		pr.Artifacts[i].Files = append(pr.Artifacts[i].Files, d.file(a))
		// The strictest class of any build is the one the artifact shows.
		if accessRank(a.Access) > accessRank(pr.Artifacts[i].Access) {
			pr.Artifacts[i].Access = a.Access
		}
	}
	pr.Notes = htmltemplate.HTML(r.NotesHTML)
	if p := r.Provenance; p != nil && (p.BuilderID != "" || p.Commit != "") {
		pr.Built = &PageBuilt{Builder: p.BuilderID, Commit: p.Commit, CommitShort: p.Commit, Source: p.Repository, Ref: p.Ref}
		if len(p.Commit) > 12 {
			pr.Built.CommitShort = p.Commit[:12]
		}
	}
	order := map[string]int{}
	for _, b := range d.builds() {
		order[b.Name] = len(pr.Columns)
		pr.Columns = append(pr.Columns, PageColumn{Build: b.Name, Label: buildLabel(Artifact{OS: b.OS, Platform: b.Platform}), Mine: b.Name == d.prefer})
	}
	for i := range pr.Artifacts {
		pa := &pr.Artifacts[i]
		if pa.Kind == KindBinary {
			pa.Install = InstallLine(d.BaseURL, pa.Name, r.Version, "")
		}
		for _, im := range r.Images {
			if im.Name == pa.Name {
				pa.Pull = PullLines(im, r.Version)
			}
		}
		slices.SortStableFunc(pa.Files, func(a, b PageFile) int { return order[a.Build] - order[b.Build] })
	}
	// Binaries before images, and the public ones (what anyone can take) first.
	slices.SortStableFunc(pr.Artifacts, func(a, b PageArtifact) int {
		if d := kindRank(a.Kind) - kindRank(b.Kind); d != 0 {
			return d
		}
		return accessRank(a.Access) - accessRank(b.Access)
	})
	for i := range pr.Artifacts {
		pa := &pr.Artifacts[i]
		for _, c := range pr.Columns {
			cell := PageCell{Column: c}
			for k := range pa.Files {
				if pa.Files[k].Build == c.Build {
					cell.File = &pa.Files[k]
					break
				}
			}
			pa.Cells = append(pa.Cells, cell)
		}
	}
	return pr
}

// PullLines are the commands that pull an image of version v from the
// registry and verify it: docker login with the organisation's API key,
// docker pull by tag, the digest to pin, a Kubernetes pull secret, cosign
// verify with dl.pub, and cosign verify-attestation of each kind of
// attestation the image carries, by digest.
func PullLines(im Image, v string) string {
	host := strings.SplitN(im.Repository, "/", 2)[0]
	lines := "docker login " + host + " -u " + PlaceholderAPIKey + " -p x\n" +
		"docker pull " + im.Tag(v) + "\n" +
		"# the same image by digest, for a pinned deployment\n" +
		"docker pull " + im.Ref() + "\n" +
		"kubectl create secret docker-registry wharf-pull --docker-server=" + host + " --docker-username=" + PlaceholderAPIKey + " --docker-password=x\n" +
		"cosign verify --key dl.pub --insecure-ignore-tlog=true " + im.Tag(v)
	for _, k := range []struct{ predicateType, cosignType string }{
		{PredicateSLSA, "slsaprovenance1"}, {PredicateCycloneDX, "cyclonedx"},
	} {
		if slices.ContainsFunc(im.Attestations, func(a ImageAttestation) bool { return a.PredicateType == k.predicateType }) {
			lines += "\ncosign verify-attestation --key dl.pub --type " + k.cosignType + " --insecure-ignore-tlog=true " + im.Ref()
		}
	}
	return lines
}

// builds are the builds in the order the visitor sees them: theirs first.
func (d *PageData) builds() []Build {
	bs := Builds()
	for i, b := range bs {
		if b.Name == d.prefer && i > 0 {
			return append([]Build{b}, append(bs[:i:i], bs[i+1:]...)...)
		}
	}
	return bs
}

// CosignOffline is the flag of the page's cosign verify-blob: a key of our
// own and no transparency log (--insecure-ignore-tlog, which the page gave
// before, checks the same but warns that skipping the log is insecure).
// cosign 2 still tries to fetch Sigstore's trusted root first and, when it
// cannot, warns "Could not fetch trusted_root.json" and goes on: with
// --key that root is not used. The page says so beside the commands.
const CosignOffline = "--private-infrastructure=true"

// Placeholders the page puts where a command needs the visitor's credential.
const (
	PlaceholderToken  = "ACCESS_TOKEN"
	PlaceholderAPIKey = "API_KEY"
)

// InstallLine is the command that installs binary name at version with the
// install script at baseURL. credential is "token" or "api_key" for a
// placeholder of that credential (a binary that needs a login, for a
// visitor logged in with one), "" for none: the script then takes the last
// line of treasury token create.
func InstallLine(baseURL, name, version, credential string) string {
	cred := ""
	switch credential {
	case "token":
		cred = " token=" + PlaceholderToken
	case "api_key":
		cred = " api_key=" + PlaceholderAPIKey
	}
	return fmt.Sprintf("curl -fsSL %s | binary=%s version=%s%s sh",
		shellQuote(baseURL+"/"+KeyInstall), shellQuote(name), shellQuote(version), cred)
}

// UseCredential rewrites the commands of every artifact that needs a login
// for a visitor logged in with an access token ("token") or an API key
// ("api_key"): the install line gets the matching placeholder and the
// download in the verify commands the matching header.
func (d *PageData) UseCredential(credential string) {
	for i := range d.Sections {
		r := &d.Sections[i]
		r.Credential = credential
		for j := range r.Artifacts {
			a := &r.Artifacts[j]
			if a.Access == AccessPublic {
				continue
			}
			if a.Kind == KindBinary {
				a.Install = InstallLine(d.BaseURL, a.Name, r.Version, credential)
			}
			for k := range a.Files {
				f := &a.Files[k]
				f.Verify = d.verify(f.FileName, f.Path, f.Access, credential)
			}
		}
	}
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
	for _, at := range a.Attestations {
		href := "/" + escapePath(at.Key)
		switch at.PredicateType {
		case PredicateSLSA:
			f.ProvenanceHref = href
		case PredicateCycloneDX:
			f.SBOMHref = href
		}
	}
	if d.Static {
		// Relative links keep index.html working under any prefix.
		for _, h := range []*string{&f.Href, &f.SigHref, &f.ProvenanceHref, &f.SBOMHref} {
			*h = strings.TrimPrefix(*h, "/")
		}
	}
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
	f.Verify = d.verify(f.FileName, f.Path, a.Access, "api_key")
	return f
}

// verify is the commands that download a file and check its signature;
// credential ("token" or "api_key") is the placeholder of a download that
// needs a login.
func (d *PageData) verify(fileName, path, access, credential string) string {
	url := d.BaseURL + path
	name := shellQuote(fileName)
	auth := ""
	if access != AccessPublic {
		auth = "-u " + PlaceholderAPIKey + ": "
		if credential == "token" {
			auth = `-H "Authorization: Bearer ` + PlaceholderToken + `" `
		}
	}
	return strings.Join([]string{
		fmt.Sprintf("curl -fsSL %s-o %s %s", auth, name, shellQuote(url)),
		fmt.Sprintf("curl -fsSL -o %s %s", shellQuote(fileName+".sig"), shellQuote(url+"/sig")),
		fmt.Sprintf("curl -fsSL -o dl.pub %s", shellQuote(d.BaseURL+"/"+KeyPublicKey)),
		fmt.Sprintf("openssl dgst -sha256 -verify dl.pub -signature <(base64 -d %s) %s", shellQuote(fileName+".sig"), name),
		fmt.Sprintf("cosign verify-blob --key dl.pub --signature %s %s %s", shellQuote(fileName+".sig"), CosignOffline, name),
	}, "\n")
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
