-- Each tx_addresses row carries its whole transaction, transfers included
-- (see txdoc.go), so that a page of an address's transactions is one
-- range read of its keyset index instead of three lookups a row. Rows
-- written before this migration keep NULL; a page with one of those is
-- read the old way, by joining transactions and transfers.

ALTER TABLE tx_addresses ADD COLUMN doc TEXT
