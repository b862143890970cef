package query

import (
	"context"
	"errors"
	"time"
)

// Event kinds: what an event of the feed tells (docs/events.md).
const (
	// EventBalanceChange: a statement row was stored (head follower,
	// backfill, reconciliation), with its causes.
	EventBalanceChange = "balance_change"
	// EventUnreconciled: a stored statement row does not reconcile with
	// the node's balance (reconciled false); it follows the row's
	// EventBalanceChange, at the next position.
	EventUnreconciled = "unreconciled"
	// EventRetracted: a reorg removed a stored statement row; the data is
	// the row as it was.
	EventRetracted = "balance_change_retracted"
	// EventSubscriptionState: an address's state or covered range moved
	// (synced: SYNCING or ACTIVE with its history start; backfill ended:
	// ACTIVE).
	EventSubscriptionState = "subscription_state"
	// EventFinalized: an address's statement rows up to a block became
	// final (the chain's finalized mark moved past them); one per
	// address with rows in the blocks that became final.
	EventFinalized = "finalized"
	// EventTest is the event a webhook's test sends; it is not in the feed.
	EventTest = "test"
)

// EventKinds are the kinds of the feed, in the order documented.
var EventKinds = []string{EventBalanceChange, EventUnreconciled, EventRetracted, EventSubscriptionState, EventFinalized}

// ErrEventsPruned: a feed position older than the retained events (the
// events after it were deleted by the retention).
var ErrEventsPruned = errors.New("events after this position are past retention")

// Event is one entry of the event feed: written in the same database
// transaction as the change it tells of, at a position (ID) that only
// grows in the order of commits.
type Event struct {
	ID      int64
	Chain   string
	Address string
	Kind    string
	Block   uint64
	Created time.Time
	// Data is the event's JSON object (docs/events.md), stored as written.
	Data string
	// Wallet, in a read of a requester's feed, names the requester's
	// descriptor wallet that derived Address (Wallet.Name), "" when none
	// did; WalletInternal says the address is on one of its change
	// branches (WalletDescriptor.Internal).
	Wallet         string
	WalletInternal bool
}

// EventFilter narrows a feed read; zero fields match everything.
type EventFilter struct {
	Chain   string
	Address string
	// Wallet, when set, is the ID of one of the account's descriptor
	// wallets on Chain (set with it): the events of the addresses it
	// derived match.
	Wallet string
	Kinds  []string
	// FromBlock and, when HasToBlock, ToBlock bound the events' blocks,
	// both included (a feed read only: webhooks take no block range).
	FromBlock, ToBlock uint64
	HasToBlock         bool
}

// EventPage is a read of the feed: the events after a position, in
// order, and the position the read covered (Through, at least the last
// event's ID): an event the account can see is never at or under Through
// and not in Events or an earlier page.
type EventPage struct {
	Events  []Event
	Through int64
}

// EventStore is the event feed's storage.
type EventStore interface {
	// AccountEvents returns the events after position after that the
	// account sees (those of addresses it is subscribed to, written since
	// it subscribed) and f matches, in order, at most limit. Errors:
	// ErrEventsPruned when after is older than the retained events.
	AccountEvents(ctx context.Context, account int64, after int64, f EventFilter, limit int) (EventPage, error)
	// LastEventID returns the newest event's position (0: none yet).
	LastEventID(ctx context.Context) (int64, error)
	// PruneEvents deletes the events written before t and returns how
	// many; positions up to the newest deleted become ErrEventsPruned.
	PruneEvents(ctx context.Context, before time.Time) (int, error)
}
