-- Coverage and state of a tracked address. history_start is the first
-- block of the range whose transactions are all stored (NULL until the
-- fetcher first syncs it); reads list nothing older. A pending backfill
-- covers backfill_low up to backfill_next, newest first, moving
-- backfill_next down as it stores (its checkpoint); both are NULL when
-- none is pending. An address is SYNCING while needs_sync or a backfill
-- is pending, else ACTIVE.
--
-- Addresses synced before this migration were backfilled over the
-- default window of 1000 blocks before synced_to.

ALTER TABLE tracked ADD COLUMN history_start BIGINT;
ALTER TABLE tracked ADD COLUMN backfill_low BIGINT;
ALTER TABLE tracked ADD COLUMN backfill_next BIGINT;
UPDATE tracked SET history_start = CASE WHEN synced_to >= 999 THEN synced_to - 999 ELSE 0 END
	WHERE synced_to IS NOT NULL
