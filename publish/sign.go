package publish

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// ErrBadSignature is returned by Verify for a signature that does not
// verify, or is not base64 of an ASN.1 DER ECDSA signature.
var ErrBadSignature = errors.New("signature does not verify")

// Signer signs the files of a release tree with an ECDSA P-256 key.
// Signatures are ASN.1 DER ECDSA over the SHA-256 of a file, so that
// openssl dgst -sha256 -verify and cosign verify-blob accept their base64.
type Signer interface {
	// SignDigest signs the SHA-256 digest of a file and returns the DER
	// signature. The file itself is never needed again: callers hash it
	// once while uploading.
	SignDigest(ctx context.Context, digest []byte) ([]byte, error)
	// PublicKey returns the P-256 public key that verifies the signatures.
	PublicKey(ctx context.Context) (*ecdsa.PublicKey, error)
}

// kmsSchemes are the KEYREF prefixes that name a key in a KMS. The
// providers register themselves with sigstore's kms package; a binary
// that wants them imports publish/kms.
var kmsSchemes = []string{"awskms://", "gcpkms://", "azurekms://", "hashivault://"}

// IsKMS reports whether keyref names a key in a KMS rather than a file.
func IsKMS(keyref string) bool {
	for _, s := range kmsSchemes {
		if strings.HasPrefix(keyref, s) {
			return true
		}
	}
	return false
}

// LoadSigner returns the Signer of keyref: a PEM file holding a P-256
// private key (PKCS#8 or SEC 1, unencrypted), or a sigstore KMS URI
// (awskms://, gcpkms://, azurekms://, hashivault://). A KMS key is reached
// once, to read its public key, which must be P-256.
func LoadSigner(ctx context.Context, keyref string) (Signer, error) {
	if IsKMS(keyref) {
		return loadKMS(ctx, keyref)
	}
	b, err := os.ReadFile(keyref)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	priv, err := ParsePrivateKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", keyref, err)
	}
	return NewSigner(priv)
}

// NewSigner returns a Signer on an in-memory P-256 private key.
func NewSigner(priv *ecdsa.PrivateKey) (Signer, error) {
	if priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("signing key: curve %s, want P-256", priv.Curve.Params().Name)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return &sigstoreSigner{sv: sv, pub: &priv.PublicKey}, nil
}

func loadKMS(ctx context.Context, keyref string) (Signer, error) {
	sv, err := kms.Get(ctx, keyref, crypto.SHA256)
	if err != nil {
		var nf *kms.ProviderNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("signing key %s: no KMS provider for this scheme is built into this program: %w", keyref, err)
		}
		return nil, fmt.Errorf("signing key %s: %w", keyref, err)
	}
	pk, err := sv.PublicKey(options.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("signing key %s: public key: %w", keyref, err)
	}
	pub, ok := pk.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, fmt.Errorf("signing key %s: a %T key; wharf signs with ECDSA P-256 (create the KMS key as EC_SIGN_P256_SHA256 or its equivalent)", keyref, pk)
	}
	return &sigstoreSigner{sv: sv, pub: pub}, nil
}

// sigstoreSigner is a Signer on a sigstore SignerVerifier (an in-memory
// key or a KMS key).
type sigstoreSigner struct {
	sv  signature.SignerVerifier
	pub *ecdsa.PublicKey
}

func (s *sigstoreSigner) SignDigest(ctx context.Context, digest []byte) ([]byte, error) {
	if len(digest) != sha256.Size {
		return nil, fmt.Errorf("sign: digest of %d bytes, want a SHA-256 (%d)", len(digest), sha256.Size)
	}
	sig, err := s.sv.SignMessage(bytes.NewReader(nil), options.WithDigest(digest), options.WithCryptoSignerOpts(crypto.SHA256), options.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return sig, nil
}

func (s *sigstoreSigner) PublicKey(context.Context) (*ecdsa.PublicKey, error) { return s.pub, nil }

// SignatureText is the content of a .sig file: the base64 of a DER
// signature, no newline.
func SignatureText(der []byte) []byte {
	return []byte(base64.StdEncoding.EncodeToString(der))
}

// GenerateKey makes a P-256 key pair for wharf keygen: the private key as
// PKCS#8 PEM and the public key as PKIX PEM (dl.pub).
func GenerateKey() (privPEM, pubPEM []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	pubPEM, err = PublicKeyPEM(&priv.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pubPEM, nil
}

// PublicKeyPEM encodes pub as PKIX PEM, the content of dl.pub.
func PublicKeyPEM(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePrivateKeyPEM decodes an unencrypted P-256 private key in PKCS#8 or
// SEC 1 PEM, refusing other key types with a message that says so.
func ParsePrivateKeyPEM(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("not a PEM file (want a P-256 private key, e.g. from wharf keygen)")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		return nil, errors.New("an RSA private key; wharf signs with ECDSA P-256 (wharf keygen makes one)")
	case "PUBLIC KEY":
		return nil, errors.New("a public key; the signing key is the private key (dl.key, not dl.pub)")
	default:
		if strings.Contains(block.Type, "ENCRYPTED") {
			return nil, fmt.Errorf("an encrypted key (%s); wharf needs an unencrypted P-256 key or a KMS URI", block.Type)
		}
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	priv, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %s private key; wharf signs with ECDSA P-256 (wharf keygen makes one)", keyType(key))
	}
	if priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("an ECDSA key on %s; wharf signs with P-256", priv.Curve.Params().Name)
	}
	return priv, nil
}

func keyType(key any) string {
	s := fmt.Sprintf("%T", key)
	switch {
	case strings.Contains(s, "rsa"):
		return "RSA"
	case strings.Contains(s, "ed25519"):
		return "Ed25519"
	case strings.Contains(s, "ecdh"):
		return "X25519/ECDH"
	}
	return s
}

// ParsePublicKeyPEM decodes a PKIX PEM P-256 public key (dl.pub).
func ParsePublicKeyPEM(b []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("not a PEM file (want a P-256 public key such as dl.pub)")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM block %q is not a public key (want \"PUBLIC KEY\", such as dl.pub)", block.Type)
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	pub, ok := key.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, fmt.Errorf("a %s public key; wharf signatures are ECDSA P-256", keyType(key))
	}
	return pub, nil
}

// Verify checks that sigText (the content of a .sig file: base64 DER,
// surrounding white space ignored) is a valid signature of the content of
// r under pub. It reads r once. Errors: ErrBadSignature, or the read error.
func Verify(pub *ecdsa.PublicKey, r io.Reader, sigText []byte) error {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return VerifyDigest(pub, h.Sum(nil), sigText)
}

// VerifyDigest is Verify for a file whose SHA-256 digest is known.
func VerifyDigest(pub *ecdsa.PublicKey, digest, sigText []byte) error {
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sigText)))
	if err != nil {
		return fmt.Errorf("%w: not base64: %v", ErrBadSignature, err)
	}
	v, err := signature.LoadECDSAVerifier(pub, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if err := v.VerifySignature(bytes.NewReader(der), nil, options.WithDigest(digest)); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return nil
}
