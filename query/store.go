package query

import (
	"context"
)

// Store is the storage the /v1 API reads and writes. query/store
// implements it on bun (SQLite and PostgreSQL). Every method may return
// ErrUnavailable when the database cannot be reached.
type Store interface {
	// CreateAPIKey creates a key for the account named name, creating the
	// account if needed, and returns the key and its secret, shown once.
	CreateAPIKey(ctx context.Context, name string) (key APIKey, secret string, err error)
	// RevokeAPIKey revokes a key. Errors: ErrNotFound.
	RevokeAPIKey(ctx context.Context, id string) error
	// ListAPIKeys lists all keys, newest first.
	ListAPIKeys(ctx context.Context) ([]APIKey, error)
	// Authenticate checks id and secret in constant time and returns the
	// account. Errors: ErrUnauthenticated.
	Authenticate(ctx context.Context, id, secret string) (Account, error)

	// Subscribe subscribes the account; created is false when it already was.
	Subscribe(ctx context.Context, account int64, chain, address string) (created bool, err error)
	// SubscribeFrom is Subscribe with a start height the subscriber gives
	// (a birth height): the address held nothing before block start, so
	// its history is read from there and its statement starts at zero
	// there. It counts while the address is owed its sync (the lowest
	// given wins); an address tracked already keeps its history.
	SubscribeFrom(ctx context.Context, account int64, chain, address string, start uint64) (created bool, err error)
	// Unsubscribe removes a subscription; stored data is kept. Errors: ErrNotFound.
	Unsubscribe(ctx context.Context, account int64, chain, address string) error
	// Subscribed reports whether the account is subscribed to any of addresses.
	Subscribed(ctx context.Context, account int64, chain string, addresses ...string) (bool, error)
	// Covers reports whether the account is subscribed to one of
	// addresses whose covered range holds block: a transaction of that
	// block is its to read.
	Covers(ctx context.Context, account int64, chain string, block uint64, addresses ...string) (bool, error)
	// Subscription returns the account's subscription to address with its
	// state and covered range. Errors: ErrNotSubscribed.
	Subscription(ctx context.Context, account int64, chain, address string) (Subscription, error)
	// Subscriptions lists an account's subscriptions after the cursor (nil:
	// from the start) in (chain, address) order, at most limit, with the total
	// count. chain "" means all chains.
	Subscriptions(ctx context.Context, account int64, chain string, after *SubscriptionCursor, limit int) (subs []Subscription, total int, err error)

	// AccountBalances returns the stored balances of an address, native
	// first, to an account subscribed to it. Errors: ErrNotSubscribed.
	AccountBalances(ctx context.Context, account int64, chain, address string) ([]Balance, error)
	// AccountTransactions returns the transactions touching address after
	// the cursor (nil: from the most recent), most recent first, at most
	// limit, to an account subscribed to it. Its cost does not grow with
	// the depth of the cursor. Errors: ErrNotSubscribed.
	AccountTransactions(ctx context.Context, account int64, chain, address string, after *TxCursor, limit int) ([]Transaction, error)
	// Transaction returns one transaction with its transfers. Errors: ErrNotFound.
	Transaction(ctx context.Context, chain, hash string) (Transaction, error)
	// AccountBalanceChanges returns the statement of address after the
	// cursor (nil: from the newest), newest first, at most limit rows, to
	// an account subscribed to it. Its cost does not grow with the depth
	// of the cursor. Errors: ErrNotSubscribed.
	AccountBalanceChanges(ctx context.Context, account int64, chain, address string, after *ChangeCursor, limit int) ([]BalanceChange, error)
	// SubscriptionBalances, SubscriptionTransactions and
	// SubscriptionBalanceChanges are AccountBalances, AccountTransactions
	// and AccountBalanceChanges that also return the account's
	// subscription to address, with its state and covered range (not its
	// creation time), from the same read: what the API tells beside every
	// read of an address.
	SubscriptionBalances(ctx context.Context, account int64, chain, address string) (Subscription, []Balance, error)
	SubscriptionTransactions(ctx context.Context, account int64, chain, address string, after *TxCursor, limit int) (Subscription, []Transaction, error)
	SubscriptionBalanceChanges(ctx context.Context, account int64, chain, address string, after *ChangeCursor, limit int) (Subscription, []BalanceChange, error)
	// SubscriptionTransactionsFunc and SubscriptionBalanceChangesFunc are
	// SubscriptionTransactions and SubscriptionBalanceChanges handing the
	// page to fn one row at a time, in order, instead of returning it (the
	// API writes each as it comes: a page allocates no row). The row fn
	// gets, with its Transfers or Causes, is reused for the next one; its
	// strings are not. An error of fn ends the read and is returned.
	// fn's plain says that every string of the transaction is PlainText
	// (as its document notes: a writer of JSON need not look at them).
	SubscriptionTransactionsFunc(ctx context.Context, account int64, chain, address string, after *TxCursor, limit int, fn func(t *Transaction, plain bool) error) (Subscription, error)
	SubscriptionBalanceChangesFunc(ctx context.Context, account int64, chain, address string, after *ChangeCursor, limit int, fn func(*BalanceChange) error) (Subscription, error)
	// Head returns the newest stored block of chain; ok is false when none is.
	Head(ctx context.Context, chain string) (b Block, ok bool, err error)
	// Finality returns chain's finality marks (FinalityStore): the zero
	// Finality when none was set.
	Finality(ctx context.Context, chain string) (Finality, error)
	// Books reads ranges, filters and balances as of a block.
	Books

	// Secret returns the named server secret, creating 32 random bytes on
	// first use (page-token HMAC keys).
	Secret(ctx context.Context, name string) ([]byte, error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
}

// FetchStore is the storage the fetcher writes. Inserts ignore conflicts on
// (chain, hash, log index), so storing a block twice duplicates nothing.
type FetchStore interface {
	// ChainGuard records the chain's identity and its stops.
	ChainGuard
	// Tracked lists the addresses of chain with at least one subscription.
	Tracked(ctx context.Context, chain string) ([]Tracked, error)
	// MarkSynced records that the fetcher has synced these addresses up to
	// and including block (their balances read; the head follower covers
	// them from block+1) and that their past from block low up to block
	// is owed a backfill (none when low > block): it shows in Backfills.
	MarkSynced(ctx context.Context, chain string, addresses []string, block, low uint64) error
	// Backfills lists the pending backfills of chain's tracked addresses,
	// those with the same range in one job.
	Backfills(ctx context.Context, chain string) ([]BackfillJob, error)
	// StoreBackfill stores backfilled transactions of the job's addresses
	// and moves their backfill down to next, all in one database
	// transaction: the blocks above next up to job.Next are covered (a
	// next below job.Low ends the backfill). Addresses unsubscribed or
	// resynced meanwhile are left as they are. The statement rows of the
	// backfilled blocks are stored with them (rows already there are left
	// as they are).
	StoreBackfill(ctx context.Context, chain string, job BackfillJob, txs []Transaction, changes []BalanceChange, next int64) error
	// BalancesStored records that the balances of addresses, of every
	// holding their backfills found included, are stored as of block: an
	// address whose backfill has ended is SYNCING until then, ACTIVE from
	// then on (in the feed too).
	BalancesStored(ctx context.Context, chain string, addresses []string, block uint64) error
	// BalancesPending lists the addresses of chain whose backfill has
	// ended and whose balances BalancesStored has not yet recorded, each
	// as a holding without a contract followed by the token holdings its
	// statement has rows of.
	BalancesPending(ctx context.Context, chain string) ([]Holding, error)

	// Checkpoint returns the last block stored for chain; ok is false when
	// none is.
	Checkpoint(ctx context.Context, chain string) (b Block, ok bool, err error)
	// SetFinality moves chain's finality marks up (FinalityStore).
	SetFinality(ctx context.Context, chain string, f Finality) error
	// StoredBlock returns the stored block at number, for finding a fork
	// point. Errors: ErrNotFound.
	StoredBlock(ctx context.Context, chain string, number uint64) (Block, error)
	// StoreBlock stores the matched transactions and fresh balances of block b
	// and moves the checkpoint to b, all in one database transaction.
	StoreBlock(ctx context.Context, chain string, b Block, txs []Transaction, balances []Balance) error
	// StoreBlocks stores consecutive blocks, each with its matched
	// transactions and fresh balances, and moves the checkpoint to the
	// last of them, all in one database transaction: a batch costs one
	// commit instead of one per block.
	StoreBlocks(ctx context.Context, chain string, blocks []BlockData) error
	// Rewind removes every transaction and block stored above number (a
	// reorg) and moves the checkpoint back to number, in one transaction.
	Rewind(ctx context.Context, chain string, number uint64) error
	// PutTransactions stores backfilled transactions without moving the checkpoint.
	PutTransactions(ctx context.Context, chain string, txs []Transaction) error
	// PutBalances upserts balances; a balance read at an older block than the
	// stored one is ignored.
	PutBalances(ctx context.Context, balances []Balance) error
	// StatementHeads returns where the statements of addresses stand, one
	// per asset that has one.
	StatementHeads(ctx context.Context, chain string, addresses []string) ([]StatementHead, error)
	// StatementBounds returns what the stored statement tells of the
	// balances of holdings around blocks lo to hi, which a backfill is
	// about to fill: one per holding, in the order given.
	StatementBounds(ctx context.Context, chain string, holdings []Holding, lo, hi uint64) ([]StatementBound, error)
	// PutStatement stores statement rows, heads and balances read outside
	// a block (a new subscription, the scheduled refresh) in one
	// transaction; rows already there are left as they are.
	PutStatement(ctx context.Context, chain string, changes []BalanceChange, heads []StatementHead, balances []Balance) error

	// FillBlockTimes writes the block time of chain's statement and
	// transaction rows stored without one (a fetcher of a binary older
	// than the books, during a rolling upgrade, writes them so) and
	// returns how many rows it wrote. A fetcher calls it when it takes
	// the chain's lease: no older fetcher writes after that.
	FillBlockTimes(ctx context.Context, chain string) (int, error)

	// LeaseStore elects the one fetcher of each chain. Every write above
	// made with a ctx carrying a lease (WithLease) fails with
	// ErrLeaseLost, writing nothing, once that lease is no longer held.
	LeaseStore
}

// BlockData is a block as StoreBlocks stores it: the transactions of the
// block that touch tracked addresses, the balances read for it, its
// statement rows and where the statements stand after it.
type BlockData struct {
	Block
	Txs      []Transaction
	Balances []Balance
	Changes  []BalanceChange
	Heads    []StatementHead
}
