package publish

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"fmt"
	"strconv"
)

// The kinds of metadata the release key signs, each in its own context
// (SignContext). Artifacts are signed bare, as the specification fixes
// it; nothing else is.
const (
	SignedChannel  = "channel"    // the channel record
	SignedSums     = "sha256sums" // a release's SHA256SUMS of a kind
	SignedManifest = "manifest"   // releases.json
)

// SignedKinds lists every metadata kind, for tests that try each pair.
func SignedKinds() []string { return []string{SignedChannel, SignedSums, SignedManifest} }

// contextMagic starts every byte string the key signs as metadata: the
// DSSE v1 pre-authentication encoding. No artifact may start with it
// (publish and wharf check refuse one), so a signature of metadata is
// never a signature of an artifact, and the other way round.
const contextMagic = "DSSEv1"

// SignContextMagicLen is how many first bytes of a file IsSignContext
// needs.
const SignContextMagicLen = len(contextMagic)

// PayloadType is the DSSE payload type a metadata file of kind published
// at url (the full URL of the object, e.g.
// https://dl.example.com/bin/26.1.3/SHA256SUMS) is signed under. It names
// the kind, the format version and where the file belongs, so that bytes
// signed for another tree, another version or another kind do not verify.
func PayloadType(kind, url string) string {
	return "application/vnd.wharf." + kind + ".v2; url=" + url
}

// SignContext is the byte string a metadata signature covers: DSSE's
// PAE(payloadType, body) =
//
//	"DSSEv1" SP len(payloadType) SP payloadType SP len(body) SP body
//
// with lengths as ASCII decimal byte counts. The lengths make it
// injective: two different (type, body) pairs never give the same bytes.
func SignContext(payloadType string, body []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(contextMagic) + len(payloadType) + len(body) + 24)
	b.WriteString(contextMagic + " ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteByte(' ')
	b.Write(body)
	return b.Bytes()
}

// IsSignContext reports whether head, the first bytes of a file (at least
// SignContextMagicLen of them when the file has that many), could be a
// metadata signing context: such a file is never signed as an artifact
// nor verified as one.
func IsSignContext(head []byte) bool {
	return bytes.HasPrefix(head, []byte(contextMagic))
}

// SignMetadata signs body as metadata of kind at url and returns the
// .sig text.
func SignMetadata(ctx context.Context, s Signer, kind, url string, body []byte) ([]byte, error) {
	sum := sha256.Sum256(SignContext(PayloadType(kind, url), body))
	der, err := s.SignDigest(ctx, sum[:])
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", url, err)
	}
	return SignatureText(der), nil
}

// VerifyMetadata checks sigText as a signature of body as metadata of
// kind at url. Errors: ErrBadSignature.
func VerifyMetadata(pub *ecdsa.PublicKey, kind, url string, body, sigText []byte) error {
	sum := sha256.Sum256(SignContext(PayloadType(kind, url), body))
	return VerifyDigest(pub, sum[:], sigText)
}
