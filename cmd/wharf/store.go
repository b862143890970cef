package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/publish/s3"
)

// storeOptions are the flags that reach a store.
type storeOptions struct {
	S3Endpoint string // --s3-endpoint: host:port or URL of an S3 API
	// DryRun opens a directory that does not exist as an empty tree
	// instead of creating it: a dry run writes nothing, not even that.
	DryRun bool
	// Serve opens the store without creating a directory or contacting
	// the bucket: the server starts while the store is missing or
	// unreachable, answers 503, and recovers when it is back.
	Serve bool
}

// openStore opens STORE: s3://bucket[/prefix] (credentials from the AWS_*
// variables) or a directory path, created if missing. close releases it.
func openStore(ctx context.Context, store string, opts storeOptions) (s publish.Store, close func() error, err error) {
	switch {
	case strings.HasPrefix(store, "s3://") && opts.Serve:
		st, err := s3.OpenLazy(store, s3.Options{Endpoint: opts.S3Endpoint})
		if err != nil {
			return nil, nil, fmt.Errorf("store %s: %w", store, err)
		}
		return st, func() error { return nil }, nil
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
	if opts.DryRun {
		if _, err := os.Stat(store); errors.Is(err, fs.ErrNotExist) {
			return absentDir(store), func() error { return nil }, nil
		}
	}
	if opts.Serve {
		st := dir.Open(store)
		return st, st.Close, nil
	}
	st, err := dir.New(store)
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}

// absentDir is the tree in a directory that does not exist yet: empty.
type absentDir string

var _ publish.Store = absentDir("")

func (d absentDir) Open(ctx context.Context, key string) (publish.Object, error) {
	return nil, fmt.Errorf("open %s: %w", key, publish.ErrNotFound)
}

func (d absentDir) Stat(ctx context.Context, key string) (publish.ObjectInfo, error) {
	return publish.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, publish.ErrNotFound)
}

func (d absentDir) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	return publish.ObjectInfo{}, fmt.Errorf("put %s: %s does not exist (a dry run does not create it)", key, string(d))
}

func (d absentDir) List(ctx context.Context, prefix string) ([]publish.ObjectInfo, error) {
	return nil, nil
}

func (d absentDir) String() string { return string(d) }
