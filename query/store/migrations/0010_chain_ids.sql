-- The chain ID of the node behind each chain name, recorded on the first
-- start: a node of another chain ID behind the same name is refused.

CREATE TABLE chain_ids (
	chain TEXT PRIMARY KEY,
	chain_id BIGINT NOT NULL,
	recorded {{.Time}} NOT NULL
)
