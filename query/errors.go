package query

import "errors"

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
