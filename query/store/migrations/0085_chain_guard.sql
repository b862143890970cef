-- The guards of a chain's history. chain_ids.genesis is the hash of the
-- block 0 the node served when the chain was first fetched: with the
-- chain ID, the chain's identity, checked again on every reconnection.
-- chain_stops holds a chain whose fetching stopped rather than delete
-- history (a reorg deeper than the bound): reason says why, until an
-- operator resumes it (accept, the refused reorg may then be applied)
-- or rewinds it (rewind_to, -1 for none). fetch_leases.progress_ms is
-- when the leader last advanced, by the database's clock, and problem
-- what it reports failing: every replica's /healthz reads them.

ALTER TABLE chain_ids ADD COLUMN genesis TEXT NOT NULL DEFAULT '';

CREATE TABLE chain_stops (
	chain TEXT PRIMARY KEY,
	reason TEXT NOT NULL DEFAULT '',
	stopped_ms BIGINT NOT NULL DEFAULT 0,
	accept BIGINT NOT NULL DEFAULT 0,
	rewind_to BIGINT NOT NULL DEFAULT -1
);

ALTER TABLE fetch_leases ADD COLUMN progress_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE fetch_leases ADD COLUMN problem TEXT NOT NULL DEFAULT '';
