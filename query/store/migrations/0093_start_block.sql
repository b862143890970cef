-- A start height a subscriber gave (a wallet's birth height): the
-- address held nothing before it, so its history is read from there and
-- its statement chains from zero there. The lowest given while the
-- address is owed a sync is kept; NULL when none was given. A wallet
-- keeps its own, for the addresses it derives later.
ALTER TABLE tracked ADD COLUMN start_block BIGINT;
ALTER TABLE wallets ADD COLUMN start_block BIGINT;
