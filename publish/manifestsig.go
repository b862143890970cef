package publish

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
)

// signManifest writes releases.json.sig for the manifest there now,
// unless its signature is valid already (ECDSA signatures differ at every
// signing: writing again would change the object every run). The write is
// conditional on the signature it replaces; writeDerived re-reads the
// manifest afterwards and signs again if it changed meanwhile.
func (r *publishRun) signManifest(ctx context.Context) error {
	m, _, err := r.readSmall(ctx, KeyManifest)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(m)
	key := SigKey(KeyManifest)
	old, etag, err := r.readSmall(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && r.validSig(ctx, sum[:], old) {
		return nil
	}
	der, err := r.Signer.SignDigest(ctx, sum[:])
	if err != nil {
		return fmt.Errorf("sign %s: %w", KeyManifest, err)
	}
	err = r.putSmall(ctx, key, SignatureText(der), PutOptions{ContentType: "text/plain; charset=utf-8", IfMatch: etag, IfNoneMatch: etag == ""})
	if errors.Is(err, ErrPreconditionFailed) {
		return nil // another publisher signed meanwhile; the caller's loop checks
	}
	return err
}
