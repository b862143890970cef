// Package query is the address-data service's domain: subscriptions,
// balances and transactions, and the seams between the /v1 API, the
// storage (query/store), the chain (query/evm) and the fetcher
// (query/fetch). It holds types and interfaces only: no worker runs here.
//
// It imports neither net/http nor a database driver.
package query

import (
	"errors"
	"strings"
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
	AssetNative  = "native"  // the chain's own currency (ETH)
	AssetERC20   = "erc20"   // an ERC-20 token, named by its contract
	AssetERC721  = "erc721"  // an ERC-721 collection: its amounts count tokens
	AssetERC1155 = "erc1155" // one token id of an ERC-1155 contract
)

// IsToken reports whether asset is held through a token contract.
func IsToken(asset string) bool {
	return asset == AssetERC20 || asset == AssetERC721 || asset == AssetERC1155
}

// A holding of a token is named by its contract, except that each id of
// an ERC-1155 contract is an asset of its own (its balanceOf takes the
// id): its key is "contract/id", the id in decimal. Statement rows,
// heads, balances and balance queries carry that key in their Contract;
// the API writes it as contract and token_id.

// HoldingKey is the key of the holding of a token: the contract, or
// contract/id for an ERC-1155 id.
func HoldingKey(asset, contract, tokenID string) string {
	if asset == AssetERC1155 {
		return contract + "/" + tokenID
	}
	return contract
}

// SplitHoldingKey splits a holding key into the contract and the
// ERC-1155 token id ("" when it names a whole contract).
func SplitHoldingKey(key string) (contract, tokenID string) {
	contract, tokenID, _ = strings.Cut(key, "/")
	return contract, tokenID
}

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
	// State is StateSyncing until the address's balances and the
	// transactions of its covered range are stored, then StateActive.
	State string
	// HistoryStart is the first block of the covered range: the address's
	// transactions are stored from it to the stored head, and reads list
	// none older. Valid when Covered.
	HistoryStart uint64
	Covered      bool
}

// Subscription states.
const (
	StateSyncing = "SYNCING"
	StateActive  = "ACTIVE"
)

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
	Asset    string // AssetNative, AssetERC20, AssetERC721 or AssetERC1155
	Contract string // token contract (a holding key: contract/id for ERC-1155); "" for native
	Symbol   string
	Name     string // the token's name(); "" for native or when it does not say
	Decimals int
	Amount   Amount    // in the asset's smallest unit (a count for ERC-721)
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
	Value       Amount // wei
	Fee         Amount // wei: gasUsed × effectiveGasPrice
	Nonce       uint64
	Transfers   []Transfer

	// Type is the EIP-2718 transaction type (0 legacy, 2 dynamic fee...).
	Type uint8
	// GasLimit and GasUsed are the transaction's gas; EffectiveGasPrice is
	// the wei it paid a unit of gas.
	GasLimit          uint64
	GasUsed           uint64
	EffectiveGasPrice Amount
	// Method is the input's 4-byte selector, 0x and 8 hex digits; "" when
	// the input is shorter (a plain transfer).
	Method string
	// Created is the contract the transaction created, top-level or
	// inside; "" when none.
	Created string
	// Input is the transaction's input (calldata), 0x-hex.
	Input string
	// CumulativeGasUsed is the gas used in the block up to and with this
	// transaction (the receipt's).
	CumulativeGasUsed uint64
	// RevertReason says why a failed transaction reverted, when the node
	// traced it: the message of an Error(string), "Panic(0x..)" and its
	// meaning for a Panic(uint256), the revert data in 0x-hex when it is
	// neither, or the EVM's error (such as "out of gas") when there is
	// no data; "" for a transaction that succeeded or was not traced.
	RevertReason string

	// Unreadable, when not "", says why the stored transaction could not
	// be read back: the transaction is its key alone (hash, block and
	// index), the rest of a page is read all the same.
	Unreadable string
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
	add(t.Created)
	for _, tr := range t.Transfers {
		if tr.Error != "" {
			continue // a reverted call moved nothing
		}
		add(tr.From)
		add(tr.To)
	}
	return out
}

// Transfer is a movement of one asset inside a transaction.
type Transfer struct {
	// LogIndex is the log's index in the block for a token transfer; -1
	// for the transaction's own value; -2, -3... for its internal
	// movements in call order.
	// The entries of one ERC-1155 TransferBatch log share its index.
	LogIndex int
	Asset    string // AssetNative, AssetERC20, AssetERC721 or AssetERC1155
	Contract string // "" for native
	From     string
	To       string
	Amount   Amount // smallest unit; 1 for an ERC-721 token
	// Kind is how it moved: KindTransaction, KindInternal, KindToken,
	// KindCreation or KindSelfdestruct.
	Kind string
	// Symbol, Name and Decimals are the token's, for a token transfer.
	Symbol   string
	Name     string
	Decimals int
	// TokenID is the id of an ERC-721 or ERC-1155 token, decimal; "".
	TokenID string
	// CallType and CallPath, for an internal movement, are the frame's
	// type (CALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT) and its place
	// in the call tree: the indexes of the frames from the top-level
	// call down, dot-separated ("0.2.1": the second call of the third
	// call of the first call the transaction made).
	CallType string
	CallPath string
	// Error is the EVM's error of a call that reverted (its own, or that
	// of a frame above it, the transaction's included): such a transfer
	// moved nothing and is listed for the record only.
	Error string
}

