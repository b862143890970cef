-- Every wei accounted for (issue 10). balance_changes holds the rows of
-- an address's statement, one per block and asset whose balance changed,
-- each as a document (statement.go) so that a page is one range read of
-- its key, newest first. statement_heads is where each statement stands:
-- the running balance the next row continues from. transactions.doc is
-- the transaction's document (txdoc.go) for the read by hash, which
-- carries what the columns do not (gas, type, method, created contract,
-- internal movements).

CREATE TABLE balance_changes (
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	block_number BIGINT NOT NULL,
	contract TEXT NOT NULL,
	doc TEXT NOT NULL,
	PRIMARY KEY (chain, address, block_number, contract)
){{.WithoutRowID}};

CREATE INDEX balance_changes_block ON balance_changes (chain, block_number);

CREATE TABLE statement_heads (
	chain TEXT NOT NULL,
	address TEXT NOT NULL,
	contract TEXT NOT NULL,
	block_number BIGINT NOT NULL,
	balance TEXT NOT NULL,
	PRIMARY KEY (chain, address, contract)
);

ALTER TABLE transactions ADD COLUMN doc TEXT;
