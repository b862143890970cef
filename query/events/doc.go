// Package events holds what the event feed's readers share: the feed's
// cursors, the JSON of an event as /v1/events lists it and a webhook
// sends it, and a Watcher that wakes waiting readers when the feed
// grows. The feed itself is written by the store in the transactions
// that store what it tells of (query/store/event.go); docs/events.md
// describes it.
package events
