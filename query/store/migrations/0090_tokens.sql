-- A token's metadata (symbol, name, decimals), stored once per chain,
-- contract and metadata rather than in every transfer: the transaction
-- documents written from here on (version 7, txdoc.go) name a token
-- transfer's metadata by its row's id, so that a token minted N times
-- stores its strings once, not N times over each party; a token whose
-- answers change has a row for each answer it gave, and each transfer
-- reads as it was stored. Documents written before keep their copies and
-- are read as they are. Filled here, in one statement, from the balances
-- of the tokens (an ERC-1155 holding's key is contract/id: its contract
-- is the part before the slash); one first seen in a transfer is added
-- by the store when it stores that block.
CREATE TABLE tokens (
	id {{.Serial}},
	chain TEXT NOT NULL,
	contract TEXT NOT NULL,
	symbol TEXT NOT NULL,
	name TEXT NOT NULL,
	decimals INTEGER NOT NULL,
	first_block BIGINT NOT NULL,
	updated {{.Time}} NOT NULL
);

CREATE UNIQUE INDEX tokens_meta ON tokens (chain, contract, symbol, name, decimals);

INSERT INTO tokens (chain, contract, symbol, name, decimals, first_block, updated)
SELECT chain, contract, symbol, name, decimals, MIN(block_number), MAX(updated)
FROM (SELECT chain, CASE WHEN asset = 'erc1155' THEN substr(contract, 1, 42) ELSE contract END AS contract,
	symbol, name, decimals, block_number, updated FROM balances WHERE asset <> 'native') AS b
GROUP BY chain, contract, symbol, name, decimals
ORDER BY chain, contract, MIN(block_number)
