DROP TABLE issuer_keys;
--bun:split
DROP TABLE api_keys;
--bun:split
DROP TABLE memberships;
--bun:split
DROP TABLE users;
--bun:split
DROP TABLE orgs;
