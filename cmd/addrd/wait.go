package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// Opening the database at start waits for it: a replica started while
// PostgreSQL refuses connections (max_connections reached, starting up,
// away) retries with back-off, saying so, instead of exiting.

// openWaitFirst and openWaitMax bound the back-off between tries.
const (
	openWaitFirst = 500 * time.Millisecond
	openWaitMax   = 10 * time.Second
)

// openWaiting calls open until it succeeds, fails for a reason waiting
// does not cure, or ctx ends.
func openWaiting(ctx context.Context, log *slog.Logger, open func() (*store.DB, error)) (*store.DB, error) {
	wait := openWaitFirst
	for {
		db, err := open()
		if err == nil || !errors.Is(err, query.ErrUnavailable) {
			return db, err
		}
		log.Warn("database unavailable at start: retrying", "err", err, "retry", wait)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, openWaitMax)
	}
}
