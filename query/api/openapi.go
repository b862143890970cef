package api

import (
	"bytes"
	"net/http"
)

// openapiServer is the servers entry of openapi.yaml as written: the
// default address. The served document names the address it was asked
// at instead.
const openapiServer = "  - url: http://127.0.0.1:8090\n"

// openapiFor is openapi.yaml with its server the one r was sent to (its
// Host, http or https as r came): on another port or behind a proxy
// "Try it" goes where the document came from. A Host that is not a plain
// host[:port] keeps the default.
func openapiFor(r *http.Request) []byte {
	if !plainHost(r.Host) {
		return openapiYAML
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return bytes.Replace(openapiYAML, []byte(openapiServer), []byte("  - url: "+scheme+"://"+r.Host+"\n"), 1)
}

// plainHost reports whether h is a host name or address with an optional
// port: letters, digits, '.', '-', ':' and the brackets of IPv6.
func plainHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
