package store

// Webhook endpoints and their delivery queue (migration 0051,
// docs/events.md). The queue is the endpoints table: an endpoint is a
// job while it is active, due and behind the feed; a replica leases it
// (timed by the database's clock), delivers its events in order and
// records the run with its lease checked, so that no two replicas send
// the same endpoint's events and a dead replica's endpoints are taken
// over when its lease runs out.

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// webhookColumns are the columns of a webhookRow.
const webhookColumns = `id, account_id, url, description, chain, address, wallet, kinds, secret, old_secret, old_until, cursor,
	state, disabled_reason, failures, failing_since, next_attempt, created, updated`

type webhookRow struct {
	ID             string
	AccountID      int64
	URL            string `bun:"url"`
	Description    string
	Chain          string
	Address        string
	Wallet         string
	Kinds          string
	Secret         string
	OldSecret      string
	OldUntil       sql.NullTime
	Cursor         int64
	State          string
	DisabledReason string
	Failures       int
	FailingSince   sql.NullTime
	NextAttempt    time.Time
	Created        time.Time
	Updated        time.Time
}

func (r webhookRow) webhook() query.Webhook {
	w := query.Webhook{ID: r.ID, Account: r.AccountID, URL: r.URL, Description: r.Description,
		Filter: query.EventFilter{Chain: r.Chain, Address: r.Address, Wallet: r.Wallet}, Secret: r.Secret, OldSecret: r.OldSecret,
		Cursor: r.Cursor, State: r.State, DisabledReason: r.DisabledReason, Failures: r.Failures,
		NextAttempt: utc(r.NextAttempt), Created: utc(r.Created), Updated: utc(r.Updated)}
	if r.Kinds != "" {
		w.Filter.Kinds = strings.Split(r.Kinds, ",")
	}
	if r.OldUntil.Valid {
		w.OldUntil = utc(r.OldUntil.Time)
	}
	if r.FailingSince.Valid {
		w.FailingSince = utc(r.FailingSince.Time)
	}
	return w
}

// WithMaxWebhooks bounds the webhook endpoints of one account:
// CreateWebhook refuses one beyond n with query.ErrTooManyWebhooks. Zero
// (the default) is no bound.
func WithMaxWebhooks(n int) Option { return func(db *DB) { db.maxWebhooks = n } }

