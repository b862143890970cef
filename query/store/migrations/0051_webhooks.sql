-- Webhook endpoints (issue 23, docs/events.md). Each row is also the
-- delivery queue of its endpoint: cursor is the feed position delivered
-- up to, next_attempt when it is tried again after a failure, and
-- lease_holder/lease_ms (milliseconds by the database's clock) the
-- replica delivering it now, so that one endpoint's events go out one at
-- a time, in order, from one replica, and another takes over when a
-- replica dies. kinds is comma-separated ("" is every kind).
-- webhook_attempts is the delivery log.

CREATE TABLE webhooks (
	id TEXT PRIMARY KEY,
	account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	url TEXT NOT NULL,
	description TEXT NOT NULL,
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	kinds TEXT NOT NULL,
	secret TEXT NOT NULL,
	old_secret TEXT NOT NULL,
	old_until {{.Time}},
	cursor BIGINT NOT NULL,
	state TEXT NOT NULL,
	disabled_reason TEXT NOT NULL,
	failures INTEGER NOT NULL,
	failing_since {{.Time}},
	next_attempt {{.Time}} NOT NULL,
	lease_holder TEXT NOT NULL,
	lease_ms BIGINT NOT NULL,
	created {{.Time}} NOT NULL,
	updated {{.Time}} NOT NULL
);

CREATE INDEX webhooks_account ON webhooks (account_id, created);

CREATE INDEX webhooks_due ON webhooks (state, next_attempt);

CREATE TABLE webhook_attempts (
	id {{.Serial}},
	webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	event_id TEXT NOT NULL,
	event_type TEXT NOT NULL,
	attempted {{.Time}} NOT NULL,
	status INTEGER NOT NULL,
	error TEXT NOT NULL,
	latency_us BIGINT NOT NULL,
	response TEXT NOT NULL
);

CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, id);

CREATE INDEX webhook_attempts_time ON webhook_attempts (attempted)
