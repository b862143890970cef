package publish

import "strings"

// Cache-Control values of a published tree. Versioned objects never change
// (a version is immutable and the publisher never rewrites one), so public
// ones may be cached for a year; the pointers, the manifest, the install
// script, the page and the redirect rules change with every release and
// are revalidated on every use.
const (
	// CacheImmutable is for versioned public objects: public artifacts,
	// every signature, SHA256SUMS.
	CacheImmutable = "public, max-age=31536000, immutable"
	// CachePrivate is for versioned basic and full artifacts: a browser
	// may keep its own copy, a shared cache (CDN, proxy) may not.
	CachePrivate = "private"
	// CacheRevalidate is for everything at the top of the tree: latest,
	// preview, releases.json, install, dl.pub, index.html, _redirects.
	CacheRevalidate = "no-cache"
)

// CacheControl is the Cache-Control of the object at key. access is the
// access class when key is an artifact, "" for any other object.
func CacheControl(key, access string) string {
	if IsRegistryKey(key) {
		if !IsImmutableRegistryKey(key) {
			return CacheRevalidate // tags
		}
		if access == AccessPublic {
			return CacheImmutable
		}
		return CachePrivate
	}
	if !strings.HasPrefix(key, "bin/") && !strings.HasPrefix(key, "img/") {
		return CacheRevalidate
	}
	if access == "" || access == AccessPublic {
		return CacheImmutable
	}
	return CachePrivate
}
