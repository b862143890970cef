CREATE TABLE orgs (
	name TEXT NOT NULL PRIMARY KEY,
	level TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE TABLE users (
	name TEXT NOT NULL PRIMARY KEY,
	created_at TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE TABLE memberships (
	user_name TEXT NOT NULL REFERENCES users (name) ON DELETE CASCADE,
	org_name TEXT NOT NULL REFERENCES orgs (name) ON DELETE CASCADE,
	PRIMARY KEY (user_name, org_name)
);
--bun:split
CREATE TABLE api_keys (
	id TEXT NOT NULL PRIMARY KEY,
	org_name TEXT NOT NULL REFERENCES orgs (name) ON DELETE CASCADE,
	hash TEXT NOT NULL UNIQUE,
	created_at TIMESTAMPTZ NOT NULL,
	last_used_at TIMESTAMPTZ,
	revoked_at TIMESTAMPTZ
);
--bun:split
CREATE TABLE issuer_keys (
	id TEXT NOT NULL PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	private_key TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL
);
