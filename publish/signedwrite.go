package publish

import (
	"bytes"
	"context"
	"errors"
)

// A signed file that a publish replaces in place (releases.json, a
// SHA256SUMS) and its .sig are two objects, and no store writes two
// objects at once. So the .sig is written first in a form that verifies
// both the old and the new bytes (SignatureLines: the new signature, then
// the ones there), then the file, then the .sig again with the new
// signature alone. Whichever write a crash stops, the file there verifies
// against the .sig there; a re-run leaves one signature (ensureSigned).
//
// Each write is conditional on the object it replaces. A publisher writes
// the file only after its own signature is in the .sig, and removes the
// other signatures only if nobody wrote the .sig since its own write,
// that is, when no other publisher can still write the file on top of
// the version it read.

// signedKind is the metadata kind (SignContext) of the signed file at key.
func signedKind(key string) string {
	if key == KeyManifest {
		return SignedManifest
	}
	return SignedSums
}

// signFile returns the .sig text of a signed file's bytes.
func (r *publishRun) signFile(ctx context.Context, key string, body []byte) ([]byte, error) {
	return SignMetadata(ctx, r.Signer, signedKind(key), r.BaseURL+"/"+key, body)
}

// signs reports whether sigText holds a valid signature of body, the
// file at key.
func (r *publishRun) signs(ctx context.Context, key string, body, sigText []byte) bool {
	pub, err := r.Signer.PublicKey(ctx)
	if err != nil {
		return false
	}
	return VerifyMetadataAny(pub, signedKind(key), r.BaseURL+"/"+key, body, sigText) == nil
}

// validLine returns the first signature of sigText that signs body, the
// file at key.
func (r *publishRun) validLine(ctx context.Context, key string, body, sigText []byte) ([]byte, bool) {
	for _, line := range SignatureLines(sigText) {
		if r.signs(ctx, key, body, line) {
			return line, true
		}
	}
	return nil, false
}

var sigOptions = PutOptions{ContentType: "text/plain; charset=utf-8"}

// putConditional writes body at key only over the version etag names
// (none: only if absent).
func (r *publishRun) putConditional(ctx context.Context, key string, body []byte, etag string, opts PutOptions) (string, error) {
	opts.IfMatch, opts.IfNoneMatch = etag, etag == ""
	if r.DryRun {
		r.wrote(key)
		return "", nil
	}
	info, err := r.putSmallInfo(ctx, key, body, opts)
	return info.ETag, err
}

// replaceSigned writes body at key over the version etag names ("" for
// none) together with its .sig, in the order above. ErrPreconditionFailed
// means another publisher wrote the file or its .sig first: read them
// again and retry.
func (r *publishRun) replaceSigned(ctx context.Context, key, etag string, body []byte, opts PutOptions) error {
	sigKey := SigKey(key)
	old, sigETag, err := r.readSmall(ctx, sigKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	mine, err := r.signFile(ctx, key, body)
	if err != nil {
		return err
	}
	both := [][]byte{mine}
	for _, line := range SignatureLines(old) {
		if len(both) < maxSignatureLines && !bytes.Equal(line, mine) {
			both = append(both, line)
		}
	}
	sigETag, err = r.putConditional(ctx, sigKey, bytes.Join(both, []byte("\n")), sigETag, sigOptions)
	if err != nil {
		return err
	}
	if _, err := r.putConditional(ctx, key, body, etag, opts); err != nil {
		return err
	}
	if len(both) == 1 || r.DryRun {
		return nil
	}
	_, err = r.putConditional(ctx, sigKey, mine, sigETag, sigOptions)
	if errors.Is(err, ErrPreconditionFailed) {
		// Another publisher wrote the .sig since: it removes the old
		// signatures when it is done, unless it removed ours.
		return r.ensureSigned(ctx, key, false)
	}
	return err
}

// ensureSigned makes the .sig of the file at key sign it, adding a
// signature if none of the .sig's does; with settle, it also leaves
// that one signature alone in the .sig (what a finished publish leaves,
// and what openssl takes). A missing file is nothing to sign.
func (r *publishRun) ensureSigned(ctx context.Context, key string, settle bool) error {
	sigKey := SigKey(key)
	for {
		body, etag, err := r.readSmall(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		sig, sigETag, err := r.readSmall(ctx, sigKey)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		line, ok := r.validLine(ctx, key, body, sig)
		if ok && (!settle || len(SignatureLines(sig)) == 1) {
			return nil
		}
		next := line
		if !ok {
			if next, err = r.signFile(ctx, key, body); err != nil {
				return err
			}
			if !settle {
				next = bytes.Join(append([][]byte{next}, SignatureLines(sig)...), []byte("\n"))
			}
		}
		_, err = r.putConditional(ctx, sigKey, next, sigETag, sigOptions)
		if errors.Is(err, ErrPreconditionFailed) {
			continue
		}
		if err != nil || r.DryRun {
			return err
		}
		// The file may have changed between reading it and writing the
		// .sig: check again.
		if _, now, err := r.readSmall(ctx, key); err != nil || now == etag {
			return err
		}
	}
}
