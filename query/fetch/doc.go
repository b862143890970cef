// Package fetch keeps the balances, transactions and statements of a
// chain's tracked addresses current from a query.Source into a
// query.FetchStore: the fetcher of addrd.
//
// One replica fetches each chain, holding its lease (lead.go). While it
// leads, workers run side by side:
//
//   - the head follower (run.go, follow.go) checks the chain (chain.go),
//     syncs new subscriptions (sync.go), reads new blocks ahead of storing
//     them, scans them (scan.go) and writes their statement rows
//     (statement.go);
//   - the backfiller (backfill.go, backfill_read.go, bisect.go,
//     backfill_statement.go) stores the past owed to new subscriptions,
//     newest first, a slice at a time;
//   - the refresher (refresh.go) reads every tracked address's balances
//     again on a schedule, and hands them to the follower to reconcile;
//   - health (health.go, traces.go, metrics.go) reports the outcome of the
//     follower's steps, read at any time.
//
// Where a movement is classified: moves.go holds the pure rules that turn
// a block (its transactions, receipts, Transfer logs, traces, withdrawals
// and fee recipient) into transactions and movements of a tracked
// address's balance, every kind: value, fee, internal transfer, token,
// withdrawal, fee income. Nothing there reads the node or the store.
package fetch
