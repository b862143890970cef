package oci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// SignatureConfig is the config blob of a signature or attestation
// manifest whose layers are the blobs of digests layerDigests, as cosign
// writes it (a history entry and a diff ID per layer).
func SignatureConfig(layerDigests ...string) []byte {
	var hist, ids []string
	for _, d := range layerDigests {
		hist = append(hist, `{"created":"0001-01-01T00:00:00Z"}`)
		ids = append(ids, fmt.Sprintf("%q", d))
	}
	return fmt.Appendf(nil, `{"architecture":"","created":"0001-01-01T00:00:00Z","history":[%s],"os":"","rootfs":{"type":"layers","diff_ids":[%s]},"config":{}}`,
		strings.Join(hist, ","), strings.Join(ids, ","))
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

// AttestationTag is the tag cosign looks up for the attestations of the
// manifest or index of digest d: "sha256-<hex>.att".
func AttestationTag(d string) string { return "sha256-" + Hex(d) + ".att" }

// MediaTypeDSSE is the layer of a cosign attestation manifest: a DSSE
// envelope, which carries its own signature.
const MediaTypeDSSE = "application/vnd.dsse.envelope.v1+json"

// PredicateTypeAnnotation is the annotation of an attestation layer that
// names the predicate type of the statement its envelope signs, as cosign
// attest writes it (cosign reads the type from the signed statement).
const PredicateTypeAnnotation = "predicateType"

// AttestationLayer is one DSSE envelope of an attestation manifest.
type AttestationLayer struct {
	Envelope      []byte
	PredicateType string
}

// AttestationManifest is the manifest served at AttestationTag: its
// config, and a layer per envelope, annotated as cosign attest annotates
// them (an empty signature: it is inside the envelope).
func AttestationManifest(config []byte, layers []AttestationLayer) ([]byte, error) {
	m := Manifest{
		SchemaVersion: 2, MediaType: MediaTypeManifest,
		Config: Descriptor{MediaType: MediaTypeConfig, Digest: Digest(config), Size: int64(len(config))},
		Layers: []Descriptor{},
	}
	for _, l := range layers {
		m.Layers = append(m.Layers, Descriptor{
			MediaType: MediaTypeDSSE, Digest: Digest(l.Envelope), Size: int64(len(l.Envelope)),
			Annotations: map[string]string{CosignSignatureAnnotation: "", PredicateTypeAnnotation: l.PredicateType},
		})
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode attestation manifest: %w", err)
	}
	return b, nil
}

// ParseAttestationManifest returns the layers of an attestation manifest,
// each a DSSE envelope.
func ParseAttestationManifest(b []byte) ([]Descriptor, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("attestation manifest: %w", err)
	}
	for _, l := range m.Layers {
		if l.MediaType != MediaTypeDSSE || !ValidDigest(l.Digest) {
			return nil, fmt.Errorf("attestation manifest: a layer of type %q, digest %q, not a DSSE envelope", l.MediaType, l.Digest)
		}
	}
	return m.Layers, nil
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
