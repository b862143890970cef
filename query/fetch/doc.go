// Package fetch keeps the balances, transactions and statements of a
// chain's tracked addresses current from the chain's Reader (query/chain,
// a family's) into a Store: the fetcher of addrd.
//
// # Workers and who owns what
//
// One replica fetches each chain, holding its lease (lead.go). While it
// leads, Run runs these goroutines, each owning a state of its own:
//
//   - the head follower (follower; run.go, follow.go) runs the steps: it
//     checks the chain (chain.go) and the node's trace API (traces.go),
//     syncs new subscriptions (sync.go), reads the activity of new blocks
//     ahead of storing them (scan.go) and writes their statement rows
//     (statement.go). While a step stores blocks, a reader goroutine
//     borrows the follower's scanning state and the step waits for it.
//   - the backfiller (backfiller; backfill.go, backfill_read.go,
//     backfill_statement.go) stores the past owed to new
//     subscriptions, newest first, a slice at a time.
//   - the refresher (refresher; refresh.go) reads every tracked address's
//     balances again on a schedule.
//   - the lease's renewal (lead.go).
//
// The backfiller and the refresher start once the follower has settled
// the chain's facts (chainFacts: the native coin, the trace API); each
// gets a copy, which nothing changes after. What else they share is
// read-only (core: the configuration, the logger, the metrics) or says
// how it is shared: health (health.go, behind its lock: the follower
// writes it; Health, InternalsSource, the renewal and the refresher read it) and
// the two hand-offs (handoff.go), values passed to the follower, never
// fields written by two goroutines: learnedTokens, the tokens the
// backfiller found an address moving, and refreshed, the balances the
// refresher read. The follower wakes the backfiller after each step.
//
// FetchOnce runs the same workers one after another in the caller's
// goroutine: a follower step, the backfills, and the scheduled refresh
// inline.
//
// # Where a movement is classified
//
// The chain's family classifies them: the head follower reads the
// activity of new blocks through Config.Reader (query/chain's Activity:
// transactions and the movements of a tracked address's balance, every
// kind, each with its cause), and scan.go turns it into transactions and
// statement rows; the backfill reads the Activity of the blocks of a late
// subscriber's history (the Reader's chain.HistorySource names them, or a
// window of blocks is read) by the same rules (backfill_read.go).
//
// # What the Reader can tell
//
// Besides the blocks' activity, the core uses what the Reader's optional
// capabilities tell, each where it has it: balances (chain.BalanceReader)
// to check the statements, locate a difference and refresh on a
// schedule; internal movements (chain.Internals); token metadata
// (chain.TokenReader); the final block (query.Finalizer). Without
// balances a statement is the sum of its movements and nothing is
// checked (rows say Checked false); where the Reader tells them at some
// blocks only (chain.ErrNotImplemented elsewhere: a UTXO node's at its
// tip), a check is made only where a reading falls on such a block, and a
// difference that cannot be located below it goes on the checked row.
package fetch
