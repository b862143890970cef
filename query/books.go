package query

import (
	"context"
	"errors"
	"time"
)

// ErrBeforeStatement says a time is before the first row of an address's
// statement: what its balances were then is not stored.
var ErrBeforeStatement = errors.New("before the first row of the statement")

// Range selects part of an address's list (its transactions or its
// statement) for the books: a block and time range, an order and
// filters. The zero Range is the whole list, newest first.
type Range struct {
	// FromBlock and, when HasToBlock, ToBlock bound the blocks, both
	// included.
	FromBlock, ToBlock uint64
	HasToBlock         bool
	// FromTime (included) and ToTime (excluded) bound the block times;
	// zero is no bound.
	FromTime, ToTime time.Time
	// Ascending lists oldest first; false newest first.
	Ascending bool
	// Contract, when HasContract, keeps the rows of that asset only:
	// "" the native coin, else the token contract.
	Contract    string
	HasContract bool
	// TokensOnly keeps the rows of tokens (any contract but native).
	TokensOnly bool
	// Kinds keeps the rows with a movement of one of these kinds (Kind
	// constants); empty keeps all.
	Kinds []string
	// Counterparty keeps the rows with a movement whose transaction has
	// this address as a party; "" keeps all.
	Counterparty string
	// Collection, when not "", keeps the statement rows of every ERC-1155
	// id of this contract (holding keys contract/id): what a statement
	// read makes of Contract when it names an ERC-1155 contract without
	// an id. The transactions list matches a contract's ids by Contract.
	Collection string
}

// Filtered reports whether r keeps fewer rows than its block and time
// range holds: a filter that the store applies row by row.
func (r Range) Filtered() bool {
	return len(r.Kinds) > 0 || r.Counterparty != "" || r.TokensOnly || r.Collection != ""
}

// InCollection reports whether the holding key contract is an id of
// r's Collection.
func (r Range) InCollection(contract string) bool {
	c, id := SplitHoldingKey(contract)
	return id != "" && c == r.Collection
}

// Label names the asset of a statement row as balances name it.
type Label struct {
	Asset    string // AssetNative, AssetERC20, AssetERC721 or AssetERC1155
	Symbol   string // "" when the token's metadata could not be read
	Name     string // the token's name(); "" for native (in balances) and unread
	Decimals int
}

// LabelOf is the label of contract in labels, or what its contract
// tells: the native coin, or a token whose metadata is not stored.
func LabelOf(labels map[string]Label, contract string) Label {
	if l, ok := labels[contract]; ok {
		return l
	}
	switch _, id := SplitHoldingKey(contract); {
	case contract == "":
		return Label{Asset: AssetNative}
	case id != "":
		return Label{Asset: AssetERC1155}
	}
	return Label{Asset: AssetERC20}
}

// ChangeRange is a page of a statement read with a Range: its rows, the
// labels of their assets by contract, and where the next page starts
// (nil: the range is read to its end). A page may hold fewer rows than
// asked, none even, with a Next: a filter read its budget of rows.
type ChangeRange struct {
	Rows   []BalanceChange
	Labels map[string]Label
	Next   *ChangeCursor
}

// TxRange is a page of transactions read with a Range, as ChangeRange.
type TxRange struct {
	Txs  []Transaction
	Next *TxCursor
}

// AsOf is the balance of one asset of an address after a block, as the
// statement tells it.
type AsOf struct {
	Contract string
	Label
	// Amount is the balance after Block, in base units.
	Amount Amount
	// Block is the block the balance stands at: the last block at or
	// before the one asked for (the newest block at or before the time
	// asked for).
	Block uint64
	// Row is the block of the statement row the amount comes from; 0
	// with RowFound false when the asset's first row is after Block.
	Row      uint64
	RowFound bool
	// Time is the time of that row's block; zero when not found.
	Time time.Time
}

// Books is the storage of the books reads: ranges, balances as of a
// block, exports.
type Books interface {
	// SubscriptionChangeRange returns the account's subscription to
	// address and a page of its statement in r after the cursor (nil:
	// from the start of r's order), at most limit rows, reading at most
	// budget rows when r is Filtered. Errors: ErrNotSubscribed.
	SubscriptionChangeRange(ctx context.Context, account int64, chain, address string, r Range, after *ChangeCursor, limit, budget int) (Subscription, ChangeRange, error)
	// SubscriptionChangeRangeFunc is SubscriptionChangeRange that passes
	// each row of the page, with its label, to fn, in order, and returns
	// where the next page starts (nil: the range is read to its end). The
	// row is reused between calls: copy what is kept.
	SubscriptionChangeRangeFunc(ctx context.Context, account int64, chain, address string, r Range, after *ChangeCursor, limit, budget int,
		fn func(*BalanceChange, Label) error) (Subscription, *ChangeCursor, error)
	// SubscriptionTxRange is SubscriptionChangeRange of the address's
	// transactions, in its covered range.
	SubscriptionTxRange(ctx context.Context, account int64, chain, address string, r Range, after *TxCursor, limit, budget int) (Subscription, TxRange, error)
	// SubscriptionBalancesAt returns the account's subscription to
	// address and the balance of each of its assets after block (or, with
	// at non-zero, after the last block of the statement at or before
	// at), from the statement, with the stored head. Errors:
	// ErrNotSubscribed.
	SubscriptionBalancesAt(ctx context.Context, account int64, chain, address string, block uint64, at time.Time) (Subscription, []AsOf, Block, error)
}
