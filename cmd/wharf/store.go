package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/publish/s3"
)

// storeOptions are the flags that reach a store.
type storeOptions struct {
	S3Endpoint string // --s3-endpoint: host:port or URL of an S3 API
}

// openStore opens STORE: s3://bucket[/prefix] (credentials from the AWS_*
// variables) or a directory path, created if missing. close releases it.
func openStore(ctx context.Context, store string, opts storeOptions) (s publish.Store, close func() error, err error) {
	switch {
	case strings.HasPrefix(store, "s3://"):
		st, err := s3.Open(ctx, store, s3.Options{Endpoint: opts.S3Endpoint})
		if err != nil {
			return nil, nil, fmt.Errorf("store %s: %w", store, err)
		}
		return st, func() error { return nil }, nil
	case strings.Contains(store, "://"):
		return nil, nil, fmt.Errorf("store %s: want a directory or s3://bucket/prefix", store)
	case store == "":
		return nil, nil, fmt.Errorf("store: empty; want a directory or s3://bucket/prefix")
	}
	if opts.S3Endpoint != "" {
		return nil, nil, fmt.Errorf("store %s: --s3-endpoint is for an s3:// store", store)
	}
	st, err := dir.New(store)
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}
