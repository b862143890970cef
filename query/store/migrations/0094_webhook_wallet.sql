-- A webhook's wallet filter: the ID of one of the account's descriptor
-- wallets on the endpoint's chain, whose addresses' events alone it is
-- sent ("" is every address).
ALTER TABLE webhooks ADD COLUMN wallet TEXT NOT NULL DEFAULT '';
