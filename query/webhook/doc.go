// Package webhook pushes the event feed to requesters' endpoints: one
// signed POST per event, Standard Webhooks 1.0 (webhook-id,
// webhook-timestamp, webhook-signature), in feed order per endpoint, at
// least once, retried with exponential back-off and jitter (or the
// endpoint's Retry-After) until it answers 2xx, and the endpoint
// disabled with a reason after failing for the retry period. The HTTP
// client refuses to dial loopback, private, link-local and other
// non-public addresses, checked on the address dialled after DNS, and
// follows no redirects. docs/events.md describes it for receivers.
package webhook