// Holding is the key of the holding the transfer moves: "" for the
// native coin, else HoldingKey.
func (t Transfer) Holding() string {
	if t.Asset == AssetNative {
		return ""
	}
	return HoldingKey(t.Asset, t.Contract, t.TokenID)
}

// Kinds of movement: of a Transfer, and of a Cause in a statement.
const (
	KindTransaction  = "transaction"  // a transaction's own value
	KindInternal     = "internal"     // a CALL or CALLCODE with value inside a transaction
	KindToken        = "token"        // an ERC-20 Transfer log
	KindFee          = "fee"          // the fee the sender pays: gasUsed × effectiveGasPrice (+ blob gas)
	KindWithdrawal   = "withdrawal"   // an EIP-4895 withdrawal from the beacon chain
	KindFeeIncome    = "fee_income"   // the priority fees of a block, to its fee recipient
	KindCreation     = "creation"     // value sent with a contract creation (CREATE, CREATE2, or a creating transaction)
	KindSelfdestruct = "selfdestruct" // a SELFDESTRUCT's balance, to its beneficiary
	KindBurn         = "burn"         // the balance of a contract that self-destructed to itself in the transaction that created it: destroyed (EIP-6780)
	KindGenesis      = "genesis"      // the allocation of the genesis block
)

// BalanceChange is a row of an address's statement: how the balance of
// one asset changed in one block, and why. Rows chain: BalanceAfter −
// Amount of a row is the BalanceAfter of the address's previous row of
// the same asset.
type BalanceChange struct {
	Chain    string
	Address  string
	Contract string // "" for the native coin
	Block    uint64
	Time     time.Time
	// Amount is the signed change (wei or the token's base units): the
	// sum of the causes' amounts, plus Difference.
	Amount       Amount
	BalanceAfter Amount
	Causes       []Cause
	// Checked says that BalanceAfter was compared with the node's balance
	// at this row's block; Reconciled, asserted only then, that they
	// agreed. A row not checked asserts nothing: the movements found may
	// miss one the node saw (a rebase; an internal movement without
	// traces), which the next checked row then takes as its difference.
	Checked    bool
	Reconciled bool
	// Difference (node − found, signed) is what a disagreement added to
	// Amount, on the row of the block where it was found, so that
	// BalanceAfter is the node's there; zero when none.
	Difference Amount
	// Traced is false when the node had no trace API: internal movements
	// of this block are not among the causes.
	Traced bool
}

// Cause is one movement behind a BalanceChange.
type Cause struct {
	Kind   string // a Kind constant
	TxHash string // "" for a withdrawal and fee income
	Amount Amount // signed
	// Withdrawal is the withdrawal's EIP-4895 index and validator index,
	// for a KindWithdrawal cause; nil otherwise.
	Withdrawal *WithdrawalRef
}

// WithdrawalRef names an EIP-4895 withdrawal: its index, counted over
// the chain, and the beacon-chain validator it pays.
type WithdrawalRef struct {
	Index     uint64
	Validator uint64
}

// ChangeCursor is the keyset position after a statement row in the order
// newest first: (Block, Contract) descending.
type ChangeCursor struct {
	Block    uint64
	Contract string
}

// StatementHead is where an address's statement of one asset stands: its
// balance after block Block, from which the next row continues.
type StatementHead struct {
	Address  string
	Contract string
	Block    uint64
	Balance  Amount
}

// Holding names one asset of one address: its native coin (Contract "")
// or a token.
type Holding struct {
	Address  string
	Contract string
}

// StatementBound is what the stored statement tells of a holding's
// balance around the blocks lo to hi that a backfill fills.
type StatementBound struct {
	Holding
	// Above is the balance after block hi: the opening balance of the
	// holding's first row above hi, else its head's balance when the head
	// stands at hi or above; nil when the statement does not tell.
	Above *Amount
	// Below is the balance after the holding's last row below lo (an
	// earlier tracking of the address); nil when there is none.
	Below *Amount
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
	// Covered is true when the address has been covered before (it is
	// resubscribed): then SyncFrom is where to fill the gap from.
	Covered bool
	// Backfilled is true when the address is covered and no backfill of
	// it is pending; HistoryLow is then the first block of its history,
	// where the statement of an asset first seen later starts from.
	Backfilled bool
	HistoryLow uint64
}

// BackfillJob is a pending backfill: the past transactions of Addresses
// from block Low up to Next, to be stored newest first.
type BackfillJob struct {
	Addresses []string
	Low, Next uint64
}
