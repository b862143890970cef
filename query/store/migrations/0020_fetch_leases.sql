-- The fetchers' leases: one row per chain, held by the replica that
-- fetches it until expires_ms (milliseconds since the epoch by the
-- database's clock). generation grows with every new holder; each write
-- of the fetcher checks it in its own transaction (fencing).
CREATE TABLE fetch_leases (
	chain TEXT PRIMARY KEY,
	holder TEXT NOT NULL,
	generation BIGINT NOT NULL,
	expires_ms BIGINT NOT NULL,
	head BIGINT NOT NULL DEFAULT 0
);
