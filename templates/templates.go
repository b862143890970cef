// Package templates embeds the text and HTML templates wharf renders: the
// install script, the redirect rules, the download page and the hosting
// configurations for nginx and Caddy. Every template
// is parsed once at start; a missing or broken one is an error then, not
// at the first request.
package templates

import (
	"embed"
	htmltemplate "html/template"
	"strings"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Template file names.
const (
	Install   = "install.sh.tmpl"
	Redirects = "redirects.tmpl"
	Nginx     = "nginx.conf.tmpl" // wharf hosting nginx
	Caddy     = "Caddyfile.tmpl"  // wharf hosting caddy
)

// InstallData is what the install script template is rendered with.
type InstallData struct {
	BaseURL   string          // the download server's URL, no trailing slash
	PublicKey string          // PEM of dl.pub, pinned into the script
	Binaries  []InstallBinary // every configured binary
	// MinSequence is the sequence of the channel record the script was
	// published with: it refuses an older record even on a machine that
	// has seen none.
	MinSequence uint64
}

// InstallBinary is a binary the install script can install.
type InstallBinary struct {
	Name       string // treasury-cli
	Executable string // treasury
	Access     string // public, basic or full
}

// Text parses a text template (install script, redirect rules). Its
// function shq quotes a string for a POSIX shell: whatever an operator's
// input holds ('$(...)', quotes, newlines), the script sees it as one
// literal word.
func Text(name string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").Funcs(template.FuncMap{"shq": ShellQuote}).ParseFS(files, name)
}

// ShellQuote quotes s as one word of a POSIX shell: in single quotes, with
// each single quote written as '\”.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HTML parses an HTML template (the download page) with funcs.
func HTML(name string, funcs htmltemplate.FuncMap) (*htmltemplate.Template, error) {
	return htmltemplate.New(name).Option("missingkey=error").Funcs(funcs).ParseFS(files, name)
}
