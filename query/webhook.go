package query

import (
	"context"
	"errors"
	"time"
)

// ErrTooManyWebhooks: the requester has as many webhook endpoints as the
// server allows one (addrd serve --webhook-max-endpoints).
var ErrTooManyWebhooks = errors.New("too many webhook endpoints")

// ErrLeaseGone: a webhook's delivery lease is no longer the caller's (it
// expired and another replica took the endpoint); nothing was written.
var ErrLeaseGone = errors.New("webhook delivery lease lost")

// Webhook states.
const (
	WebhookActive   = "ACTIVE"
	WebhookDisabled = "DISABLED"
)

// Webhook is a requester's endpoint that the feed's events are pushed to
// (docs/events.md), with its own filter and cursor.
type Webhook struct {
	ID          string // "wh_" and random
	Account     int64
	URL         string
	Description string
	Filter      EventFilter
	// Secret is the current signing secret (whsec_...); OldSecret the
	// one it replaced, also signed with until OldUntil.
	Secret    string
	OldSecret string
	OldUntil  time.Time
	// Cursor is the feed position delivered up to (every event the
	// endpoint sees at or before it was answered 2xx, or skipped).
	Cursor int64
	State  string // WebhookActive or WebhookDisabled
	// DisabledReason says why the endpoint was disabled ("" when active).
	DisabledReason string
	// Failures counts the failed attempts of the event at Cursor+, since
	// FailingSince; NextAttempt is when it is tried again.
	Failures     int
	FailingSince time.Time
	NextAttempt  time.Time
	Created      time.Time
	Updated      time.Time
}

// WebhookAttempt is one delivery attempt, as the delivery log keeps it.
type WebhookAttempt struct {
	ID        int64
	Webhook   string
	EventID   string // the webhook-id sent
	EventType string
	Time      time.Time
	Status    int    // the HTTP status; 0 when none came
	Error     string // why the attempt failed, "" when it did not
	Latency   time.Duration
	Response  string // the first bytes of the response body
}

// WebhookOutcome is what one delivery run of a claimed endpoint did: the
// attempts it made, where its cursor now stands and, after a failure,
// when it is tried again (or why it is disabled).
type WebhookOutcome struct {
	Attempts     []WebhookAttempt
	Cursor       int64
	Failures     int
	FailingSince time.Time
	NextAttempt  time.Time
	Disable      string // non-empty: disable the endpoint with this reason
	Release      bool   // give the lease back (else it is renewed)
}

// WebhookStore keeps the webhook endpoints, their delivery log, and the
// leases that spread their deliveries over the replicas.
type WebhookStore interface {
	// CreateWebhook stores a new endpoint of w.Account (ID, times and
	// state set by the store). Errors: ErrTooManyWebhooks.
	CreateWebhook(ctx context.Context, w Webhook) (Webhook, error)
	// Webhooks lists the account's endpoints, oldest first.
	Webhooks(ctx context.Context, account int64) ([]Webhook, error)
	// Webhook returns one of the account's endpoints. Errors: ErrNotFound.
	Webhook(ctx context.Context, account int64, id string) (Webhook, error)
	// UpdateWebhook stores w's URL, description, filter, secrets and
	// state; with restart also its cursor and failures (enabled again,
	// replayed), which otherwise stay as a delivery run recorded them.
	// Errors: ErrNotFound.
	UpdateWebhook(ctx context.Context, w Webhook, restart bool) error
	// DeleteWebhook deletes an endpoint and its log. Errors: ErrNotFound.
	DeleteWebhook(ctx context.Context, account int64, id string) error
	// WebhookAttempts returns an endpoint's delivery log before attempt
	// id before (0: from the newest), newest first, at most limit.
	WebhookAttempts(ctx context.Context, id string, before int64, limit int) ([]WebhookAttempt, error)
	// LogWebhookAttempt adds an attempt made outside a delivery run (a
	// test event) to the log.
	LogWebhookAttempt(ctx context.Context, a WebhookAttempt) error

	// ClaimWebhook leases to holder, for ttl, an active endpoint that is
	// due (its next attempt has come) and has events after its cursor,
	// not leased by another and of none of the accounts skip (those at
	// their share of the workers); ok is false when none is.
	ClaimWebhook(ctx context.Context, holder string, ttl time.Duration, skip ...int64) (w Webhook, ok bool, err error)
	// FinishWebhook records a delivery run of an endpoint holder leases:
	// its attempts, cursor and failures, in one transaction, renewing
	// the lease for ttl or releasing it. Errors: ErrLeaseGone, writing
	// nothing, when holder no longer holds it.
	FinishWebhook(ctx context.Context, holder, id string, o WebhookOutcome, ttl time.Duration) error
	// PruneWebhookAttempts deletes the delivery log older than t.
	PruneWebhookAttempts(ctx context.Context, before time.Time) (int, error)
}
