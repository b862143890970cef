package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// Subscribe subscribes the account; created is false when it already was.
func (db *DB) Subscribe(ctx context.Context, account int64, chain, address string) (created bool, err error) {
	err = db.tx(ctx, func(tx bun.Tx) error {
		created, err = db.subscribe(ctx, tx, account, chain, address, nil)
		return err
	})
	return created, wrap("subscribe", err)
}

// SubscribeFrom implements query.Store.
func (db *DB) SubscribeFrom(ctx context.Context, account int64, chain, address string, start uint64) (created bool, err error) {
	if start > math.MaxInt64 {
		return false, wrap("subscribe", fmt.Errorf("start block %d beyond %d", start, int64(math.MaxInt64)))
	}
	err = db.tx(ctx, func(tx bun.Tx) error {
		created, err = db.subscribe(ctx, tx, account, chain, address, &start)
		return err
	})
	return created, wrap("subscribe", err)
}

// subscribe subscribes account to address; start, when given, is a start
// height the subscriber gives, kept (the lowest) while the address is
// owed a sync.
func (db *DB) subscribe(ctx context.Context, tx bun.IDB, account int64, chain, address string, start *uint64) (bool, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO tracked (chain, address, active, needs_sync, sync_from)
		VALUES (?, ?, FALSE, TRUE, 0) ON CONFLICT (chain, address) DO NOTHING`, chain, address); err != nil {
		return false, err
	}

	active, err := db.lockTracked(ctx, tx, chain, address)
	if err != nil {
		return false, err
	}
	if err := db.lockAccount(ctx, tx, account); err != nil {
		return false, err
	}
	// The subscription sees the events written after it (events_from).
	res, err := tx.ExecContext(ctx, `INSERT INTO subscriptions (account_id, chain, address, created, events_from)
		VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(id), 0) FROM events)) ON CONFLICT (account_id, chain, address) DO NOTHING`,
		account, chain, address, db.stamp())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, db.startFrom(ctx, tx, chain, address, start)
	}
	if err := db.checkSubscriptionCount(ctx, tx, account); err != nil {
		return false, err
	}
	if !active {
		// The first subscriber: the fetcher owes the address its balances
		// and the blocks from sync_from on.
		// A start height of an earlier tracking is forgotten.
		if _, err := tx.ExecContext(ctx, "UPDATE tracked SET active = TRUE, needs_sync = TRUE, start_block = NULL WHERE chain = ? AND address = ?",
			chain, address); err != nil {
			return false, err
		}
	}
	return true, db.startFrom(ctx, tx, chain, address, start)
}

// startFrom records start, when given, as the start height of address,
// the lowest given while the address is owed its sync; an address synced
// already keeps the history it has.
func (db *DB) startFrom(ctx context.Context, tx bun.IDB, chain, address string, start *uint64) error {
	if start == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE tracked SET start_block = CASE WHEN start_block IS NULL OR start_block > ? THEN ? ELSE start_block END
		WHERE chain = ? AND address = ? AND active AND needs_sync`, int64(*start), int64(*start), chain, address)
	return err
}

// lockTracked reads whether an address is tracked and, on PostgreSQL,
// locks its row until the transaction ends: subscribers of one address
// are serialised, so "active" always equals "has a subscription". (A
// SQLite write transaction holds the whole database already.)
func (db *DB) lockTracked(ctx context.Context, tx bun.IDB, chain, address string) (active bool, err error) {
	q := "SELECT active FROM tracked WHERE chain = ? AND address = ?"
	if db.postgres {
		q += " FOR UPDATE"
	}
	err = tx.NewRaw(q, chain, address).Scan(ctx, &active)
	return active, err
}

// lockAccount serialises, on PostgreSQL, the subscribes of one account
// while a subscription limit is set, so that two at once cannot both
// take the last place.
func (db *DB) lockAccount(ctx context.Context, tx bun.IDB, account int64) error {
	if db.maxSubscriptions <= 0 || !db.postgres {
		return nil
	}
	var id int64
	return tx.NewRaw("SELECT id FROM accounts WHERE id = ? FOR UPDATE", account).Scan(ctx, &id)
}

// checkSubscriptionCount refuses a new subscription beyond the account's
// limit, with query.ErrTooManySubscriptions (the caller rolls back).
func (db *DB) checkSubscriptionCount(ctx context.Context, tx bun.IDB, account int64) error {
	if db.maxSubscriptions <= 0 {
		return nil
	}
	var n int
	if err := tx.NewRaw("SELECT count(*) FROM subscriptions WHERE account_id = ?", account).Scan(ctx, &n); err != nil {
		return err
	}
	if n > db.maxSubscriptions {
		return query.ErrTooManySubscriptions
	}
	return nil
}

