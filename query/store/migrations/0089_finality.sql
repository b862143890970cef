-- chain_finality holds each chain's finality marks: the newest stored
-- block that is safe and the newest that is finalized, by the node's
-- tags or, on a node without them, by depth (source). The fetcher moves
-- them up as the node's tags move and as blocks are stored; a rewind
-- lowers them. A row's finality is read against them.

CREATE TABLE chain_finality (
	chain TEXT PRIMARY KEY,
	safe BIGINT NOT NULL DEFAULT 0,
	finalized BIGINT NOT NULL DEFAULT 0,
	source TEXT NOT NULL DEFAULT ''
);
