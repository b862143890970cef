-- chain_ids.caip2 is the chain's CAIP-2 chain ID ("eip155:1"), the
-- identity of a chain of any family; every chain recorded before was an
-- EVM chain, named by its EIP-155 chain_id. chain_id stays, written for
-- an EVM chain (0 for another family), so that a replica of the release
-- before reads it during a rolling upgrade; a row such a replica records
-- meanwhile has caip2 '' and is read by its chain_id.

ALTER TABLE chain_ids ADD COLUMN caip2 TEXT NOT NULL DEFAULT '';

UPDATE chain_ids SET caip2 = 'eip155:' || chain_id WHERE caip2 = ''
