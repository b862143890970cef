package main

// The event feed's flags and workers (docs/events.md).

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query/store"
)

// eventFlags are serve's flags for the event feed.
func eventFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "event-retention", Value: 7 * 24 * time.Hour, EnvVars: []string{"ADDRD_EVENT_RETENTION"},
			Usage: "events older than `DURATION` are deleted from the feed (GET /v1/events); a cursor or webhook behind them must start again"},
	}
}

// eventOptions are the event flags as read.
type eventOptions struct {
	retention time.Duration
}

func eventOptionsFrom(c *cli.Context) (eventOptions, error) {
	o := eventOptions{retention: c.Duration("event-retention")}
	if o.retention < time.Minute {
		return o, shell.Usagef("--event-retention %s: want a minute or more", o.retention)
	}
	return o, nil
}

// pruneEvery is how often each replica deletes the events past retention.
const pruneEvery = time.Minute

// startPruner deletes the events older than the retention, every
// pruneEvery, until ctx ends. Replicas may prune at once: deletes by
// position are idempotent.
func startPruner(ctx context.Context, wg *sync.WaitGroup, log *slog.Logger, db *store.DB, o eventOptions, now func() time.Time) {
	wg.Go(func() {
		t := time.NewTicker(pruneEvery)
		defer t.Stop()
		for {
			n, err := db.PruneEvents(ctx, now().Add(-o.retention))
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn("events: pruning failed", "err", err)
			case n > 0:
				log.Info("events: pruned past retention", "events", n, "retention", o.retention)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}
