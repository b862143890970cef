package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/site"
)

// revokedSession is a browser session logged out before it expired. Rows
// are deleted once the session would have expired, so the table holds at
// most the sessions logged out within the longest session's lifetime.
type revokedSession struct {
	bun.BaseModel `bun:"table:revoked_sessions"`

	ID        string    `bun:"id,pk"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

var _ site.SessionRevocations = (*DB)(nil)

// RevokeSession records that the browser session id was logged out; it is
// refused by every server using this database until expires. Expired
// records are deleted on the way.
func (d *DB) RevokeSession(ctx context.Context, id string, expires time.Time) error {
	now := d.now()
	err := d.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*revokedSession)(nil)).Where("expires_at <= ?", now).Exec(ctx); err != nil {
			return err
		}
		if !expires.After(now) {
			return nil
		}
		_, err := tx.NewInsert().Model(&revokedSession{ID: id, ExpiresAt: expires.UTC()}).On("CONFLICT (id) DO NOTHING").Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// SessionRevoked reports whether the browser session id was logged out.
func (d *DB) SessionRevoked(ctx context.Context, id string) (bool, error) {
	ctx, cancel := d.bounded(ctx)
	defer cancel()
	n, err := d.db.NewSelect().Model((*revokedSession)(nil)).Where("id = ? AND expires_at > ?", id, d.now()).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("check session: %w", d.busy(ctx, err))
	}
	return n > 0, nil
}

// revokedSessions counts the records kept (for tests).
func (d *DB) revokedSessions(ctx context.Context) (int64, error) {
	return d.db.NewSelect().Model((*revokedSession)(nil)).Count(ctx)
}