// CreateWebhook stores a new endpoint of w.Account, active, delivering
// from w.Cursor on. Errors: query.ErrTooManyWebhooks.
func (db *DB) CreateWebhook(ctx context.Context, w query.Webhook) (query.Webhook, error) {
	id, err := db.token(10, hex.EncodeToString)
	if err != nil {
		return query.Webhook{}, wrap("create webhook", err)
	}
	now := db.stamp()
	w.ID, w.State, w.DisabledReason, w.Failures, w.FailingSince = "wh_"+id, query.WebhookActive, "", 0, time.Time{}
	w.Created, w.Updated, w.NextAttempt = now, now, now
	err = db.tx(ctx, func(tx bun.Tx) error {
		if db.maxWebhooks > 0 {
			if db.postgres { // serialise the account's creates
				var id int64
				if err := tx.NewRaw("SELECT id FROM accounts WHERE id = ? FOR UPDATE", w.Account).Scan(ctx, &id); err != nil {
					return err
				}
			}
			var n int
			if err := tx.NewRaw("SELECT count(*) FROM webhooks WHERE account_id = ?", w.Account).Scan(ctx, &n); err != nil {
				return err
			}
			if n >= db.maxWebhooks {
				return query.ErrTooManyWebhooks
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookColumns+`, lease_holder, lease_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0)`,
			w.ID, w.Account, w.URL, w.Description, w.Filter.Chain, w.Filter.Address, w.Filter.Wallet, strings.Join(w.Filter.Kinds, ","),
			w.Secret, w.OldSecret, nullTime(w.OldUntil), w.Cursor, w.State, w.DisabledReason, w.Failures,
			nullTime(w.FailingSince), w.NextAttempt, w.Created, w.Updated)
		return err
	})
	if err == query.ErrTooManyWebhooks {
		return query.Webhook{}, err
	}
	return w, wrap("create webhook", err)
}

// Webhooks lists the account's endpoints, oldest first.
func (db *DB) Webhooks(ctx context.Context, account int64) ([]query.Webhook, error) {
	var rows []webhookRow
	err := db.r.NewRaw("SELECT "+webhookColumns+" FROM webhooks WHERE account_id = ? ORDER BY created, id", account).Scan(ctx, &rows)
	if err != nil {
		return nil, wrap("webhooks", err)
	}
	out := make([]query.Webhook, len(rows))
	for i, r := range rows {
		out[i] = r.webhook()
	}
	return out, nil
}

// Webhook returns one of the account's endpoints. Errors: query.ErrNotFound.
func (db *DB) Webhook(ctx context.Context, account int64, id string) (query.Webhook, error) {
	var r webhookRow
	err := db.w.NewRaw("SELECT "+webhookColumns+" FROM webhooks WHERE account_id = ? AND id = ?", account, id).Scan(ctx, &r)
	if err != nil {
		return query.Webhook{}, wrap("webhook", err)
	}
	return r.webhook(), nil
}

// UpdateWebhook stores w's settings, secrets and state, and with
// restart its cursor and failures too (else they stay as the last run
// recorded them, however recent). It takes the endpoint's lease from any
// replica delivering it, whose run then records nothing
// (query.ErrLeaseGone). Errors: query.ErrNotFound.
func (db *DB) UpdateWebhook(ctx context.Context, w query.Webhook, restart bool) error {
	res, err := db.w.ExecContext(ctx, `UPDATE webhooks SET url = ?, description = ?, chain = ?, address = ?, wallet = ?, kinds = ?,
		secret = ?, old_secret = ?, old_until = ?, state = ?, disabled_reason = ?,
		cursor = CASE WHEN ? THEN ? ELSE cursor END, failures = CASE WHEN ? THEN ? ELSE failures END,
		failing_since = CASE WHEN ? THEN ? ELSE failing_since END, next_attempt = CASE WHEN ? THEN ? ELSE next_attempt END,
		updated = ?, lease_holder = '', lease_ms = 0
		WHERE account_id = ? AND id = ?`,
		w.URL, w.Description, w.Filter.Chain, w.Filter.Address, w.Filter.Wallet, strings.Join(w.Filter.Kinds, ","), w.Secret, w.OldSecret,
		nullTime(w.OldUntil), w.State, w.DisabledReason, restart, w.Cursor, restart, w.Failures,
		restart, nullTime(micro(w.FailingSince)), restart, micro(w.NextAttempt), db.stamp(), w.Account, w.ID)
	if err != nil {
		return wrap("update webhook", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return wrap("update webhook", cmpErr(err, query.ErrNotFound))
	}
	return nil
}

// micro is t in UTC at the database's precision (microseconds), so that
// what is written compares with db.stamp() as it read.
func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// cmpErr is err, or alt when err is nil.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// DeleteWebhook deletes an endpoint and its log. Errors: query.ErrNotFound.
func (db *DB) DeleteWebhook(ctx context.Context, account int64, id string) error {
	return wrap("delete webhook", db.tx(ctx, func(tx bun.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM webhooks WHERE account_id = ? AND id = ?", account, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, query.ErrNotFound)
		}
		// SQLite's foreign keys cascade too; PostgreSQL's always do.
		_, err = tx.ExecContext(ctx, "DELETE FROM webhook_attempts WHERE webhook_id = ?", id)
		return err
	}))
}

type attemptRow struct {
	ID        int64
	WebhookID string
	EventID   string
	EventType string
	Attempted time.Time
	Status    int
	Error     string
	LatencyUs int64
	Response  string
}

// WebhookAttempts returns an endpoint's delivery log before attempt
// before (0: from the newest), newest first, at most limit.
func (db *DB) WebhookAttempts(ctx context.Context, id string, before int64, limit int) ([]query.WebhookAttempt, error) {
	q := `SELECT id, webhook_id, event_id, event_type, attempted, status, error, latency_us, response FROM webhook_attempts
		WHERE webhook_id = ?`
	args := []any{id}
	if before > 0 {
		q += " AND id < ?"
		args = append(args, before)
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	var rows []attemptRow
	if err := db.r.NewRaw(q, args...).Scan(ctx, &rows); err != nil {
		return nil, wrap("webhook attempts", err)
	}
	out := make([]query.WebhookAttempt, len(rows))
	for i, r := range rows {
		out[i] = query.WebhookAttempt{ID: r.ID, Webhook: r.WebhookID, EventID: r.EventID, EventType: r.EventType,
			Time: utc(r.Attempted), Status: r.Status, Error: r.Error, Latency: time.Duration(r.LatencyUs) * time.Microsecond,
			Response: r.Response}
	}
	return out, nil
}

// LogWebhookAttempt adds an attempt made outside a run to the log.
func (db *DB) LogWebhookAttempt(ctx context.Context, a query.WebhookAttempt) error {
	return wrap("log webhook attempt", db.tx(ctx, func(tx bun.Tx) error { return insertAttempts(ctx, tx, []query.WebhookAttempt{a}) }))
}

func insertAttempts(ctx context.Context, tx bun.IDB, as []query.WebhookAttempt) error {
	for part := range slices.Chunk(as, batch) {
		var q strings.Builder
		q.WriteString(`INSERT INTO webhook_attempts (webhook_id, event_id, event_type, attempted, status, error, latency_us, response) VALUES `)
		args := make([]any, 0, 8*len(part))
		for i, a := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, a.Webhook, a.EventID, a.EventType, a.Time.UTC(), a.Status, a.Error, a.Latency.Microseconds(), a.Response)
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("webhook_attempts: %w", err)
		}
	}
	return nil
}

