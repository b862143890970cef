package publish

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
)

func (r *publishRun) publicKeyPEM(ctx context.Context) ([]byte, error) {
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return PublicKeyPEM(pub)
}

// sign signs the artifact's digest and writes its .sig, unless a valid
// signature by the same key is there already (an earlier run, or a
// concurrent publisher of the same bytes), which is then adopted so that
// the manifest and the .sig object always agree.
func (r *publishRun) sign(ctx context.Context, a Artifact) (Artifact, error) {
	digest, _ := hex.DecodeString(a.SHA256)
	sigKey := SigKey(a.Key)
	existing, etag, err := r.readSmall(ctx, sigKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return a, err
	}
	if err == nil && r.validSig(ctx, digest, existing) {
		a.Signature = string(existing)
		return a, nil
	}
	der, err := r.Signer.SignDigest(ctx, digest)
	if err != nil {
		return a, fmt.Errorf("sign %s: %w", a.Key, err)
	}
	sig := SignatureText(der)
	opts := PutOptions{ContentType: "text/plain; charset=utf-8", IfNoneMatch: etag == ""}
	if etag != "" {
		opts.IfMatch = etag
	}
	if err := r.putSmall(ctx, sigKey, sig, opts); err != nil {
		if errors.Is(err, ErrPreconditionFailed) {
			return r.sign(ctx, a) // another publisher wrote one meanwhile
		}
		return a, err
	}
	a.Signature = string(sig)
	return a, nil
}

func (r *publishRun) validSig(ctx context.Context, digest, sigText []byte) bool {
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return false
	}
	return VerifyDigest(pub, digest, sigText) == nil
}

// validMetadataSig reports whether sigText is a valid signature of body
// as metadata of kind at key of this tree.
func (r *publishRun) validMetadataSig(ctx context.Context, kind, key string, body, sigText []byte) bool {
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return false
	}
	return VerifyMetadata(pub, kind, r.BaseURL+"/"+key, body, sigText) == nil
}

// ensureSigs rewrites a missing or wrong .sig of a published release from
// the manifest, so a re-run repairs what an interrupted one left.
func (r *publishRun) ensureSigs(ctx context.Context, arts []Artifact) error {
	for _, a := range arts {
		if a.Signature == "" {
			continue
		}
		if err := r.putIfChanged(ctx, SigKey(a.Key), []byte(a.Signature), "text/plain; charset=utf-8", false); err != nil {
			return err
		}
	}
	return nil
}
