// Package hosting renders what it takes to serve a published tree without
// wharf streaming the bytes: an nginx server block and a Caddy site whose
// non-public downloads ask wharf serve's auth endpoint (site.AuthPath),
// and an S3 bucket policy that lets anyone read the public part of a tree
// and nothing else.
package hosting

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/templates"
)

// versionRE matches a version in a path segment (YY.F.P or YY.F.P-pre.C),
// in the syntax nginx (PCRE) and Caddy (RE2) share.
const versionRE = `[0-9]+\.[0-9]+\.[0-9]+(?:-pre\.[0-9]+)?`

// fileNameRE matches a file name as wharf's own path parser accepts one
// (letters, digits, '.', '-', '_', '+', not starting with a dot). The
// configurations match names with it and nothing wider, so a name they
// capture never holds a '?', '#', '%' or '/' that a rewrite would read
// as something else.
const fileNameRE = `[A-Za-z0-9_+-][A-Za-z0-9._+-]*`

// badChars are the characters no operator input may hold: they end a
// directive or a block, start a comment, quote, or are expanded by nginx
// ($) or Caddy ({...}, \).
const badChars = " \t\n\r;{}\"'#$\\`"

// Options describe the proxy in front of a published directory.
type Options struct {
	// Root is the published directory as the proxy sees it (absolute).
	Root string
	// Upstream is wharf serve's URL as the proxy reaches it, e.g.
	// http://127.0.0.1:8080.
	Upstream string
	// Listen is the address the proxy listens on: nginx's listen
	// parameter (default 80); for Caddy, host:port served over plain HTTP.
	Listen string
	// ServerName is the host name the site answers for (nginx server_name;
	// Caddy's site address, which gets a certificate when Listen is empty).
	ServerName string
	// CacheDir is where nginx keeps wharf's answers for latest and preview
	// short URLs (default /var/cache/nginx/wharf).
	CacheDir string
	// AccessLog is nginx's access log file, written without the
	// basic-auth user (an API key); default /var/log/nginx/access.log.
	AccessLog string
	// AuthCache is where nginx keeps wharf's 204s for a tenth of a second
	// (keyed on the credentials: a tmpfs such as /run); "off" asks wharf
	// for every download. Default /run/nginx-wharf-auth.
	AuthCache string
	// Artifacts are every artifact the tree may hold, with its access
	// class; see Artifacts.
	Artifacts []publish.ArtifactSpec
	// KeyRate is the downloads per second nginx allows each key or user
	// wharf allowed them for, in bursts of up to KeyBurst: wharf serve's
	// --rate-key, which answers behind nginx's auth cache count only the
	// first of. 0: no limit in nginx.
	KeyRate  float64
	KeyBurst int
	// Latest and Preview, when set, are the releases the tree's pointers
	// named when the configuration was generated (wharf hosting
	// --pin-latest): the proxy answers their short URLs itself, at the
	// cost of a return, and follows a new release only once the
	// configuration is generated and loaded again. Nil: wharf answers.
	Latest, Preview *publish.Release
}

// Artifacts is what a recipe must know about the tree: every artifact
// name the config or the manifest m knows, with its access class. The
// manifest is the truth: a name is public only if the config says so AND
// every release of m that holds it published it public. Any other name is
// not public: the proxy asks wharf about it (wharf answers 204 for a
// release where it is public), the bucket policy leaves it closed. m nil
// is the config alone (wharf hosting --config-only), which opens the old
// non-public builds of a name the config now calls public.
func Artifacts(cfg *publish.Config, m *publish.Manifest) []publish.ArtifactSpec {
	specs := slices.Clone(cfg.Artifacts)
	index := map[string]int{}
	for i, a := range specs {
		index[a.Kind+"/"+a.Name] = i
	}
	if m == nil {
		return specs
	}
	for _, r := range m.Releases {
		for _, a := range r.Artifacts {
			i, ok := index[a.Kind+"/"+a.Name]
			if !ok {
				// Not in the config: never public to a recipe.
				access := a.Access
				if access == publish.AccessPublic {
					access = publish.AccessBasic
				}
				index[a.Kind+"/"+a.Name] = len(specs)
				specs = append(specs, publish.ArtifactSpec{Name: a.Name, Kind: a.Kind, Access: access})
				continue
			}
			if a.Access != publish.AccessPublic && specs[i].Access == publish.AccessPublic {
				specs[i].Access = a.Access
			}
		}
	}
	return specs
}

