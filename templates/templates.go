// Package templates embeds the text and HTML templates wharf renders: the
// install script, the redirect rules and the download page. Every template
// is parsed once at start; a missing or broken one is an error then, not
// at the first request.
package templates

import (
	"embed"
	htmltemplate "html/template"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Template file names.
const (
	Install   = "install.sh.tmpl"
	Redirects = "redirects.tmpl"
)

// InstallData is what the install script template is rendered with.
type InstallData struct {
	BaseURL   string          // the download server's URL, no trailing slash
	PublicKey string          // PEM of dl.pub, pinned into the script
	Binaries  []InstallBinary // every configured binary
}

// InstallBinary is a binary the install script can install.
type InstallBinary struct {
	Name       string // treasury-cli
	Executable string // treasury
	Access     string // public, basic or full
}

// Text parses a text template (install script, redirect rules).
func Text(name string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").ParseFS(files, name)
}

// HTML parses an HTML template (the download page) with funcs.
func HTML(name string, funcs htmltemplate.FuncMap) (*htmltemplate.Template, error) {
	return htmltemplate.New(name).Option("missingkey=error").Funcs(funcs).ParseFS(files, name)
}
