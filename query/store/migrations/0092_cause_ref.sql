-- Statement rows of version 4: each cause keeps its family's reference
-- (query.Cause.Ref: a log, a call path, a withdrawal, an outpoint)
-- instead of an EIP-4895 withdrawal's index and validator index. The rows
-- stored before (versions 1 to 3) are rewritten in place by
-- migrate_changedoc.go, their withdrawals' indexes as the withdrawal's
-- reference; this file holds no statement.
SELECT 1
