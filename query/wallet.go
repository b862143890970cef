package query

import (
	"context"
	"time"
)

// Wallet is a requester's descriptor wallet on a chain whose family
// derives addresses (chain.Deriver): the addresses of its descriptors,
// each derived until GapLimit consecutive ones after its newest used one
// have no transaction. Each derived address is also a subscription of the
// requester, so its balances, transactions and statement are the
// address's own; the wallet's are their sums.
type Wallet struct {
	Chain string
	// ID is the requester's name of the wallet, unique per chain.
	ID          string
	Descriptors []WalletDescriptor
	GapLimit    int
	// StartBlock, when set, is the wallet's birth height: its addresses,
	// those derived later too, held nothing before it (SubscribeFrom).
	StartBlock *uint64
	Created    time.Time
}

// Name is the resource name chains/{chain}/wallets/{id}.
func (w Wallet) Name() string { return "chains/" + w.Chain + "/wallets/" + w.ID }

// WalletDescriptor is one descriptor of a wallet and how far it is
// derived.
type WalletDescriptor struct {
	// Descriptor is the descriptor in its family's canonical form, with
	// its checksum.
	Descriptor string
	// Internal marks a change branch (.../1/*): transfers to it from the
	// wallet's own addresses are change.
	Internal bool
	// Derived is how many addresses are derived: indexes 0 to Derived-1.
	Derived uint32
	// Used is the highest index with a transaction; -1 for none.
	Used int64
}

// WalletAddress is an address a wallet derived.
type WalletAddress struct {
	Address string
	// Descriptor is the position of its descriptor in the wallet's list,
	// Index the index it is derived at.
	Descriptor int
	Index      uint32
	// Used is true when a transaction of it is stored.
	Used bool
}

// WalletStore keeps wallets: a Store that has it serves the wallet
// resources (probed by type assertion).
type WalletStore interface {
	// CreateWallet records w with its first addresses, each subscribed
	// for account, in one transaction. It returns false and records
	// nothing when account has a wallet of that chain and ID already.
	// Errors: ErrTooManySubscriptions as Subscribe's.
	CreateWallet(ctx context.Context, account int64, w Wallet, addrs []WalletAddress) (created bool, err error)
	// Wallet returns account's wallet and its addresses, in descriptor
	// and index order, each marked used when a transaction of it is
	// stored. Errors: ErrNotFound.
	Wallet(ctx context.Context, account int64, chain, id string) (Wallet, []WalletAddress, error)
	// DeleteWallet removes account's wallet and unsubscribes its
	// addresses. Errors: ErrNotFound.
	DeleteWallet(ctx context.Context, account int64, chain, id string) error
	// WalletsOf returns every wallet of chain, of every account, with the
	// account: what the wallet keeper extends.
	WalletsOf(ctx context.Context, chain string) ([]AccountWallet, error)
	// ExtendWallet records addrs as the wallet's (each subscribed for
	// account) and its descriptors' new Derived and Used.
	ExtendWallet(ctx context.Context, account int64, w Wallet, addrs []WalletAddress) error
}

// AccountWallet is a wallet and the account that holds it.
type AccountWallet struct {
	Account int64
	Wallet  Wallet
}

// WalletStatementStore reads the statements of many addresses in a
// bounded number of queries: a Store that has it serves a wallet's
// statement without a read per address (probed by type assertion).
type WalletStatementStore interface {
	// WalletBalanceChanges hands fn the statement rows (of every asset)
	// of each of addresses account is subscribed to, address by address
	// in the order of their text, each address's newest first: its rows
	// at or below block to, at most limit of them, those of them at or
	// above block from. The row fn gets, and its Causes, are reused for
	// the next one.
	WalletBalanceChanges(ctx context.Context, account int64, chain string, addresses []string, from, to uint64, limit int, fn func(*BalanceChange) error) error
}