// ClaimWebhook leases to holder, for ttl, the active endpoint due the
// longest that is behind the feed, leased by no one (or whose lease ran
// out) and of none of the accounts skip; ok is false when none is.
func (db *DB) ClaimWebhook(ctx context.Context, holder string, ttl time.Duration, skip ...int64) (query.Webhook, bool, error) {
	now := db.nowMillis()
	args := []any{holder, ttl.Milliseconds(), db.stamp()}
	skipped := ""
	if len(skip) > 0 {
		skipped = " AND account_id NOT IN (?)"
		args = append(args, bun.List(skip))
	}
	pick := `SELECT id FROM webhooks WHERE state = 'ACTIVE' AND next_attempt <= ? AND lease_ms <= ` + now + skipped + `
		AND cursor < (SELECT COALESCE(MAX(id), 0) FROM events) ORDER BY next_attempt LIMIT 1`
	if db.postgres {
		pick += " FOR UPDATE SKIP LOCKED"
	}
	var rows []webhookRow
	err := db.w.NewRaw(`UPDATE webhooks SET lease_holder = ?, lease_ms = `+now+` + ?
		WHERE id = (`+pick+`) AND lease_ms <= `+now+` RETURNING `+webhookColumns, args...).Scan(ctx, &rows)
	if err != nil && !isNoRows(err) {
		return query.Webhook{}, false, wrap("claim webhook", err)
	}
	if len(rows) == 0 {
		return query.Webhook{}, false, nil
	}
	return rows[0].webhook(), true, nil
}

// FinishWebhook records a delivery run of an endpoint holder leases, in
// one transaction: its attempts, its cursor and failures (or its
// disabling), and renews the lease for ttl or releases it. Errors:
// query.ErrLeaseGone, writing nothing, when holder no longer holds it.
func (db *DB) FinishWebhook(ctx context.Context, holder, id string, o query.WebhookOutcome, ttl time.Duration) error {
	now := db.nowMillis()
	err := db.tx(ctx, func(tx bun.Tx) error {
		lease := now + " + ?"
		if o.Release {
			lease = "0 + ?"
		}
		state, reason := query.WebhookActive, ""
		if o.Disable != "" {
			state, reason = query.WebhookDisabled, o.Disable
		}
		res, err := tx.ExecContext(ctx, `UPDATE webhooks SET cursor = ?, failures = ?, failing_since = ?, next_attempt = ?,
			state = ?, disabled_reason = ?, lease_ms = `+lease+`, updated = ?
			WHERE id = ? AND lease_holder = ? AND state = 'ACTIVE'`,
			o.Cursor, o.Failures, nullTime(micro(o.FailingSince)), micro(o.NextAttempt), state, reason, ttl.Milliseconds(), db.stamp(),
			id, holder)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, query.ErrLeaseGone)
		}
		return insertAttempts(ctx, tx, o.Attempts)
	})
	if err == query.ErrLeaseGone {
		return err
	}
	return wrap("finish webhook", err)
}

// PruneWebhookAttempts deletes the delivery log older than t.
func (db *DB) PruneWebhookAttempts(ctx context.Context, before time.Time) (int, error) {
	res, err := db.w.ExecContext(ctx, "DELETE FROM webhook_attempts WHERE attempted < ?", before.UTC())
	if err != nil {
		return 0, wrap("prune webhook attempts", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("prune webhook attempts", err)
}
