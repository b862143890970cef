package storetest

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/wharfhq/wharf/publish"
)

// ErrCrash is what a Crash store's failed write returns: an
// ErrUnavailable, as a store that went away.
var ErrCrash = fmt.Errorf("%w: the store went away (storetest.Crash)", publish.ErrUnavailable)

// Crash is a Store whose write number At (counting from 0) fails, as a
// process killed or a store lost at that moment would leave it: before
// the write, after reading half of its bytes (nothing is stored); or, with
// After, once the write is done (the object is stored, the caller hears
// of a failure). Every write after it fails too, as nothing runs after a
// crash. At -1 never fails: Writes then counts the writes of a run.
type Crash struct {
	publish.Store
	At    int64
	After bool

	writes atomic.Int64
}

// Writes is the number of writes asked of the store so far, the failed
// ones included.
func (c *Crash) Writes() int64 { return c.writes.Load() }

// Put writes through to the store unless this is write At or a later one.
func (c *Crash) Put(ctx context.Context, key string, r io.Reader, size int64, opts publish.PutOptions) (publish.ObjectInfo, error) {
	n := c.writes.Add(1) - 1
	switch {
	case c.At < 0 || n < c.At:
		return c.Store.Put(ctx, key, r, size, opts)
	case n == c.At && c.After:
		if _, err := c.Store.Put(ctx, key, r, size, opts); err != nil {
			return publish.ObjectInfo{}, err
		}
		return publish.ObjectInfo{}, fmt.Errorf("put %s: %w", key, ErrCrash)
	case n == c.At:
		io.CopyN(io.Discard, r, max(size/2, 1))
	}
	return publish.ObjectInfo{}, fmt.Errorf("put %s: %w", key, ErrCrash)
}

// Copy writes every object of src into dst, for a test that starts many
// runs from one prepared tree.
func Copy(ctx context.Context, dst, src publish.Store) error {
	list, err := src.List(ctx, "")
	if err != nil {
		return err
	}
	for _, info := range list {
		o, err := src.Open(ctx, info.Key)
		if err != nil {
			return err
		}
		_, err = dst.Put(ctx, info.Key, o, info.Size, publish.PutOptions{CacheControl: publish.CacheControl(info.Key, "")})
		o.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", info.Key, err)
		}
	}
	return nil
}
