package oci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// CosignSignatureAnnotation is the annotation of a cosign signature
// manifest's layer that holds the base64 signature of the layer's payload.
const CosignSignatureAnnotation = "dev.cosignproject.cosign/signature"

// SignatureTag is the tag cosign looks up for the signatures of the
// manifest or index of digest d: "sha256-<hex>.sig".
func SignatureTag(d string) string { return "sha256-" + Hex(d) + ".sig" }

// SimpleSigningType is the critical.type of a cosign payload.
const SimpleSigningType = "cosign container image signature"

// simpleSigning is the payload a cosign image signature covers (Red Hat's
// "simple signing" format as cosign writes it).
type simpleSigning struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// SignaturePayload is the payload wharf signs for the manifest or index of
// digest d in repository ref (host/name, no tag): what cosign sign writes,
// byte for byte in the same field order.
func SignaturePayload(ref, d string) ([]byte, error) {
	var p simpleSigning
	p.Critical.Identity.DockerReference = ref
	p.Critical.Image.DockerManifestDigest = d
	p.Critical.Type = SimpleSigningType
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode signature payload: %w", err)
	}
	return b, nil
}

// ErrBadSignaturePayload is returned by ParseSignaturePayload for bytes
// that are no cosign payload of the digest asked for.
var ErrBadSignaturePayload = errors.New("not a cosign signature payload")

// ParseSignaturePayload reads a payload and returns the digest it signs
// for and the reference it names.
func ParseSignaturePayload(b []byte) (ref, digest string, err error) {
	var p simpleSigning
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&p); err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrBadSignaturePayload, err)
	}
	if p.Critical.Type != SimpleSigningType || !ValidDigest(p.Critical.Image.DockerManifestDigest) {
		return "", "", fmt.Errorf("%w: type %q, digest %q", ErrBadSignaturePayload, p.Critical.Type, p.Critical.Image.DockerManifestDigest)
	}
	return p.Critical.Identity.DockerReference, p.Critical.Image.DockerManifestDigest, nil
}

// SignatureConfig is the config blob of a signature manifest whose one
// layer is the payload of digest payloadDigest, as cosign writes it.
func SignatureConfig(payloadDigest string) []byte {
	return fmt.Appendf(nil, `{"architecture":"","created":"0001-01-01T00:00:00Z","history":[{"created":"0001-01-01T00:00:00Z"}],"os":"","rootfs":{"type":"layers","diff_ids":[%q]},"config":{}}`, payloadDigest)
}

// SignatureManifest is the manifest served at SignatureTag: its config,
// and one layer, the payload, annotated with its signature (base64 DER).
func SignatureManifest(config, payload []byte, sigBase64 string) ([]byte, error) {
	m := Manifest{
		SchemaVersion: 2, MediaType: MediaTypeManifest,
		Config: Descriptor{MediaType: MediaTypeConfig, Digest: Digest(config), Size: int64(len(config))},
		Layers: []Descriptor{{
			MediaType: MediaTypeSimpleSigning, Digest: Digest(payload), Size: int64(len(payload)),
			Annotations: map[string]string{CosignSignatureAnnotation: sigBase64},
		}},
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode signature manifest: %w", err)
	}
	return b, nil
}

// ParseSignatureManifest returns the payload's digest and the signature of
// a signature manifest.
func ParseSignatureManifest(b []byte) (payloadDigest, sigBase64 string, err error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return "", "", fmt.Errorf("signature manifest: %w", err)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeSimpleSigning || !ValidDigest(m.Layers[0].Digest) {
		return "", "", errors.New("signature manifest: not one simple-signing layer")
	}
	return m.Layers[0].Digest, m.Layers[0].Annotations[CosignSignatureAnnotation], nil
}

// LooksLikeJSON reports whether head, the first bytes of a file, start a
// JSON object (after JSON white space; a head of white space alone counts), as a
// cosign payload does. Such a
// file is never signed as an artifact, so an artifact signature never
// passes for an image signature, nor the other way round.
func LooksLikeJSON(head []byte) bool {
	b := bytes.TrimLeft(head, " \t\r\n")
	if len(b) == 0 {
		return len(head) > 0 // white space only, as far as head goes
	}
	return b[0] == '{'
}
