// Package oci reads the image archives a build job hands wharf publish
// (docker save, classic and the OCI layout Docker 25 writes, and OCI image
// layouts in a tar) and writes the JSON an OCI registry serves: image
// manifests, an image index joining an image's platforms, and cosign's
// signature manifests. Blobs are never recompressed: a layer is served as
// the bytes the archive holds.
package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Media types wharf writes and reads.
const (
	MediaTypeIndex        = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest     = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig       = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer        = "application/vnd.oci.image.layer.v1.tar"
	MediaTypeLayerGzip    = "application/vnd.oci.image.layer.v1.tar+gzip"
	MediaTypeLayerZstd    = "application/vnd.oci.image.layer.v1.tar+zstd"
	MediaTypeDockerList   = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaTypeDockerImage  = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeDockerConfig = "application/vnd.docker.container.image.v1+json"
	MediaTypeDockerLayer  = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	// MediaTypeSimpleSigning is the layer of a cosign signature manifest:
	// the payload the signature covers.
	MediaTypeSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"
)

// distributableLayers are the layer media types a registry tree may hold;
// anything else (foreign and non-distributable layers, whose bytes live
// elsewhere, or what no client unpacks) is refused.
var distributableLayers = map[string]bool{
	MediaTypeLayer: true, MediaTypeLayerGzip: true, MediaTypeLayerZstd: true, MediaTypeDockerLayer: true,
	"application/vnd.docker.image.rootfs.diff.tar": true,
}

// IsManifestType reports whether mt is the media type of an image
// manifest (OCI or Docker schema 2).
func IsManifestType(mt string) bool { return mt == MediaTypeManifest || mt == MediaTypeDockerImage }

// IsIndexType reports whether mt is the media type of an index (OCI or a
// Docker manifest list).
func IsIndexType(mt string) bool { return mt == MediaTypeIndex || mt == MediaTypeDockerList }

// Descriptor points at a blob or a manifest.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	URLs        []string          `json:"urls,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *Platform         `json:"platform,omitempty"`
}

// Platform is an image's OS and CPU.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

// String is os/arch[/variant].
func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Manifest is an image manifest.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Index is an image index.
type Index struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []Descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Digest is the "sha256:<hex>" digest of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ValidDigest reports whether d is "sha256:" and 64 lowercase hex digits,
// the only digests wharf serves.
func ValidDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Hex is the hex part of a sha256 digest.
func Hex(d string) string { return strings.TrimPrefix(d, "sha256:") }

// NewIndex is the image index of platform manifests, given in the order
// they are listed.
func NewIndex(manifests []Descriptor) ([]byte, error) {
	b, err := json.Marshal(Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: manifests})
	if err != nil {
		return nil, fmt.Errorf("encode index: %w", err)
	}
	return b, nil
}

// MediaTypeOf reads the mediaType field of a manifest or an index.
func MediaTypeOf(b []byte) string {
	var m struct {
		MediaType string `json:"mediaType"`
	}
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.MediaType
}
