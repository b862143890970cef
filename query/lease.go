package query

import (
	"context"
	"errors"
	"time"
)

// ErrLeaseLost: the fetcher's lease on a chain expired or another
// replica took it, so the write it was making is refused.
var ErrLeaseLost = errors.New("lease lost")

// Lease is a replica's hold on a chain's fetching: while it lasts, its
// holder is the one process that writes the chain's data. Times are the
// database's, so replicas need not agree on the time of day.
type Lease struct {
	Chain  string
	Holder string // the replica holding it, such as host:pid
	// Generation grows with every new holder: the fencing token each
	// write of the fetcher checks in its own transaction.
	Generation int64
	// Left is how long the lease had to run when it was read; zero or
	// less when it had expired (by -Left).
	Left time.Duration
	// Head is the node's latest block as the holder last saw it.
	Head uint64
	// Progress is how long ago, when the lease was read, the holder last
	// advanced (a step of its head follower ended well); negative when
	// it has not said since it took the lease. Problem is what it last
	// reported failing, "" for nothing.
	Progress time.Duration
	Problem  string
}

// LeaderReport is what the holder of a lease says of its fetching at
// each renewal, for every replica's /healthz: the node's head, how long
// ago it last advanced (negative: not yet), and what fails, if anything.
type LeaderReport struct {
	Head     uint64
	Progress time.Duration
	Problem  string
}

// LeaseStore keeps the fetchers' leases.
type LeaseStore interface {
	// AcquireLease takes chain's lease for holder, for ttl, when it is
	// free or has expired, with the next generation. Otherwise held is
	// false and l is the current lease.
	AcquireLease(ctx context.Context, chain, holder string, ttl time.Duration) (l Lease, held bool, err error)
	// RenewLease extends l to ttl from now and records the holder's
	// report. Errors: ErrLeaseLost when l has expired or another holds
	// the chain.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration, r LeaderReport) (Lease, error)
	// ReleaseLease ends l at once, if it is still held, so that another
	// replica may take over without waiting for it to expire.
	ReleaseLease(ctx context.Context, l Lease) error
	// ChainLease returns chain's lease, held or expired. Errors:
	// ErrNotFound when no replica has ever held it.
	ChainLease(ctx context.Context, chain string) (Lease, error)
}

type leaseKey struct{}

// WithLease returns ctx carrying l. A FetchStore write made with it checks,
// in its own transaction, that l is still held and refuses with
// ErrLeaseLost otherwise: a replica that was frozen, partitioned or slow
// past its lease writes nothing once another has taken over.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseFrom returns the lease ctx carries, if any.
func LeaseFrom(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok
}
