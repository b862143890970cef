package store

import (
	"context"
	"time"
)

// Lead blocks until this process is the one fetcher of chain or ctx ends.
//
// replace me: a stub by the storage helper so that *DB satisfies
// query.FetchStore; the fetcher helper owns this file and writes the real
// election (a PostgreSQL advisory lock held on a dedicated connection; at
// once on SQLite). This stub leads at once on both.
func (db *DB) Lead(ctx context.Context, chain string, retry time.Duration) (lead context.Context, release func(), err error) {
	lead, release = context.WithCancel(ctx)
	return lead, release, nil
}
