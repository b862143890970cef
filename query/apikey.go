package query

import (
	"time"
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
