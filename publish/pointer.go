package publish

import (
	"context"
	"errors"
	"strings"
)

// movePointer moves latest or preview to the published version if that is
// newer than what it names, with a compare-and-swap loop, so concurrent
// publishers never move it backwards.
func (r *publishRun) movePointer(ctx context.Context, key string) error {
	for {
		body, etag, err := r.readSmall(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil {
			cur, perr := ParseVersion(strings.TrimSpace(string(body)))
			if perr == nil && cur.Compare(r.v) >= 0 {
				if cur.Compare(r.v) > 0 {
					r.Progress.Logf("%s stays at %s (newer than %s)", key, cur, r.v)
				}
				return nil
			}
			if perr != nil {
				r.Progress.Logf("warning: %s held %q, not a version; replacing it", key, body)
			}
		}
		err = r.putSmall(ctx, key, []byte(r.v.String()+"\n"), PutOptions{ContentType: "text/plain; charset=utf-8", IfMatch: etag, IfNoneMatch: etag == ""})
		if errors.Is(err, ErrPreconditionFailed) {
			continue
		}
		if err == nil && !r.DryRun {
			r.Progress.Logf("%s is now %s", key, r.v)
		}
		return err
	}
}

func (r *publishRun) readPointer(ctx context.Context, key string) (string, error) {
	b, _, err := r.readSmall(ctx, key)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
