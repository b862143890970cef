// Package parallel runs the n steps of a job on a bounded number of
// goroutines: the publisher's uploads, the fetcher's and the chain
// families' block reads.
package parallel

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Do runs f for 0..n-1 on at most limit goroutines (at least one) and
// returns the first error, canceling the others; the steps not started
// yet are not started. When ctx ends first, it returns its cause.
func Do(ctx context.Context, n, limit int, f func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, limit))
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return context.Cause(ctx)
}