// Unsubscribe removes a subscription; stored data is kept. Errors:
// query.ErrNotFound.
func (db *DB) Unsubscribe(ctx context.Context, account int64, chain, address string) error {
	return wrap("unsubscribe", db.tx(ctx, func(tx bun.Tx) error {
		return db.unsubscribe(ctx, tx, account, chain, address)
	}))
}

func (db *DB) unsubscribe(ctx context.Context, tx bun.IDB, account int64, chain, address string) error {
	if _, err := db.lockTracked(ctx, tx, chain, address); err != nil {
		return err // no rows: never tracked, so not subscribed
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM subscriptions WHERE account_id = ? AND chain = ? AND address = ?",
		account, chain, address)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return query.ErrNotFound
	}
	var others bool
	if err := tx.NewRaw("SELECT EXISTS (SELECT 1 FROM subscriptions WHERE chain = ? AND address = ?)",
		chain, address).Scan(ctx, &others); err != nil {
		return err
	}
	if others {
		return nil
	}
	// The last subscriber left: remember where scanning stopped, unless the
	// address still waits for its first sync (then its sync_from stands).
	cp, ok, err := db.checkpoint(ctx, tx, chain)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE tracked SET active = FALSE,
		sync_from = CASE WHEN needs_sync OR ? THEN sync_from ELSE ? END
		WHERE chain = ? AND address = ?`, !ok, cp.Number, chain, address)
	return err
}

// subscribedOne is Subscribed of one address.
const subscribedOne = "SELECT EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $1 AND chain = $2 AND address = $3)"

// Subscribed reports whether the account is subscribed to any of addresses.
func (db *DB) Subscribed(ctx context.Context, account int64, chain string, addresses ...string) (bool, error) {
	if len(addresses) == 0 {
		return false, nil
	}
	var ok bool
	if len(addresses) == 1 {
		// Prepared: the answer to a page token that does not decode asks it.
		err := db.queryHotRow(ctx, subscribedOne, []any{account, chain, addresses[0]}, &ok)
		return ok, wrap("subscribed", err)
	}
	err := db.r.NewRaw("SELECT EXISTS (SELECT 1 FROM subscriptions WHERE account_id = ? AND chain = ? AND address IN (?))",
		account, chain, bun.List(addresses)).Scan(ctx, &ok)
	return ok, wrap("subscribed", err)
}

// Covers reports whether the account is subscribed to one of addresses
// whose covered range holds block.
func (db *DB) Covers(ctx context.Context, account int64, chain string, block uint64, addresses ...string) (bool, error) {
	if len(addresses) == 0 {
		return false, nil
	}
	var ok bool
	err := db.r.NewRaw(`SELECT EXISTS (SELECT 1 FROM subscriptions AS s JOIN tracked AS t ON t.chain = s.chain AND t.address = s.address
		WHERE s.account_id = ? AND s.chain = ? AND s.address IN (?) AND t.history_start <= ?)`,
		account, chain, bun.List(addresses), block).Scan(ctx, &ok)
	return ok, wrap("covers", err)
}

type subscriptionRow struct {
	Chain   string
	Address string
	Created time.Time
}

// Subscriptions lists an account's subscriptions after the cursor in
// (chain, address) order, at most limit, with the total count.
func (db *DB) Subscriptions(ctx context.Context, account int64, chain string, after *query.SubscriptionCursor, limit int) ([]query.Subscription, int, error) {
	subs, total, err := db.subscriptions(ctx, db.r, account, chain, after, limit)
	return subs, total, wrap("subscriptions", err)
}

func (db *DB) subscriptions(ctx context.Context, tx bun.IDB, account int64, chain string, after *query.SubscriptionCursor, limit int) ([]query.Subscription, int, error) {
	count := tx.NewSelect().Table("subscriptions").Where("account_id = ?", account)
	page := tx.NewSelect().Table("subscriptions").Column("chain", "address", "created").
		Where("account_id = ?", account).OrderExpr("chain, address").Limit(int64(limit))
	if chain != "" {
		count.Where("chain = ?", chain)
		page.Where("chain = ?", chain)
	}
	if after != nil {
		page.Where("(chain > ? OR (chain = ? AND address > ?))", after.Chain, after.Chain, after.Address)
	}
	total, err := count.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	var rows []subscriptionRow
	if limit > 0 {
		if err := page.Scan(ctx, &rows); err != nil {
			return nil, 0, err
		}
	}
	subs := make([]query.Subscription, len(rows))
	for i, r := range rows {
		subs[i] = query.Subscription{Chain: r.Chain, Address: r.Address, Created: utc(r.Created)}
	}
	return subs, int(total), nil
}

// Tracked lists the addresses of chain with at least one subscription:
// those synced in address order, then those owed a sync in the order
// they are owed it (pendingSyncs).
func (db *DB) Tracked(ctx context.Context, chain string) ([]query.Tracked, error) {
	var rows []struct {
		Address    string
		Covered    bool
		Backfilled bool
		HistoryLow uint64
	}
	err := db.r.NewRaw(`SELECT address, history_start IS NOT NULL AS covered,
		history_start IS NOT NULL AND backfill_next IS NULL AS backfilled,
		CASE WHEN backfill_next IS NULL THEN COALESCE(history_start, 0) ELSE 0 END AS history_low
		FROM tracked WHERE chain = ? AND active AND NOT needs_sync ORDER BY address`, chain).Scan(ctx, &rows)
	if err != nil {
		return nil, wrap("tracked", err)
	}
	out := make([]query.Tracked, len(rows), len(rows)+16)
	for i, r := range rows {
		out[i] = query.Tracked{Address: r.Address, Covered: r.Covered, Backfilled: r.Backfilled, HistoryLow: r.HistoryLow}
	}
	pending, err := db.pendingSyncs(ctx, chain)
	if err != nil {
		return nil, wrap("tracked", err)
	}
	return append(out, pending...), nil
}

// pendingSyncs lists the addresses of chain owed a sync, in the order
// they are owed it: each requester's in the order it subscribed them,
// the requesters round-robin (every requester's first, oldest first, then
// every second ...), an address shared by several requesters in its
// earliest place. One requester's bulk subscribe waits behind each other
// requester's next address, never in front of it.
func (db *DB) pendingSyncs(ctx context.Context, chain string) ([]query.Tracked, error) {
	var rows []struct {
		Address    string
		SyncFrom   uint64
		Covered    bool
		StartBlock sql.NullInt64
	}
	err := db.r.NewRaw(`WITH owed AS (
			SELECT s.address, s.created, ROW_NUMBER() OVER (PARTITION BY s.account_id ORDER BY s.created, s.address) AS turn
			FROM subscriptions AS s JOIN tracked AS t ON t.chain = s.chain AND t.address = s.address
			WHERE s.chain = ? AND t.active AND t.needs_sync),
		firsts AS (SELECT address, MIN(turn) AS turn, MIN(created) AS created FROM owed GROUP BY address)
		SELECT t.address, t.sync_from, t.history_start IS NOT NULL AS covered, t.start_block
		FROM tracked AS t JOIN firsts AS f ON f.address = t.address
		WHERE t.chain = ? AND t.active AND t.needs_sync
		ORDER BY f.turn, f.created, t.address`, chain, chain).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	out := make([]query.Tracked, len(rows))
	for i, r := range rows {
		out[i] = query.Tracked{Address: r.Address, NeedsSync: true, SyncFrom: r.SyncFrom, Covered: r.Covered,
			Born: r.StartBlock.Valid, StartBlock: uint64(max(r.StartBlock.Int64, 0))}
	}
	return out, nil
}

// MarkSynced records that the fetcher has synced these addresses up to and
// including block, and owes them a backfill from low up to block. An
// address covered for the first time is covered from block+1 on, and
// downwards as its backfill stores. A resubscribed one keeps its range
// (the backfill fills the gap since it was last tracked); one whose
// earlier backfill had not ended backfills from the lower of the two
// starts.
func (db *DB) MarkSynced(ctx context.Context, chain string, addresses []string, block, low uint64) error {
	if len(addresses) == 0 {
		return nil
	}
	pending := low <= block
	return wrap("mark synced", db.eventTx(ctx, func(tx bun.Tx) error {
		for part := range slices.Chunk(addresses, 500) {
			_, err := tx.ExecContext(ctx, `UPDATE tracked SET needs_sync = FALSE, synced_to = ?,
				history_start = COALESCE(history_start, ?),
				backfill_low = CASE WHEN NOT ? THEN backfill_low WHEN backfill_low IS NULL OR backfill_low > ? THEN ? ELSE backfill_low END,
				backfill_next = CASE WHEN ? THEN ? ELSE backfill_next END
				WHERE chain = ? AND address IN (?)`,
				block, block+1, pending, low, low, pending, block, chain, bun.List(part))
			if err != nil {
				return err
			}
		}
		// The state each address is in now, in the feed (event.go).
		return db.stateEvents(ctx, tx, chain, addresses, block)
	}))
}

// Backfills lists the pending backfills of chain's tracked addresses,
// those with the same range in one job, lowest range first.
func (db *DB) Backfills(ctx context.Context, chain string) ([]query.BackfillJob, error) {
	var rows []struct {
		Address      string
		BackfillLow  uint64
		BackfillNext uint64
		Born         bool
	}
	err := db.r.NewRaw(`SELECT address, backfill_low, backfill_next, COALESCE(start_block = backfill_low, FALSE) AS born FROM tracked
		WHERE chain = ? AND active AND NOT needs_sync AND backfill_next IS NOT NULL
		ORDER BY backfill_low, backfill_next, born, address`, chain).Scan(ctx, &rows)
	if err != nil {
		return nil, wrap("backfills", err)
	}
	var out []query.BackfillJob
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].Low == r.BackfillLow && out[n-1].Next == r.BackfillNext && out[n-1].Born == r.Born {
			out[n-1].Addresses = append(out[n-1].Addresses, r.Address)
			continue
		}
		out = append(out, query.BackfillJob{Addresses: []string{r.Address}, Low: r.BackfillLow, Next: r.BackfillNext, Born: r.Born})
	}
	return out, nil
}

// StoreBackfill stores backfilled transactions and moves the backfill of
// the job's addresses down to next, in one database transaction; the
// covered range grows down to next+1. Below job.Low the backfill ends.
// An address whose backfill is no longer job's (unsubscribed, or
// resubscribed and synced again) is left as it is; the transactions are
// stored all the same (they are the chain's, and inserts ignore rows
// already there), as are the statement rows of the backfilled blocks.
func (db *DB) StoreBackfill(ctx context.Context, chain string, job query.BackfillJob, txs []query.Transaction, changes []query.BalanceChange, next int64) error {
	if err := validate(txs, nil); err != nil {
		return wrap("store backfill", err)
	}
	if next >= int64(job.Next) {
		return wrap("store backfill", fmt.Errorf("next %d not below the job's %d", next, job.Next))
	}
	if err := db.prepareWrites(ctx); err != nil {
		return wrap("store backfill", err)
	}
	done := next < int64(job.Low)
	q := db.newQuarantine()
	return wrap("store backfill", db.tell(q, db.eventTx(ctx, func(tx bun.Tx) error {
		if err := db.putTransactions(ctx, tx, chain, txs, q); err != nil {
			return err
		}
		if err := db.putStatement(ctx, tx, chain, changes, nil); err != nil {
			return err
		}
		var ended []string
		for part := range slices.Chunk(job.Addresses, 500) {
			var moved []string
			err := tx.NewRaw(`UPDATE tracked SET
				backfill_next = CASE WHEN ? THEN NULL ELSE ? END,
				backfill_low = CASE WHEN ? THEN NULL ELSE backfill_low END,
				balances_pending = balances_pending OR ?,
				history_start = CASE WHEN history_start IS NULL OR history_start > ? THEN ? ELSE history_start END
				WHERE chain = ? AND address IN (?) AND active AND NOT needs_sync AND backfill_low = ? AND backfill_next = ?
				RETURNING address`,
				done, next, done, done, next+1, next+1, chain, bun.List(part), job.Low, job.Next).Scan(ctx, &moved)
			if err != nil {
				return err
			}
			ended = append(ended, moved...)
		}
		// The addresses whose backfill ended stay SYNCING until the
		// balances of the holdings it found are stored (BalancesStored).
		return nil
	})))
}

// BalancesStored records that the balances of addresses, those of every
// holding their backfills found included, are stored as of block: those
// whose backfill had ended are ACTIVE now, in the feed. The others are
// left as they are.
func (db *DB) BalancesStored(ctx context.Context, chain string, addresses []string, block uint64) error {
	if len(addresses) == 0 {
		return nil
	}
	return wrap("balances stored", db.eventTx(ctx, func(tx bun.Tx) error {
		var done []string
		for part := range slices.Chunk(addresses, 500) {
			var moved []string
			err := tx.NewRaw(`UPDATE tracked SET balances_pending = FALSE
				WHERE chain = ? AND address IN (?) AND balances_pending
				RETURNING address`, chain, bun.List(part)).Scan(ctx, &moved)
			if err != nil {
				return err
			}
			done = append(done, moved...)
		}
		slices.Sort(done)
		return db.stateEvents(ctx, tx, chain, done, block)
	}))
}

// BalancesPending lists the addresses of chain whose backfill has ended
// and whose balances are not yet recorded as stored (BalancesStored),
// each as a holding without a contract, followed by the token holdings
// its statement has rows of (those a backfill found among them).
func (db *DB) BalancesPending(ctx context.Context, chain string) ([]query.Holding, error) {
	var addrs []string
	err := db.r.NewRaw(`SELECT address FROM tracked WHERE chain = ? AND balances_pending ORDER BY address`, chain).Scan(ctx, &addrs)
	if err != nil {
		return nil, wrap("balances pending", err)
	}
	var out []query.Holding
	for part := range slices.Chunk(addrs, 500) {
		var rows []struct {
			Address  string
			Contract string
		}
		err := db.r.NewRaw(`SELECT DISTINCT address, contract FROM balance_changes
			WHERE chain = ? AND address IN (?) AND contract <> '' ORDER BY address, contract`, chain, bun.List(part)).Scan(ctx, &rows)
		if err != nil {
			return nil, wrap("balances pending", err)
		}
		for _, a := range part {
			out = append(out, query.Holding{Address: a})
			for len(rows) > 0 && rows[0].Address == a {
				out = append(out, query.Holding{Address: a, Contract: rows[0].Contract})
				rows = rows[1:]
			}
		}
	}
	return out, nil
}

// The columns of a requester's subscription with its state, and the
// tables they come from (s and t).
const (
	subscriptionColumns = `s.created, t.needs_sync OR t.backfill_next IS NOT NULL OR t.balances_pending, t.history_start`
	subscriptionTables  = `subscriptions AS s JOIN tracked AS t ON t.chain = s.chain AND t.address = s.address`
)

// subscriptionState is the state of a requester's subscription as one
// text column: "S" (syncing) or "A", then the first block of its covered
// range (none when it has none). Every read of an address's data selects
// it from subscriptionTables, in the same statement as the data, so that
// a read tells its state and covered range without a read of its own; a
// page selects it in the column of its documents (txpage.go), which never
// begin with a letter.
const subscriptionState = `CASE WHEN t.needs_sync OR t.backfill_next IS NOT NULL OR t.balances_pending THEN 'S' ELSE 'A' END || COALESCE(CAST(t.history_start AS TEXT), '')`

// parseState reads a subscriptionState value into sub.
func parseState(sub *query.Subscription, v string) error {
	if len(v) == 0 || (v[0] != 'S' && v[0] != 'A') {
		return fmt.Errorf("subscription state %q", v)
	}
	sub.State, sub.Covered = query.StateActive, len(v) > 1
	if sub.Covered {
		n, err := strconv.ParseUint(v[1:], 10, 64)
		if err != nil {
			return fmt.Errorf("subscription state %q", v)
		}
		sub.HistoryStart = n
	}
	if v[0] == 'S' || !sub.Covered {
		sub.State = query.StateSyncing
	}
	return nil
}

// subscriptionOne reads a requester's subscription with its state.
const subscriptionOne = `SELECT ` + subscriptionColumns + ` FROM ` + subscriptionTables + `
	WHERE s.account_id = $1 AND s.chain = $2 AND s.address = $3`

// Subscription returns the account's subscription to address, with its
// state and covered range. Errors: query.ErrNotSubscribed.
func (db *DB) Subscription(ctx context.Context, account int64, chain, address string) (query.Subscription, error) {
	var (
		created time.Time
		syncing bool
		start   sql.NullInt64
	)
	err := db.queryHotRow(ctx, subscriptionOne, []any{account, chain, address}, &created, &syncing, &start)
	if isNoRows(err) {
		return query.Subscription{}, wrap("subscription", query.ErrNotSubscribed)
	}
	if err != nil {
		return query.Subscription{}, wrap("subscription", err)
	}
	sub := query.Subscription{Chain: chain, Address: address, Created: utc(created), State: query.StateActive,
		HistoryStart: uint64(start.Int64), Covered: start.Valid}
	if syncing || !start.Valid {
		sub.State = query.StateSyncing
	}
	return sub, nil
}
