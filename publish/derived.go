package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// writeDerived writes _redirects, index.html and releases.json.sig from
// the manifest. All three depend on every release, so each write is
// conditional on the object it
// replaces and is redone when the manifest changed meanwhile: a slower
// publisher never overwrites them with an older view.
func (r *publishRun) writeDerived(ctx context.Context) error {
	if r.DryRun && !r.res.Existing {
		r.wrote(KeyRedirects)
		r.wrote(KeyIndex)
		r.wrote(SigKey(KeyManifest))
		return nil
	}
	for {
		m, etag, err := r.readManifest(ctx)
		if err != nil {
			return err
		}
		redirects, err := renderRedirects(r.redirects, m, r.BaseURL)
		if err != nil {
			return err
		}
		var index bytes.Buffer
		if err := r.page.RenderIndex(&index, m, r.BaseURL); err != nil {
			return fmt.Errorf("render %s: %w", KeyIndex, err)
		}
		for _, f := range []struct {
			key, ctype string
			body       []byte
		}{
			{KeyRedirects, "text/plain; charset=utf-8", redirects},
			{KeyIndex, "text/html; charset=utf-8", index.Bytes()},
		} {
			if err := r.casIfChanged(ctx, f.key, f.body, f.ctype); err != nil {
				return err
			}
		}
		if err := r.signManifest(ctx); err != nil {
			return err
		}
		_, now, err := r.readManifest(ctx)
		if err != nil {
			return err
		}
		if now == etag {
			return nil
		}
		r.Progress.Logf("%s changed meanwhile (another publisher); rendering again", KeyManifest)
	}
}

// casIfChanged writes body at key unless it is there already, conditional
// on the object it replaces; a lost race is retried by the caller's loop,
// which re-reads the manifest.
func (r *publishRun) casIfChanged(ctx context.Context, key string, body []byte, ctype string) error {
	old, etag, err := r.readSmall(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && bytes.Equal(old, body) {
		return nil
	}
	err = r.putSmall(ctx, key, body, PutOptions{ContentType: ctype, IfMatch: etag, IfNoneMatch: etag == ""})
	if errors.Is(err, ErrPreconditionFailed) {
		return nil // someone else wrote it; the manifest check decides whether to redo
	}
	return err
}
