package publish

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// InTotoPayloadType is the DSSE payload type of an in-toto statement,
// the one cosign verify-blob-attestation reads. A metadata signature is
// made under a payload type of its own (PayloadType), and an artifact's
// over bytes that never start as a DSSE context does, so none of them
// verifies as an attestation, nor the other way round.
const InTotoPayloadType = "application/vnd.in-toto+json"

// StatementType is the _type of an in-toto Statement v1.
const StatementType = "https://in-toto.io/Statement/v1"

// Predicate types wharf attests, with the name cosign's --type gives each.
const (
	PredicateSLSA      = "https://slsa.dev/provenance/v1" // cosign --type slsaprovenance1
	PredicateCycloneDX = "https://cyclonedx.org/bom"      // cosign --type cyclonedx
)

// MaxEnvelope bounds the attestation envelopes wharf reads.
const MaxEnvelope = 16 << 20

// ErrBadAttestation is returned by VerifyAttestation for an envelope that
// does not verify or does not attest the file it is checked for.
var ErrBadAttestation = errors.New("attestation refused")

// Statement is an in-toto Statement v1.
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Subject is a file a statement is about.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Envelope is a DSSE envelope, one line of an .intoto.jsonl file.
type Envelope struct {
	PayloadType string        `json:"payloadType"`
	Payload     []byte        `json:"payload"` // base64 in JSON
	Signatures  []EnvelopeSig `json:"signatures"`
}

// EnvelopeSig is one signature of an Envelope: ASN.1 DER ECDSA over the
// SHA-256 of the payload's PAE (SignContext).
type EnvelopeSig struct {
	KeyID string `json:"keyid"`
	Sig   []byte `json:"sig"` // base64 in JSON
}

// Attestation is an attestation of an artifact as releases.json lists it.
type Attestation struct {
	PredicateType string `json:"predicate_type"`
	Key           string `json:"key"`    // object key of the .intoto.jsonl
	SHA256        string `json:"sha256"` // of that object, hex
}

// AttestationKind is a kind of attestation wharf writes beside an
// artifact: the suffix its file adds to the artifact's name, its predicate
// type, and the media type it is stored and served with.
type AttestationKind struct {
	Suffix        string // .provenance.intoto.jsonl
	PredicateType string
	// ContentType is the in-toto storage convention's media type of one
	// DSSE-signed attestation, application/vnd.in-toto.<predicate>+dsse
	// (<predicate>: the predicate specification's file name). Consumers
	// read the predicate type from the signed statement, never from it.
	ContentType string
}

// AttestationKinds are the attestations an artifact may have, provenance
// first.
func AttestationKinds() []AttestationKind {
	return []AttestationKind{
		{".provenance.intoto.jsonl", PredicateSLSA, "application/vnd.in-toto.provenance+dsse"},
		{".sbom.intoto.jsonl", PredicateCycloneDX, "application/vnd.in-toto.cyclonedx+dsse"},
	}
}

// AttestationContentType is the media type of an attestation of
// predicateType (see AttestationKind), application/vnd.in-toto+dsse for
// one wharf does not write.
func AttestationContentType(predicateType string) string {
	for _, k := range AttestationKinds() {
		if k.PredicateType == predicateType {
			return k.ContentType
		}
	}
	return "application/vnd.in-toto+dsse"
}

// ProvenanceKey is the key of an artifact's provenance attestation.
func ProvenanceKey(key string) string { return key + AttestationKinds()[0].Suffix }

// SBOMAttestationKey is the key of an artifact's SBOM attestation.
func SBOMAttestationKey(key string) string { return key + AttestationKinds()[1].Suffix }

// NewStatement is a statement of predicate about the file name whose
// SHA-256 is sha256hex.
func NewStatement(name, sha256hex, predicateType string, predicate any) (*Statement, error) {
	p, err := json.Marshal(predicate)
	if err != nil {
		return nil, fmt.Errorf("statement %s: %w", name, err)
	}
	return &Statement{
		Type:          StatementType,
		Subject:       []Subject{{Name: name, Digest: map[string]string{"sha256": sha256hex}}},
		PredicateType: predicateType,
		Predicate:     p,
	}, nil
}

