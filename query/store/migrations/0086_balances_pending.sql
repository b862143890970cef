-- tracked.balances_pending: the address's backfill has ended and the
-- head follower has not yet stored the balances of the holdings it
-- found; the subscription stays SYNCING until it has (BalancesStored).

ALTER TABLE tracked ADD COLUMN balances_pending BOOLEAN NOT NULL DEFAULT FALSE;
