-- A token's name() beside its symbol and decimals (issue 24). Balances
-- of an ERC-1155 id keep the holding key contract/id in contract.

ALTER TABLE balances ADD COLUMN name TEXT NOT NULL DEFAULT '';