// SignStatement wraps st in a DSSE envelope signed by s and returns the
// envelope as one line of JSON, the content of an .intoto.jsonl file.
func SignStatement(ctx context.Context, s Signer, st *Statement) ([]byte, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	sum := sha256.Sum256(SignContext(InTotoPayloadType, payload))
	der, err := s.SignDigest(ctx, sum[:])
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	env, err := json.Marshal(Envelope{PayloadType: InTotoPayloadType, Payload: payload, Signatures: []EnvelopeSig{{Sig: der}}})
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	return append(env, '\n'), nil
}

// VerifyAttestation checks that envelope (an .intoto.jsonl file holding
// one DSSE envelope) is signed by pub and states predicateType about the
// file name with SHA-256 sha256hex, and returns the statement. Errors
// wrap ErrBadAttestation and say why.
func VerifyAttestation(pub *ecdsa.PublicKey, envelope []byte, name, sha256hex, predicateType string) (*Statement, error) {
	st, err := openEnvelope(pub, envelope, predicateType)
	if err != nil {
		return nil, err
	}
	for _, sub := range st.Subject {
		if sub.Name == name && sub.Digest["sha256"] == sha256hex {
			return st, nil
		}
	}
	var about []string
	for _, sub := range st.Subject {
		about = append(about, fmt.Sprintf("%s (sha256 %s)", sub.Name, sub.Digest["sha256"]))
	}
	return nil, fmt.Errorf("%w: the statement is about %v, not %s (sha256 %s)", ErrBadAttestation, about, name, sha256hex)
}

// VerifyImageAttestation checks that envelope (the blob of a layer of an
// image's sha256-HEX.att) is a DSSE envelope signed by pub whose
// statement is of predicateType and has the manifest or index of digest d
// among its subjects, as cosign verify-attestation requires, and returns
// the statement. Errors wrap ErrBadAttestation and say why.
func VerifyImageAttestation(pub *ecdsa.PublicKey, envelope []byte, d, predicateType string) (*Statement, error) {
	st, err := openEnvelope(pub, envelope, predicateType)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(st.Digests(), d) {
		return nil, fmt.Errorf("%w: the statement is about %v, not %s", ErrBadAttestation, st.Digests(), d)
	}
	return st, nil
}

// Digests are the sha256 digests ("sha256:HEX") of the statement's
// subjects, in order.
func (st *Statement) Digests() []string {
	var ds []string
	for _, sub := range st.Subject {
		if h, ok := sub.Digest["sha256"]; ok {
			ds = append(ds, "sha256:"+h)
		}
	}
	return ds
}

// openEnvelope checks that envelope is one DSSE envelope signed by pub
// over an in-toto statement of predicateType, and returns the statement.
func openEnvelope(pub *ecdsa.PublicKey, envelope []byte, predicateType string) (*Statement, error) {
	if len(envelope) > MaxEnvelope {
		return nil, fmt.Errorf("%w: envelope of %d bytes, more than %d", ErrBadAttestation, len(envelope), MaxEnvelope)
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(envelope))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%w: not a DSSE envelope: %v", ErrBadAttestation, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one envelope in the file", ErrBadAttestation)
	}
	if env.PayloadType != InTotoPayloadType {
		return nil, fmt.Errorf("%w: payload type %q, want %q", ErrBadAttestation, env.PayloadType, InTotoPayloadType)
	}
	sum := sha256.Sum256(SignContext(env.PayloadType, env.Payload))
	signed := false
	for _, sig := range env.Signatures {
		if VerifyDigest(pub, sum[:], []byte(base64.StdEncoding.EncodeToString(sig.Sig))) == nil {
			signed = true
			break
		}
	}
	if !signed {
		return nil, fmt.Errorf("%w: no signature of the envelope verifies under this key (%d signatures: the envelope was changed, or signed by another key)", ErrBadAttestation, len(env.Signatures))
	}
	var st Statement
	if err := json.Unmarshal(env.Payload, &st); err != nil {
		return nil, fmt.Errorf("%w: signed payload is not an in-toto statement: %v", ErrBadAttestation, err)
	}
	if st.Type != StatementType {
		return nil, fmt.Errorf("%w: statement type %q, want %q", ErrBadAttestation, st.Type, StatementType)
	}
	if st.PredicateType != predicateType {
		return nil, fmt.Errorf("%w: predicate type %q, want %q", ErrBadAttestation, st.PredicateType, predicateType)
	}
	return &st, nil
}
