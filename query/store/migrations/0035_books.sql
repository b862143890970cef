-- For the books (issue 24): ranges, filters and balances as of a block or
-- a time. block_time is the Unix time (seconds) of a row's block, written
-- with the row, so that a time range resolves to a block range through
-- one index probe (range.go); rows stored before this migration get it
-- from their document (migrate_books.go). A statement row of a block
-- without a known time keeps NULL and falls outside every time range.
--
-- balance_changes_contract serves a statement filtered by asset and the
-- balances as of a block (the last row of each asset at or before it);
-- the *_time indexes map a time to the first or last block of an
-- address at or after it.

ALTER TABLE balance_changes ADD COLUMN block_time BIGINT;
ALTER TABLE tx_addresses ADD COLUMN block_time BIGINT;
CREATE INDEX balance_changes_contract ON balance_changes (chain, address, contract, block_number);
CREATE INDEX balance_changes_time ON balance_changes (chain, address, block_time, block_number);
CREATE INDEX tx_addresses_time ON tx_addresses (chain, address, block_time, block_number)
