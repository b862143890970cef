-- Transaction documents of version 6: the chain-neutral transaction and
-- the family's detail document (txdoc.go). The documents stored before
-- (versions 1 to 5, with the EVM's nonce, gas, input and revert reason
-- among their fields) are rewritten in place by migrate_txdoc.go, in
-- transactions and tx_addresses; this file holds no statement.
SELECT 1
