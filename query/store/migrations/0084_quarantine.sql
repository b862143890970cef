-- The fields a write stored changed (quarantine.go): a NUL byte, invalid
-- UTF-8 or a string from the chain beyond its bound. The block was stored
-- with the field made clean; this row says which field of which row, why
-- and how long it was (its bytes are not kept).

CREATE TABLE quarantine (
	chain TEXT NOT NULL,
	block_number BIGINT NOT NULL,
	tx_hash TEXT NOT NULL DEFAULT '',
	address TEXT NOT NULL DEFAULT '',
	field TEXT NOT NULL,
	reason TEXT NOT NULL,
	length BIGINT NOT NULL,
	at BIGINT NOT NULL
);
CREATE INDEX quarantine_chain_block ON quarantine (chain, block_number);
