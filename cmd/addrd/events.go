package main

// The event feed's and the webhooks' flags and workers (docs/events.md).

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/webhook"
)

// eventFlags are serve's flags for the event feed and the webhooks.
func eventFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "event-retention", Value: 7 * 24 * time.Hour, EnvVars: []string{"ADDRD_EVENT_RETENTION"},
			Usage: "events older than `DURATION` are deleted from the feed (GET /v1/events) with the webhooks' delivery log; a cursor or webhook behind them must start again"},
		&cli.BoolFlag{Name: "webhooks", Value: true, EnvVars: []string{"ADDRD_WEBHOOKS"},
			Usage: "deliver webhooks in this process (--webhooks=false for replicas that only serve; replicas sharing a PostgreSQL database share the endpoints)"},
		&cli.BoolFlag{Name: "webhook-allow-http", EnvVars: []string{"ADDRD_WEBHOOK_ALLOW_HTTP"},
			Usage: "let webhook endpoints use http:// (development, and the default with --dev; else https:// only)"},
		&cli.BoolFlag{Name: "webhook-allow-private", EnvVars: []string{"ADDRD_WEBHOOK_ALLOW_PRIVATE"},
			Usage: "let webhooks reach loopback, private, link-local and metadata addresses (tests, private deployments, and the default with --dev; else refused, checked on the address dialled)"},
		&cli.IntFlag{Name: "webhook-max-endpoints", Value: 10, EnvVars: []string{"ADDRD_WEBHOOK_MAX_ENDPOINTS"},
			Usage: "the most webhook endpoints, `N`, a requester may hold (0: no limit)"},
		&cli.StringFlag{Name: "webhook-rate", Value: "0", EnvVars: []string{"ADDRD_WEBHOOK_RATE"},
			Usage: "events delivered per requester, all its endpoints together, `RATE` = N/s, N/m or N/h (0: no limit)"},
		&cli.DurationFlag{Name: "webhook-retry-for", Value: webhook.DefaultRetryFor, EnvVars: []string{"ADDRD_WEBHOOK_RETRY_FOR"},
			Usage: "an endpoint failing for `DURATION` is disabled, with the reason in GET /v1/webhooks/{id}"},
		&cli.DurationFlag{Name: "webhook-timeout", Value: webhook.DefaultTimeout, EnvVars: []string{"ADDRD_WEBHOOK_TIMEOUT"},
			Usage: "how long (`DURATION`) one delivery attempt may take"},
		&cli.IntFlag{Name: "webhook-workers", Value: webhook.DefaultWorkers, EnvVars: []string{"ADDRD_WEBHOOK_WORKERS"},
			Usage: "endpoints delivered to at once by this process, `N`"},
		&cli.IntFlag{Name: "webhook-workers-per-requester", EnvVars: []string{"ADDRD_WEBHOOK_WORKERS_PER_REQUESTER"},
			Usage: "of those, the most one requester's endpoints hold, `N` (0: a quarter of --webhook-workers): one requester's slow endpoints leave the others theirs"},
	}
}

// eventOptions are the event and webhook flags as read.
type eventOptions struct {
	retention    time.Duration
	deliver      bool
	policy       webhook.Policy
	maxEndpoints int
	rate         shell.Rate
	retryFor     time.Duration
	timeout      time.Duration
	workers      int
	// workersPerRequester bounds the workers one requester holds.
	workersPerRequester int
}

func eventOptionsFrom(c *cli.Context) (eventOptions, error) {
	o := eventOptions{retention: c.Duration("event-retention"), deliver: c.Bool("webhooks"),
		policy:       webhook.Policy{AllowHTTP: c.Bool("webhook-allow-http"), AllowPrivate: c.Bool("webhook-allow-private")},
		maxEndpoints: c.Int("webhook-max-endpoints"), retryFor: c.Duration("webhook-retry-for"),
		timeout: c.Duration("webhook-timeout"), workers: c.Int("webhook-workers"),
		workersPerRequester: c.Int("webhook-workers-per-requester")}
	if c.Bool("dev") { // a local receiver, in development
		o.policy.AllowHTTP = o.policy.AllowHTTP || !c.IsSet("webhook-allow-http")
		o.policy.AllowPrivate = o.policy.AllowPrivate || !c.IsSet("webhook-allow-private")
	}
	switch {
	case o.retention < time.Minute:
		return o, shell.Usagef("--event-retention %s: want a minute or more", o.retention)
	case o.maxEndpoints < 0:
		return o, shell.Usagef("--webhook-max-endpoints %d: want 0 (no limit) or more", o.maxEndpoints)
	case o.retryFor < time.Minute:
		return o, shell.Usagef("--webhook-retry-for %s: want a minute or more", o.retryFor)
	case o.timeout < 100*time.Millisecond || o.timeout > time.Minute:
		return o, shell.Usagef("--webhook-timeout %s: want from 100ms to 1m", o.timeout)
	case o.workers < 1 || o.workers > 1024:
		return o, shell.Usagef("--webhook-workers %d: want 1 to 1024", o.workers)
	case o.workersPerRequester < 0 || o.workersPerRequester > o.workers:
		return o, shell.Usagef("--webhook-workers-per-requester %d: want 0 (a quarter of the workers) to --webhook-workers (%d)", o.workersPerRequester, o.workers)
	}
	var err error
	if o.rate, err = shell.ParseRate(c.String("webhook-rate")); err != nil {
		return o, shell.Usagef("--webhook-rate %q: %w", c.String("webhook-rate"), err)
	}
	return o, nil
}

// pruneEvery is how often each replica deletes what is past retention.
const pruneEvery = time.Minute

// startPruner deletes the events and delivery log older than the
// retention, every pruneEvery, until ctx ends. Replicas may prune at
// once: deletes by position and time are idempotent.
func startPruner(ctx context.Context, wg *sync.WaitGroup, log *slog.Logger, db *store.DB, o eventOptions, now func() time.Time) {
	wg.Go(func() {
		t := time.NewTicker(pruneEvery)
		defer t.Stop()
		for {
			before := now().Add(-o.retention)
			n, err := db.PruneEvents(ctx, before)
			if err == nil {
				_, err = db.PruneWebhookAttempts(ctx, before)
			}
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
