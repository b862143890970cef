package query

import (
	"time"
)

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
	// Born is true, when NeedsSync, if a subscriber gave a start height
	// (SubscribeFrom): StartBlock, before which the address held nothing.
	Born       bool
	StartBlock uint64
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
	// Born is true when Low is a start height the subscribers gave (a
	// wallet's birth height): the addresses held nothing before it.
	Born bool
}
