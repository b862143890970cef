// Package query is the address-data service's domain: subscriptions,
// balances and transactions, and the seams between the /v1 API, the
// storage (query/store) and the chain fetcher (query/eth).
//
// It imports neither net/http nor a database driver.
package query

import (
	"errors"
	"time"
)

// Errors the stores and sources return; adapters wrap them, so compare
// with errors.Is.
var (
	// ErrNotFound: no such key, subscription or transaction.
	ErrNotFound = errors.New("not found")
	// ErrUnauthenticated: unknown, revoked or wrong API credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrNotSubscribed: the requester reads an address it is not
	// subscribed to.
	ErrNotSubscribed = errors.New("not subscribed")
	// ErrUnavailable: the database or the chain node cannot be reached; the
	// operation may succeed later.
	ErrUnavailable = errors.New("unavailable")
	// ErrTooManySubscriptions: the requester has as many subscriptions
	// as the server allows one (addrd serve --max-subscriptions).
	ErrTooManySubscriptions = errors.New("too many subscriptions")
)

// Assets of a balance or transfer.
const (
	AssetNative = "native" // the chain's own currency (ETH)
	AssetERC20  = "erc20"  // an ERC-20 token, named by its contract
)

// Transaction statuses.
const (
	StatusSuccess = "success"
	StatusFailed  = "failed"
)

// Account is a requester: it owns API keys and subscriptions.
type Account struct {
	ID      int64
	Name    string
	Created time.Time
}

// APIKey is an account's credential; only a hash of the secret is stored.
type APIKey struct {
	ID        string // API_ID, public
	AccountID int64
	Account   string // the account's name
	Created   time.Time
	LastUsed  time.Time // zero when never used
	Revoked   time.Time // zero when active
}

// Subscription is a requester's interest in an address of a chain.
// Addresses are lowercase 0x-hex (AIP-122).
type Subscription struct {
	Chain   string
	Address string
	Created time.Time
}

// Name is the resource name chains/{chain}/addresses/{address}.
func (s Subscription) Name() string { return "chains/" + s.Chain + "/addresses/" + s.Address }

// SubscriptionCursor is the keyset position after a subscription in the
// stable order (chain, address).
type SubscriptionCursor struct {
	Chain   string
	Address string
}

// Balance is an amount of one asset held by an address, as read at a block.
type Balance struct {
	Chain    string
	Address  string
	Asset    string // AssetNative or AssetERC20
	Contract string // token contract; "" for native
	Symbol   string
	Decimals int
	Amount   string    // exact decimal integer in the asset's smallest unit
	Block    uint64    // block the amount was read at
	Updated  time.Time // when it was read
}

// Transaction is a chain transaction that touches at least one tracked
// address, with all the transfers in it.
type Transaction struct {
	Chain       string
	Hash        string // lowercase 0x-hex
	BlockNumber uint64
	BlockHash   string
	BlockTime   time.Time
	Index       uint   // position in the block
	Status      string // StatusSuccess or StatusFailed
	From        string
	To          string // "" for a contract creation
	Value       string // wei, exact decimal
	Fee         string // wei: gasUsed × effectiveGasPrice
	Nonce       uint64
	Transfers   []Transfer
}

// Addresses returns every address the transaction touches, without
// duplicates: sender, recipient and the parties of its transfers.
func (t Transaction) Addresses() []string {
	seen := make(map[string]bool)
	var out []string
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	add(t.From)
	add(t.To)
	for _, tr := range t.Transfers {
		add(tr.From)
		add(tr.To)
	}
	return out
}

// Transfer is a movement of one asset inside a transaction.
type Transfer struct {
	LogIndex int    // the log's index in the block; -1 for the native value transfer
	Asset    string // AssetNative or AssetERC20
	Contract string // "" for native
	From     string
	To       string
	Amount   string // exact decimal integer, smallest unit
}

// TxCursor is the keyset position after a transaction in the order most
// recent first: (BlockNumber, Index) descending.
type TxCursor struct {
	BlockNumber uint64
	Index       uint
}

// Block identifies a stored (or fetched) block.
type Block struct {
	Number     uint64
	Hash       string
	ParentHash string
	Time       time.Time
}

// Tracked is an address that at least one requester is subscribed to.
type Tracked struct {
	Address string
	// NeedsSync is true when the address was subscribed (again) since the
	// fetcher last synced it: it wants its balances now and a backfill.
	NeedsSync bool
	// SyncFrom, when NeedsSync, is the first block not scanned for it: the
	// checkpoint when its last subscriber left, or 0 if it was never tracked.
	SyncFrom uint64
}