// publicArtifact is a public artifact in the templates.
type publicArtifact struct {
	Name        string
	Dir         string // bin or img
	FileRE      string // its canonical file name, any version and build
	ContentType string
}

// attestationKind is a kind of attestation file in the templates.
type attestationKind struct {
	Name        string // provenance, sbom: names nginx's location for it
	SuffixRE    string // \.provenance\.intoto\.jsonl
	ContentType string
}

// build is a build in the templates.
type build struct {
	Name       string // x86
	Names      string // (?:mac|macos): the path segments naming it
	OS         string
	Platform   string
	ImageNames string // alternation of the image names; "" for a build without images
}

// templateData is what the nginx and Caddy templates are rendered with.
type templateData struct {
	Root, Upstream, UpstreamHost, Listen, ServerName, CacheDir string
	AccessLog, AuthCache, PrincipalVar                         string // nginx
	// KeyRate is nginx's limit_req rate ("10r/s"), "" for none; KeyBurst
	// the requests it lets through at once beyond the first.
	KeyRate  string
	KeyBurst int
	// IndexPolicy is the Content-Security-Policy of the published
	// index.html.
	IndexPolicy   string
	Address, Bind string // Caddy
	AuthPath      string
	// Header is the header the proxy names the asked path in (fixed per
	// proxy kind); HeaderOther the other one, which it removes;
	// HeaderReplay marks nginx's second question about a refusal.
	Header, HeaderOther, HeaderReplay string
	// HeaderAccel asks wharf to hand a blob's bytes back to nginx, which
	// serves them from AccelPrefix (nginx).
	HeaderAccel, AccelPrefix       string
	VersionRE, FileNameRE          string
	Immutable, Private, Revalidate string
	Public                         []publicArtifact
	// Attestations are the attestation files beside an artifact, served
	// with its access class.
	Attestations  []attestationKind
	PublicList    string
	Builds        []build
	BuildNames    string
	ShortPrefixes []string // latest, preview and every build name
	// Pins are the short URLs of PinnedLatest and PinnedPreview, answered
	// by the proxy itself.
	Pins                        []pin
	PinnedLatest, PinnedPreview string
}

