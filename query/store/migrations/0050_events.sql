-- The event feed (issue 23, docs/events.md): an outbox written in the
-- same transaction as the statement rows, reorg retractions and state
-- changes it tells of. id is the feed position: on PostgreSQL every
-- transaction that writes events first takes one advisory lock
-- (event.go), so that ids are taken, and committed, in one order; on
-- SQLite the one writer does the same. AUTOINCREMENT never reuses an id.
-- data is the event's JSON object as the API and the webhooks send it.
-- events_pruned holds the newest position deleted by the retention: a
-- cursor older than it is refused. A subscription sees the events of its
-- address after events_from, the newest position when it was created, so
-- that subscribing again replays nothing.

CREATE TABLE events (
	id {{.Serial}},
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	kind TEXT NOT NULL,
	block_number BIGINT NOT NULL,
	created {{.Time}} NOT NULL,
	data TEXT NOT NULL
);

CREATE INDEX events_address ON events (chain, address, id);

CREATE INDEX events_created ON events (created);

CREATE TABLE events_pruned (
	one INTEGER PRIMARY KEY,
	through BIGINT NOT NULL
);

ALTER TABLE subscriptions ADD COLUMN events_from BIGINT NOT NULL DEFAULT 0
