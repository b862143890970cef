package publish

import (
	"context"
	"errors"
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
	key := SigKey(KeyManifest)
	old, etag, err := r.readSmall(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && r.validMetadataSig(ctx, SignedManifest, KeyManifest, m, old) {
		return nil
	}
	sig, err := SignMetadata(ctx, r.Signer, SignedManifest, r.BaseURL+"/"+KeyManifest, m)
	if err != nil {
		return err
	}
	err = r.putSmall(ctx, key, sig, PutOptions{ContentType: "text/plain; charset=utf-8", IfMatch: etag, IfNoneMatch: etag == ""})
	if errors.Is(err, ErrPreconditionFailed) {
		return nil // another publisher signed meanwhile; the caller's loop checks
	}
	return err
}