func (o Options) data() (*templateData, error) {
	if o.Root == "" || !filepath.IsAbs(o.Root) {
		return nil, fmt.Errorf("the root %q is not an absolute path (the proxy resolves it, not your shell)", o.Root)
	}
	if strings.ContainsAny(o.Root, badChars) {
		return nil, fmt.Errorf("the root %q has a character the configuration cannot hold (space, quote, ;, {, }, #, $ or \\)", o.Root)
	}
	if strings.ContainsAny(o.Upstream, badChars) {
		return nil, fmt.Errorf("the upstream %q has a character the configuration cannot hold", o.Upstream)
	}
	u, err := url.Parse(o.Upstream)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("the upstream %q is not a URL such as http://127.0.0.1:8080 (no path, no credentials)", o.Upstream)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	for _, s := range []string{o.Listen, o.ServerName, o.CacheDir, o.AccessLog, o.AuthCache} {
		if strings.ContainsAny(s, badChars) {
			return nil, fmt.Errorf("%q has a character the configuration cannot hold (space, quote, ;, {, }, #, $ or \\)", s)
		}
	}
	d := &templateData{
		Root:         filepath.Clean(o.Root),
		Upstream:     u.Scheme + "://" + u.Host,
		UpstreamHost: host,
		Listen:       o.Listen,
		ServerName:   o.ServerName,
		CacheDir:     o.CacheDir,
		AccessLog:    o.AccessLog,
		AuthCache:    o.AuthCache,
		IndexPolicy:  IndexPolicy,
		PrincipalVar: strings.ReplaceAll(strings.ToLower(site.HeaderPrincipal), "-", "_"),
		AuthPath:     site.AuthPath,
		VersionRE:    versionRE,
		FileNameRE:   fileNameRE,
		HeaderReplay: site.HeaderReplay,
		HeaderAccel:  site.HeaderAccel,
		AccelPrefix:  site.AccelPrefix,
		Immutable:    publish.CacheImmutable,
		Private:      publish.CachePrivate,
		Revalidate:   publish.CacheRevalidate,
	}
	for _, k := range publish.AttestationKinds() {
		name := strings.TrimSuffix(strings.TrimPrefix(k.Suffix, "."), ".intoto.jsonl")
		d.Attestations = append(d.Attestations, attestationKind{Name: name, SuffixRE: regexp.QuoteMeta(k.Suffix), ContentType: k.ContentType})
	}
	if o.KeyRate < 0 || o.KeyBurst < 0 {
		return nil, fmt.Errorf("the key rate %v in bursts of %d is negative", o.KeyRate, o.KeyBurst)
	}
	d.KeyRate, d.KeyBurst = nginxRate(o.KeyRate, o.KeyBurst)
	if d.Listen == "" {
		d.Listen = "80"
	}
	if d.CacheDir == "" {
		d.CacheDir = "/var/cache/nginx/wharf"
	}
	if d.AccessLog == "" {
		d.AccessLog = "/var/log/nginx/access.log"
	}
	switch d.AuthCache {
	case "":
		d.AuthCache = "/run/nginx-wharf-auth"
	case "off":
		d.AuthCache = ""
	}
	var images, public []string
	for _, a := range o.Artifacts {
		if a.Kind == publish.KindImage {
			images = append(images, regexp.QuoteMeta(a.Name))
		}
		if a.Access != publish.AccessPublic {
			continue
		}
		public = append(public, a.Name)
		p := publicArtifact{Name: a.Name, Dir: publish.KindDir(a.Kind)}
		if a.Kind == publish.KindImage {
			p.FileRE = regexp.QuoteMeta(a.Name) + "-" + versionRE + `-(?:amd64|arm64)\.tar`
			p.ContentType = "application/x-tar"
		} else {
			p.FileRE = regexp.QuoteMeta(a.Name) + "-" + versionRE + `-(?:linux|macos)-(?:amd64|arm64)\.tar\.gz`
			p.ContentType = "application/gzip"
		}
		d.Public = append(d.Public, p)
	}
	d.PublicList = strings.Join(public, ", ")
	if d.PublicList == "" {
		d.PublicList = "none"
	}
	var names []string
	for _, b := range publish.Builds() {
		bd := build{Name: b.Name, Names: b.Name, OS: b.OS, Platform: b.Platform}
		if b.Name == "mac" {
			bd.Names = "(?:mac|macos)"
		}
		names = append(names, strings.Trim(strings.TrimPrefix(bd.Names, "(?:"), ")"))
		if b.Images && len(images) > 0 {
			bd.ImageNames = "(?:" + strings.Join(images, "|") + ")"
		}
		d.Builds = append(d.Builds, bd)
	}
	d.BuildNames = strings.Join(names, "|")
	d.ShortPrefixes = []string{publish.KeyLatest, publish.KeyPreview}
	for _, n := range names {
		d.ShortPrefixes = append(d.ShortPrefixes, strings.Split(n, "|")...)
	}
	if o.Latest != nil {
		p, err := pins(o.Latest, "", "/"+publish.KeyLatest)
		if err != nil {
			return nil, err
		}
		d.Pins, d.PinnedLatest = append(d.Pins, p...), o.Latest.Version
	}
	if o.Preview != nil {
		p, err := pins(o.Preview, "/"+publish.KeyPreview)
		if err != nil {
			return nil, err
		}
		d.Pins, d.PinnedPreview = append(d.Pins, p...), o.Preview.Version
	}
	return d, nil
}

// IndexPolicy is the Content-Security-Policy the proxies send with the
// published index.html: the page wharf serves itself gets the same, but
// the static page carries its stylesheet inline.
const IndexPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// nginxRate writes a rate per second and a burst (a token bucket of that
// many) as nginx's limit_req counts them: requests per second, or per
// minute when that is not whole, never below 1r/m; the burst is what it
// lets through beyond the first. 0 is no limit ("").
func nginxRate(perSecond float64, burst int) (string, int) {
	if perSecond <= 0 {
		return "", 0
	}
	if burst < 1 {
		burst = 1
	}
	if perSecond >= 1 && perSecond == math.Trunc(perSecond) {
		return fmt.Sprintf("%dr/s", int64(perSecond)), burst - 1
	}
	return fmt.Sprintf("%dr/m", max(1, int64(math.Round(perSecond*60)))), burst - 1
}

// Nginx writes the nginx configuration of o: an http-level file for
// conf.d/ (a cache zone, the upstream, one server block).
func Nginx(w io.Writer, o Options) error {
	d, err := o.data()
	if err != nil {
		return err
	}
	d.Header, d.HeaderOther = site.HeaderOriginalURI, site.HeaderForwardURI
	return render(w, templates.Nginx, d)
}

