-- The rows stored without a block time: a fetcher of a binary older than
-- migration 0035 writes them during a rolling upgrade, knowing no
-- block_time. The fetcher that takes a chain's lease next fills them
-- (FillBlockTimes) through these indexes, empty the rest of the time.

CREATE INDEX balance_changes_untimed ON balance_changes (chain, block_number) WHERE block_time IS NULL;
CREATE INDEX tx_addresses_untimed ON tx_addresses (chain, block_number) WHERE block_time IS NULL;
