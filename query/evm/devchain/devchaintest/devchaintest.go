// Package devchaintest starts the dev chain for tests: a chain closed at
// the test's end, and a Source dialled to it, one call each.
package devchaintest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
)

// Start starts a dev chain of cfg (its producer's log discarded unless
// cfg.Logger is set), closed at tb's end; it fails tb on error.
func Start(tb testing.TB, cfg devchain.Config) *devchain.Chain {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := devchain.Start(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("devchain.Start: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Dial returns a Source on c's JSON-RPC endpoint, closed at tb's end.
func Dial(tb testing.TB, c *devchain.Chain) *evm.Source {
	tb.Helper()
	src, err := evm.Dial(context.Background(), c.URL, evm.SourceConfig{})
	if err != nil {
		tb.Fatalf("dial the dev chain: %v", err)
	}
	tb.Cleanup(src.Close)
	return src
}
