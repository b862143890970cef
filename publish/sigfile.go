package publish

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"fmt"
	"io"
)

// maxSignatureLines bounds the signatures a .sig keeps while its file is
// being replaced: the new bytes', the old bytes', and those of
// concurrent publishers' replacements.
const maxSignatureLines = 8

// SignatureLines returns the signatures of the content of a .sig file, one
// a line, empty lines left out. A .sig is one signature (the base64 of
// its DER, no newline), except that of a file a publish replaces in place
// (releases.json, a SHA256SUMS), which holds the signatures of the old and
// the new bytes, newest first, for the moment between writing the two
// objects: at no moment is the file beside a signature of other bytes.
func SignatureLines(sigText []byte) [][]byte {
	var lines [][]byte
	for line := range bytes.SplitSeq(sigText, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	return lines
}

// VerifyAny is Verify for a .sig that may hold more than one signature
// (SignatureLines): it is valid when one of them is. It reads r once.
// Errors: ErrBadSignature, or the read error.
func VerifyAny(pub *ecdsa.PublicKey, r io.Reader, sigText []byte) error {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return VerifyDigestAny(pub, h.Sum(nil), sigText)
}

// VerifyDigestAny is VerifyAny for a file whose SHA-256 digest is known.
func VerifyDigestAny(pub *ecdsa.PublicKey, digest, sigText []byte) error {
	lines := SignatureLines(sigText)
	if len(lines) == 0 {
		return fmt.Errorf("%w: no signature", ErrBadSignature)
	}
	var first error
	for _, line := range lines {
		err := VerifyDigest(pub, digest, line)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// VerifyMetadataAny is VerifyMetadata for a .sig that may hold more than
// one signature (SignatureLines): it is valid when one of them is.
// Errors: ErrBadSignature.
func VerifyMetadataAny(pub *ecdsa.PublicKey, kind, url string, body, sigText []byte) error {
	sum := sha256.Sum256(SignContext(PayloadType(kind, url), body))
	return VerifyDigestAny(pub, sum[:], sigText)
}
