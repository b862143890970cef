-- Descriptor wallets: a requester's named set of output descriptors on a
-- chain, how far each is derived and used, and the addresses derived,
-- each of which is also one of the requester's subscriptions.
CREATE TABLE wallets (
	account_id BIGINT NOT NULL,
	chain TEXT NOT NULL,
	wallet TEXT NOT NULL,
	gap_limit INTEGER NOT NULL,
	created {{.Time}} NOT NULL,
	PRIMARY KEY (account_id, chain, wallet)
);

CREATE TABLE wallet_descriptors (
	account_id BIGINT NOT NULL,
	chain TEXT NOT NULL,
	wallet TEXT NOT NULL,
	position INTEGER NOT NULL,
	descriptor TEXT NOT NULL,
	internal BOOLEAN NOT NULL,
	derived BIGINT NOT NULL,
	used BIGINT NOT NULL,
	PRIMARY KEY (account_id, chain, wallet, position)
);

CREATE TABLE wallet_addresses (
	account_id BIGINT NOT NULL,
	chain TEXT NOT NULL,
	wallet TEXT NOT NULL,
	position INTEGER NOT NULL,
	idx BIGINT NOT NULL,
	address TEXT NOT NULL,
	PRIMARY KEY (account_id, chain, wallet, position, idx)
);

CREATE INDEX wallet_addresses_address ON wallet_addresses (chain, address);
