package auth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBusy is returned by the credential checks when every connection of
// the pool stayed busy for the pool's wait (SetPool): the request may
// succeed later. It is not site.ErrUnauthenticated, so the server answers
// 503 and asks to retry.
var ErrBusy = errors.New("the auth database is busy")

// DefaultPoolConns and DefaultPoolWait are wharf serve's pool of
// PostgreSQL connections: a connection's check takes about a millisecond,
// so 16 of them answer thousands of checks a second, and a burst beyond
// that waits its turn for up to a few seconds.
const (
	DefaultPoolConns = 16
	DefaultPoolWait  = 5 * time.Second
)

// SetPool bounds the connections the database opens to PostgreSQL at
// conns (a check that needs one waits for one) and how long a credential
// check waits for one at wait (then ErrBusy). Without it a burst of
// requests opens a connection each, up to the server's max_connections,
// and the requests beyond fail, as would the other clients of a server
// shared with other services. A SQLite database ignores it. Call it
// before the database is used.
func (d *DB) SetPool(conns int, wait time.Duration) {
	if !d.postgres {
		return
	}
	d.db.SetMaxOpenConns(conns)
	d.db.SetMaxIdleConns(conns)
	d.db.SetConnMaxIdleTime(5 * time.Minute)
	d.wait = wait
}

// bounded is the context of one credential check's queries: it ends after
// the pool's wait.
func (d *DB) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.wait <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d.wait, errWaited)
}

var errWaited = errors.New("waited for a connection")

// busy turns the end of a check's wait into ErrBusy.
func (d *DB) busy(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errWaited) {
		return fmt.Errorf("%w: no connection of %d free within %v (wharf serve --db-conns, --db-wait): %v", ErrBusy, d.db.Stats().MaxOpenConnections, d.wait, err)
	}
	return err
}
