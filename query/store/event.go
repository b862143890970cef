package store

// The event feed's outbox (migration 0050, docs/events.md): events are
// inserted by the transactions that store what they tell of, so that the
// feed never misses one nor tells of a change that was rolled back.

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
)

// eventLockID is the PostgreSQL advisory lock every transaction that
// writes events takes first: ids are then taken, and their transactions
// committed, one after another, so that a reader who sees position n has
// seen every position under it (a sequence alone hands out ids in one
// order and commits them in another).
const eventLockID = 7368223

// lockEvents takes the event lock until tx ends (PostgreSQL; a SQLite
// write transaction holds the whole database already). It must be the
// first statement after the fence, before any row lock, so that two
// transactions never wait for each other.
func (db *DB) lockEvents(ctx context.Context, tx bun.IDB) error {
	if !db.postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", eventLockID)
	return err
}

// eventTx is tx for a write that may write events: the event lock
// first, and the OnEvents hook after the commit.
func (db *DB) eventTx(ctx context.Context, f func(tx bun.Tx) error) error {
	err := db.tx(ctx, func(tx bun.Tx) error {
		if err := db.lockEvents(ctx, tx); err != nil {
			return fmt.Errorf("event lock: %w", err)
		}
		return f(tx)
	})
	if err == nil {
		if hook := db.onEvents.Load(); hook != nil {
			(*hook)()
		}
	}
	return err
}

// OnEvents sets a function called after every commit that may have
// written events (an events.Watcher's Notify: readers on this replica
// learn of them at once, others at their next poll). It must not block.
func (db *DB) OnEvents(f func()) { db.onEvents.Store(&f) }

// changeEvents are the events of statement rows stored: one
// balance_change each, followed by an unreconciled for a row that does
// not reconcile, in block order; each says its row's finality by fin.
func changeEvents(changes []query.BalanceChange, fin query.Finality, now time.Time) []query.Event {
	slices.SortStableFunc(changes, func(a, b query.BalanceChange) int {
		switch {
		case a.Block != b.Block:
			return cmp.Compare(a.Block, b.Block)
		case a.Address != b.Address:
			return strings.Compare(a.Address, b.Address)
		}
		return strings.Compare(a.Contract, b.Contract)
	})
	out := make([]query.Event, 0, len(changes))
	for _, c := range changes {
		data := events.ChangeJSON(c, fin.Of(c.Block))
		e := query.Event{Chain: c.Chain, Address: c.Address, Kind: query.EventBalanceChange, Block: c.Block, Created: now, Data: data}
		out = append(out, e)
		if c.Checked && !c.Reconciled {
			e.Kind = query.EventUnreconciled
			out = append(out, e)
		}
	}
	return out
}

// insertChanges inserts statement rows, leaving those already there as
// they are, and writes the events of those it inserted.
func (db *DB) insertChanges(ctx context.Context, tx bun.IDB, chain string, changes []query.BalanceChange) error {
	type key struct {
		address  string
		block    uint64
		contract string
	}
	at := make(map[key]int, len(changes))
	args := make([]any, 0, 6*len(changes))
	for i, c := range changes {
		args = append(args, chain, c.Address, c.Block, c.Contract, string(appendChangeDoc(nil, c)), unixTime(c.Time))
		at[key{c.Address, c.Block, c.Contract}] = i
	}
	inserted := make([]bool, len(changes))
	err := db.insert(ctx, tx, changesInsert, args, func(rows *sql.Rows) error {
		var k key
		if err := rows.Scan(&k.address, &k.block, &k.contract); err != nil {
			return err
		}
		inserted[at[k]] = true
		return nil
	})
	if err != nil {
		return err
	}
	var stored []query.BalanceChange
	for i, c := range changes {
		if inserted[i] {
			c.Chain = chain
			stored = append(stored, c)
		}
	}
	if len(stored) == 0 {
		return nil
	}
	fin, err := db.finality(ctx, tx, chain)
	if err != nil {
		return err
	}
	return db.writeEvents(ctx, tx, changeEvents(stored, fin, db.stamp()))
}

// writeEvents inserts events in order; their ids are their positions.
func (db *DB) writeEvents(ctx context.Context, tx bun.IDB, events []query.Event) error {
	args := make([]any, 0, 6*len(events))
	for _, e := range events {
		args = append(args, e.Chain, e.Address, e.Kind, e.Block, e.Created, e.Data)
	}
	if err := db.insert(ctx, tx, eventsInsert, args, nil); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	return nil
}