// Caddy writes a Caddyfile site block for o.
func Caddy(w io.Writer, o Options) error {
	d, err := o.data()
	if err != nil {
		return err
	}
	d.Header, d.HeaderOther = site.HeaderForwardURI, site.HeaderOriginalURI
	switch {
	case o.Listen != "":
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return fmt.Errorf("listen %q: want host:port or :port", o.Listen)
		}
		d.Address = "http://" + o.ServerName + ":" + port
		d.Bind = host
	case o.ServerName != "":
		d.Address = o.ServerName
	default:
		d.Address = "http://:80"
	}
	return render(w, templates.Caddy, d)
}

func render(w io.Writer, name string, d *templateData) error {
	t, err := templates.Text(name)
	if err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// PolicyOptions name the tree a bucket policy is for.
type PolicyOptions struct {
	Bucket    string
	Prefix    string // the tree's prefix in the bucket; "" for the whole bucket
	Artifacts []publish.ArtifactSpec
}

// policy is an S3 bucket policy document.
type policy struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

type policyStatement struct {
	Sid       string              `json:"Sid"`
	Effect    string              `json:"Effect"`
	Principal map[string][]string `json:"Principal"`
	Action    []string            `json:"Action"`
	Resource  []string            `json:"Resource"`
}

// ErrAmbiguousName: a public artifact's key pattern would also match a
// non-public artifact's keys; S3 policies have no anchored patterns.
var ErrAmbiguousName = errors.New("a public artifact's name is the start of another artifact's name")

// S3Policy writes a bucket policy that lets anonymous readers GetObject the
// public part of the tree: the pointers, dl.pub, install, releases.json,
// index.html, _redirects, every SHA256SUMS and signature, and the public
// artifacts of any version and build with their attestations; nothing
// else, and never a listing.
// Keys of public and non-public artifacts share their directories
// (bin/{version}/), so the public ones are named by pattern:
// bin/*/{name}-*-{os}-{platform}.tar.gz. A pattern that would also match a
// non-public artifact (public "foo" beside basic "foo-bar") is refused
// with ErrAmbiguousName.
func S3Policy(w io.Writer, o PolicyOptions) error {
	if o.Bucket == "" || strings.ContainsAny(o.Bucket, "/*?\" ") {
		return fmt.Errorf("bucket %q: want a bucket name", o.Bucket)
	}
	prefix := strings.Trim(o.Prefix, "/")
	if strings.ContainsAny(prefix, "*?\"") || publish.CheckKey(prefix+"/x") != nil && prefix != "" {
		return fmt.Errorf("prefix %q: want a key prefix such as dl or releases/dl", o.Prefix)
	}
	arn := "arn:aws:s3:::" + o.Bucket + "/"
	if prefix != "" {
		arn += prefix + "/"
	}
	var res []string
	for _, k := range []string{publish.KeyLatest, publish.KeyPreview, publish.KeyPublicKey, publish.KeyInstall,
		publish.KeyManifest, publish.KeyIndex, publish.KeyRedirects, publish.KeyChannel, publish.SigKey(publish.KeyManifest)} {
		res = append(res, arn+k)
	}
	for _, dir := range []string{publish.KindDir(publish.KindBinary), publish.KindDir(publish.KindImage)} {
		res = append(res, arn+dir+"/*/SHA256SUMS", arn+dir+"/*.sig")
	}
	for _, a := range o.Artifacts {
		if a.Access != publish.AccessPublic {
			continue
		}
		for _, b := range o.Artifacts {
			if b.Access != publish.AccessPublic && b.Kind == a.Kind && strings.HasPrefix(b.Name, a.Name+"-") {
				return fmt.Errorf("%w: public %s would also open %s %s: rename one", ErrAmbiguousName, a.Name, b.Access, b.Name)
			}
		}
		dir := publish.KindDir(a.Kind)
		for _, b := range publish.Builds() {
			switch {
			case a.Kind == publish.KindImage && b.Images:
				res = append(res, fmt.Sprintf("%s%s/*/%s-*-%s.tar", arn, dir, a.Name, b.Platform))
			case a.Kind == publish.KindBinary:
				res = append(res, fmt.Sprintf("%s%s/*/%s-*-%s-%s.tar.gz", arn, dir, a.Name, b.OS, b.Platform))
			default:
				continue
			}
			// Its attestations are as public as it is.
			file := res[len(res)-1]
			for _, k := range publish.AttestationKinds() {
				res = append(res, file+k.Suffix)
			}
		}
	}
	p := policy{
		Version: "2012-10-17",
		Statement: []policyStatement{{
			Sid:       "WharfPublicRead",
			Effect:    "Allow",
			Principal: map[string][]string{"AWS": {"*"}},
			Action:    []string{"s3:GetObject"},
			Resource:  res,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}
