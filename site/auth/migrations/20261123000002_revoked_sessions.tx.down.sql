DROP TABLE revoked_sessions;
