CREATE TABLE revoked_sessions (
	id TEXT NOT NULL PRIMARY KEY,
	expires_at TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE INDEX revoked_sessions_expires_at ON revoked_sessions (expires_at);
