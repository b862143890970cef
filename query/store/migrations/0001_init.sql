-- The address-data service's first schema. Written once for both
-- dialects: {{.Serial}}, {{.Time}}, {{.Bytes}} and {{.Amount}} are
-- replaced per dialect, and so are {{.IncludeHash}} (a covering index on
-- PostgreSQL) and {{.WithoutRowID}} (a clustered table on SQLite); see
-- migrate.go. Amounts are exact decimals.

CREATE TABLE accounts (
	id {{.Serial}},
	name TEXT NOT NULL UNIQUE,
	created {{.Time}} NOT NULL
);

CREATE TABLE api_keys (
	id TEXT PRIMARY KEY,
	account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	secret_hash {{.Bytes}} NOT NULL,
	created {{.Time}} NOT NULL,
	last_used {{.Time}},
	revoked {{.Time}}
);

CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE subscriptions (
	account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	created {{.Time}} NOT NULL,
	PRIMARY KEY (account_id, chain, address)
);

CREATE INDEX subscriptions_chain_address ON subscriptions (chain, address);

-- One row per address ever subscribed on a chain: the fetcher's view.
-- active mirrors "has at least one subscription"; sync_from remembers the
-- checkpoint when the last subscriber left, so resubscribing fills the gap.
CREATE TABLE tracked (
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	active BOOLEAN NOT NULL,
	needs_sync BOOLEAN NOT NULL,
	sync_from BIGINT NOT NULL DEFAULT 0,
	synced_to BIGINT,
	PRIMARY KEY (chain, address)
);

CREATE INDEX tracked_active ON tracked (chain, active);

CREATE TABLE blocks (
	chain TEXT NOT NULL,
	number BIGINT NOT NULL,
	hash TEXT NOT NULL,
	parent_hash TEXT NOT NULL,
	time {{.Time}} NOT NULL,
	PRIMARY KEY (chain, number)
);

CREATE TABLE checkpoints (
	chain TEXT PRIMARY KEY,
	number BIGINT NOT NULL,
	hash TEXT NOT NULL,
	parent_hash TEXT NOT NULL,
	time {{.Time}}
);

CREATE TABLE transactions (
	chain TEXT NOT NULL,
	hash TEXT NOT NULL,
	block_number BIGINT NOT NULL,
	block_hash TEXT NOT NULL,
	block_time {{.Time}} NOT NULL,
	tx_index INTEGER NOT NULL,
	status TEXT NOT NULL,
	from_address TEXT NOT NULL,
	to_address TEXT NOT NULL,
	value {{.Amount}} NOT NULL,
	fee {{.Amount}} NOT NULL,
	nonce BIGINT NOT NULL,
	PRIMARY KEY (chain, hash)
);

CREATE INDEX transactions_block ON transactions (chain, block_number);

CREATE TABLE transfers (
	chain TEXT NOT NULL,
	hash TEXT NOT NULL,
	log_index INTEGER NOT NULL,
	asset TEXT NOT NULL,
	contract TEXT NOT NULL,
	from_address TEXT NOT NULL,
	to_address TEXT NOT NULL,
	amount {{.Amount}} NOT NULL,
	PRIMARY KEY (chain, hash, log_index)
);

-- The keyset index of an address's transactions, most recent first. A
-- page reads the key alone: covering on PostgreSQL, clustered on SQLite.
CREATE TABLE tx_addresses (
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	block_number BIGINT NOT NULL,
	tx_index INTEGER NOT NULL,
	hash TEXT NOT NULL,
	PRIMARY KEY (chain, address, block_number, tx_index){{.IncludeHash}}
){{.WithoutRowID}};

CREATE INDEX tx_addresses_block ON tx_addresses (chain, block_number);

CREATE TABLE balances (
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	contract TEXT NOT NULL,
	asset TEXT NOT NULL,
	symbol TEXT NOT NULL,
	decimals INTEGER NOT NULL,
	amount {{.Amount}} NOT NULL,
	block_number BIGINT NOT NULL,
	updated {{.Time}} NOT NULL,
	PRIMARY KEY (chain, address, contract)
);

CREATE TABLE secrets (
	name TEXT PRIMARY KEY,
	value {{.Bytes}} NOT NULL,
	created {{.Time}} NOT NULL
);
