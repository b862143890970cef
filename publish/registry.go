package publish

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/wharfhq/wharf/publish/oci"
)

// RegistryDir is the top of the registry tree: the read side of an OCI
// registry (the distribution API's paths below /v2/) laid out as objects,
// so that wharf serve, nginx, Caddy or a bucket serve images as they
// serve files:
//
//	v2/{image}/blobs/sha256:{hex}          configs, layers, signature payloads
//	v2/{image}/manifests/sha256:{hex}      image manifests and indexes by digest
//	v2/{image}/manifests/{version}         the version's index (never changes)
//	v2/{image}/manifests/latest, preview   the index the pointer's release has
//	v2/{image}/manifests/sha256-{hex}.sig  cosign's signature of a digest
//	v2/{image}/manifests/sha256-{hex}.att  cosign's attestations of a digest
const RegistryDir = "v2"

// RegistryBlobKey is the key of a blob of an image repository.
func RegistryBlobKey(image, digest string) string {
	return path.Join(RegistryDir, image, "blobs", digest)
}

// RegistryManifestKey is the key of a manifest of an image repository by
// digest or tag.
func RegistryManifestKey(image, ref string) string {
	return path.Join(RegistryDir, image, "manifests", ref)
}

// Image is an image of a release as its registry tree serves it, listed
// in releases.json.
type Image struct {
	Name string `json:"name"`
	// Repository is the name docker pull takes (HOST/NAME): the base
	// URL's host, where the registry API answers at /v2/.
	Repository string `json:"repository"`
	// Index is the digest of the OCI image index joining the platforms,
	// which the version's tag names for ever.
	Index     string          `json:"index"`
	IndexSize int64           `json:"index_size"`
	Access    string          `json:"access"`
	Platforms []ImagePlatform `json:"platforms"`
	// Attestations are the provenance and SBOMs attached to the index
	// and the platform manifests (sha256-HEX.att).
	Attestations []ImageAttestation `json:"attestations,omitempty"`
}

// ImagePlatform is one platform's manifest in an Image.
type ImagePlatform struct {
	Build    string `json:"build"`    // x86, arm
	Platform string `json:"platform"` // linux/amd64
	Manifest string `json:"manifest"` // digest of the image manifest
	// Size is the bytes a pull of this platform fetches: the manifest,
	// its config and its layers.
	Size int64 `json:"size"`
}

// Ref is the image's reference by digest: REPOSITORY@sha256:...
func (im Image) Ref() string { return im.Repository + "@" + im.Index }

// Tag is the image's reference by tag: REPOSITORY:TAG.
func (im Image) Tag(tag string) string { return im.Repository + ":" + tag }

// RegistryHost is the host of a base URL: where the registry API answers.
func RegistryHost(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return strings.TrimPrefix(strings.TrimPrefix(baseURL, "https://"), "http://")
	}
	return u.Host
}

// ErrRegistryPath is returned by Publish for a release with images and a
// base URL with a path (https://host/dl): the registry API docker pull,
// crane, skopeo and containerd use answers only at /v2/ of a host (the
// distribution specification has no prefix, and an image reference has
// no place for one), so those images could not be pulled from it.
var ErrRegistryPath = errors.New("images need a base URL at a host's root: the registry API is at /v2/ of the host, with no path before it")

// checkRegistryBaseURL refuses a base URL with a path for a release with
// images.
func checkRegistryBaseURL(baseURL string) error {
	u, err := url.Parse(baseURL)
	if err != nil || strings.Trim(u.Path, "/") == "" {
		return nil
	}
	return fmt.Errorf("base URL %s has the path %s: %w; publish with a base URL such as %s://%s (a host of its own for the downloads), or without the images", baseURL, u.Path, ErrRegistryPath, u.Scheme, u.Host)
}

// RegistryRepository is the repository name of image under baseURL.
func RegistryRepository(baseURL, image string) string {
	return RegistryHost(baseURL) + "/" + image
}

// IsRegistryKey reports whether key is in the registry tree.
func IsRegistryKey(key string) bool { return strings.HasPrefix(key, RegistryDir+"/") }

// RegistryImage splits a registry key into the image repository and the
// rest ("blobs/…", "manifests/…"); ok is false for any other key.
func RegistryImage(key string) (image, rest string, ok bool) {
	k, found := strings.CutPrefix(key, RegistryDir+"/")
	if !found {
		return "", "", false
	}
	image, rest, found = strings.Cut(k, "/")
	if !found || !validName(image) {
		return "", "", false
	}
	return image, rest, true
}

// IsImmutableRegistryKey reports whether the object at a registry key
// never changes: a blob or a manifest by digest.
func IsImmutableRegistryKey(key string) bool {
	_, rest, ok := RegistryImage(key)
	if !ok {
		return false
	}
	kind, ref, _ := strings.Cut(rest, "/")
	return (kind == "blobs" || kind == "manifests") && oci.ValidDigest(ref)
}

// imageAccess is the strictest access class images of name have in any
// release of m: blobs are shared between versions, so the repository is
// as closed as its most closed version.
func imageAccess(m *Manifest, name string) (string, bool) {
	rank := map[string]int{AccessPublic: 0, AccessBasic: 1, AccessFull: 2}
	best, found := "", false
	for _, rel := range m.Releases {
		for _, im := range rel.Images {
			if im.Name == name && (!found || rank[im.Access] > rank[best]) {
				best, found = im.Access, true
			}
		}
	}
	return best, found
}

// ImageAccess is the access class of the image repository name in the
// tree of m: the strictest of its releases'; ok is false for a name no
// release has.
func (m *Manifest) ImageAccess(name string) (string, bool) { return imageAccess(m, name) }
