package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// readSmall reads a small object whole, with its ETag.
func (r *publishRun) readSmall(ctx context.Context, key string) ([]byte, string, error) {
	o, err := r.Store.Open(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer o.Close()
	b, err := io.ReadAll(io.LimitReader(o, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", key, err)
	}
	return b, o.Info().ETag, nil
}

// putSmall writes a small object whose digest is known in advance, so the
// store verifies it on the way in.
func (r *publishRun) putSmall(ctx context.Context, key string, body []byte, opts PutOptions) error {
	if r.DryRun {
		r.wrote(key)
		return nil
	}
	_, err := r.putSmallInfo(ctx, key, body, opts)
	return err
}

// putSmallInfo is putSmall returning what the store says of the object.
func (r *publishRun) putSmallInfo(ctx context.Context, key string, body []byte, opts PutOptions) (ObjectInfo, error) {
	sum := sha256.Sum256(body)
	opts.SHA256 = sum[:]
	if opts.CacheControl == "" {
		opts.CacheControl = CacheControl(key, "") // nothing small is an artifact
	}
	info, err := r.Store.Put(ctx, key, bytes.NewReader(body), int64(len(body)), opts)
	if err != nil {
		return info, err
	}
	if info.SHA256 != "" && !strings.EqualFold(info.SHA256, hex.EncodeToString(sum[:])) {
		return info, fmt.Errorf("check %s: stored sha256 %s, wrote %x", key, info.SHA256, sum)
	}
	r.wrote(key)
	return info, nil
}

// putIfChanged writes body at key unless the object has these bytes.
func (r *publishRun) putIfChanged(ctx context.Context, key string, body []byte, ctype string, warnReplace bool) error {
	old, _, err := r.readSmall(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && bytes.Equal(old, body) {
		return nil
	}
	if err == nil && warnReplace {
		r.Progress.Logf("warning: %s changes: this release is signed by another key than the one served until now", key)
	}
	return r.putSmall(ctx, key, body, PutOptions{ContentType: ctype})
}