var (
	// changesInsert inserts statement rows, leaving those already there
	// as they are, and returns the keys of those it inserted.
	changesInsert = &insertSpec{into: "balance_changes (chain, address, block_number, contract, doc, block_time)", width: 6,
		ignore: true, returning: "address, block_number, contract"}
	eventsInsert = &insertSpec{into: "events (chain, address, kind, block_number, created, data)", width: 6}
)

// retractEvents writes a balance_change_retracted event for every
// statement row of chain above block number, which a rewind is about to
// delete: newest first, as they are undone.
func (db *DB) retractEvents(ctx context.Context, tx bun.IDB, chain string, number uint64) error {
	rows, err := tx.QueryContext(ctx, `SELECT address, doc FROM balance_changes WHERE chain = ? AND block_number > ?
		ORDER BY block_number DESC, address, contract`, chain, number)
	if err != nil {
		return err
	}
	var changes []query.BalanceChange
	for rows.Next() {
		var address, doc string
		if err := rows.Scan(&address, &doc); err != nil {
			rows.Close()
			return err
		}
		c, err := parseChangeDoc(chain, address, doc)
		if err != nil {
			rows.Close()
			return err
		}
		changes = append(changes, c)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fin, err := db.finality(ctx, tx, chain)
	if err != nil {
		return err
	}
	now := db.stamp()
	out := make([]query.Event, len(changes))
	for i, c := range changes {
		out[i] = query.Event{Chain: chain, Address: c.Address, Kind: query.EventRetracted, Block: c.Block, Created: now,
			Data: events.ChangeJSON(c, fin.Of(c.Block))}
	}
	return db.writeEvents(ctx, tx, out)
}

// stateEvents writes a subscription_state event for each of addresses,
// as tracked holds it now (within tx, after the change).
func (db *DB) stateEvents(ctx context.Context, tx bun.IDB, chain string, addresses []string, block uint64) error {
	var out []query.Event
	now := db.stamp()
	for part := range slices.Chunk(addresses, batch) {
		var rows []struct {
			Address      string
			Syncing      bool
			HistoryStart sql.NullInt64
		}
		err := tx.NewRaw(`SELECT address, needs_sync OR backfill_next IS NOT NULL OR balances_pending AS syncing, history_start
			FROM tracked WHERE chain = ? AND address IN (?) AND active ORDER BY address`, chain, bun.List(part)).Scan(ctx, &rows)
		if err != nil {
			return err
		}
		for _, r := range rows {
			var start *uint64
			if r.HistoryStart.Valid {
				h := uint64(r.HistoryStart.Int64)
				start = &h
			}
			state := query.StateActive
			if r.Syncing || start == nil {
				state = query.StateSyncing
			}
			out = append(out, query.Event{Chain: chain, Address: r.Address, Kind: query.EventSubscriptionState,
				Block: block, Created: now, Data: events.StateJSON(chain, r.Address, state, start)})
		}
	}
	return db.writeEvents(ctx, tx, out)
}

// eventScan bounds the positions one feed read looks through, so that a
// requester who sees few of many events pays a bounded read and moves on
// (its page's Through).
const eventScan = 5000

// AccountEvents returns the events after position after (negative: from
// the oldest retained) that the account sees and f matches, in order, at
// most limit. Errors: query.ErrEventsPruned.
func (db *DB) AccountEvents(ctx context.Context, account int64, after int64, f query.EventFilter, limit int) (query.EventPage, error) {
	var last, pruned int64
	err := db.r.QueryRowContext(ctx, `SELECT COALESCE((SELECT MAX(id) FROM events), 0),
		COALESCE((SELECT through FROM events_pruned WHERE one = 1), 0)`).Scan(&last, &pruned)
	if err != nil {
		return query.EventPage{}, wrap("events", err)
	}
	if after < 0 {
		after = pruned
	}
	if after < pruned {
		return query.EventPage{}, wrap("events", query.ErrEventsPruned)
	}
	hi := min(last, after+eventScan)
	page := query.EventPage{Through: max(after, hi)}
	if hi <= after || limit <= 0 {
		return page, nil
	}
	var q strings.Builder
	// An address a wallet of the account derived is labelled with it (the
	// first by name when several did, the filter's wallet when there is
	// one) and its branch.
	label, args := "", []any{}
	if f.Wallet != "" {
		label = " AND wa.wallet = ?"
		args = append(args, f.Wallet, f.Wallet)
	}
	q.WriteString(`SELECT e.id, e.chain, e.address, e.kind, e.block_number, e.created, e.data,
		COALESCE((SELECT wa.wallet FROM wallet_addresses AS wa WHERE wa.account_id = s.account_id AND wa.chain = e.chain
			AND wa.address = e.address` + label + ` ORDER BY wa.wallet LIMIT 1), '') AS wallet,
		COALESCE((SELECT CASE WHEN wd.internal THEN 1 ELSE 0 END FROM wallet_addresses AS wa JOIN wallet_descriptors AS wd
			ON wd.account_id = wa.account_id AND wd.chain = wa.chain AND wd.wallet = wa.wallet AND wd.position = wa.position
			WHERE wa.account_id = s.account_id AND wa.chain = e.chain AND wa.address = e.address` + label + `
			ORDER BY wa.wallet LIMIT 1), 0) AS wallet_internal
		FROM events AS e
		JOIN subscriptions AS s ON s.account_id = ? AND s.chain = e.chain AND s.address = e.address AND e.id > s.events_from
		WHERE e.id > ? AND e.id <= ?`)
	args = append(args, account, after, hi)
	if f.Chain != "" {
		q.WriteString(" AND e.chain = ?")
		args = append(args, f.Chain)
	}
	if f.Address != "" {
		q.WriteString(" AND e.address = ?")
		args = append(args, f.Address)
	}
	if f.Wallet != "" {
		q.WriteString(` AND EXISTS (SELECT 1 FROM wallet_addresses AS wa WHERE wa.account_id = s.account_id
			AND wa.chain = e.chain AND wa.wallet = ? AND wa.address = e.address)`)
		args = append(args, f.Wallet)
	}
	if len(f.Kinds) > 0 {
		q.WriteString(" AND e.kind IN (?)")
		args = append(args, bun.List(f.Kinds))
	}
	if f.FromBlock > 0 {
		q.WriteString(" AND e.block_number >= ?")
		args = append(args, int64(min(f.FromBlock, math.MaxInt64)))
	}
	if f.HasToBlock {
		q.WriteString(" AND e.block_number <= ?")
		args = append(args, int64(min(f.ToBlock, math.MaxInt64)))
	}
	q.WriteString(" ORDER BY e.id LIMIT ?")
	args = append(args, limit)
	var rows []struct {
		ID          int64
		Chain       string
		Address     string
		Kind        string
		BlockNumber uint64
		Created     time.Time
		Data        string
		Wallet      string
		// WalletInternal is 0 or 1.
		WalletInternal int
	}
	if err := db.r.NewRaw(q.String(), args...).Scan(ctx, &rows); err != nil {
		return query.EventPage{}, wrap("events", err)
	}
	page.Events = make([]query.Event, len(rows))
	for i, r := range rows {
		page.Events[i] = query.Event{ID: r.ID, Chain: r.Chain, Address: r.Address, Kind: r.Kind, Block: r.BlockNumber,
			Created: utc(r.Created), Data: r.Data, WalletInternal: r.WalletInternal == 1}
		if r.Wallet != "" {
			page.Events[i].Wallet = query.Wallet{Chain: r.Chain, ID: r.Wallet}.Name()
		}
	}
	if len(rows) == limit {
		page.Through = rows[len(rows)-1].ID
	}
	return page, nil
}

// LastEventID returns the newest event's position, 0 when there is none.
func (db *DB) LastEventID(ctx context.Context) (int64, error) {
	var last int64
	err := db.r.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM events").Scan(&last)
	return last, wrap("last event", err)
}

// PruneEvents deletes the events written before t, and every older
// position, and records the newest position deleted: a cursor at or
// under it is refused from then on.
func (db *DB) PruneEvents(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := db.tx(ctx, func(tx bun.Tx) error {
		var through sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT MAX(id) FROM events WHERE created < ?", before.UTC()).Scan(&through); err != nil {
			return err
		}
		if !through.Valid {
			return nil
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM events WHERE id <= ?", through.Int64)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO events_pruned (one, through) VALUES (1, ?)
			ON CONFLICT (one) DO UPDATE SET through = excluded.through WHERE events_pruned.through < excluded.through`, through.Int64)
		return err
	})
	return int(n), wrap("prune events", err)
}
