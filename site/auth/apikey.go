package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/site"
)

// APIKey is an organisation's key for machines. Only the SHA-256 of the
// secret is stored; the secret is shown once, by CreateAPIKey.
type APIKey struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID         string    `bun:"id,pk"`
	Org        string    `bun:"org_name,notnull"`
	Hash       string    `bun:"hash,notnull"` // hex SHA-256 of the secret
	CreatedAt  time.Time `bun:"created_at,notnull"`
	LastUsedAt time.Time `bun:"last_used_at,nullzero"` // zero when never used
	RevokedAt  time.Time `bun:"revoked_at,nullzero"`   // zero unless revoked
}

// keyPrefix starts every API key, so that a leaked one is recognisable.
const keyPrefix = "wk_"

// lastUseGranularity bounds the writes that stamping the last use costs:
// a key used many times a minute is stamped once a minute.
const lastUseGranularity = time.Minute

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// CreateAPIKey creates a key for org and returns it with its secret, which
// is not stored and cannot be shown again. Errors: ErrNotFound.
func (d *DB) CreateAPIKey(ctx context.Context, org string) (APIKey, string, error) {
	var raw [32]byte
	var id [6]byte
	rand.Read(raw[:])
	rand.Read(id[:])
	secret := keyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	k := APIKey{ID: hex.EncodeToString(id[:]), Org: org, Hash: hashKey(secret), CreatedAt: d.now()}
	err := d.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := findOrg(ctx, tx, org); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&k).Exec(ctx)
		return err
	})
	if err != nil {
		return APIKey{}, "", fmt.Errorf("create API key for %s: %w", org, err)
	}
	return k, secret, nil
}

// RevokeAPIKey revokes a key by id; it is refused from the next request on.
// Errors: ErrNotFound (no such key, or revoked already).
func (d *DB) RevokeAPIKey(ctx context.Context, id string) error {
	res, err := d.db.NewUpdate().Model((*APIKey)(nil)).Set("revoked_at = ?", d.now()).
		Where("id = ? AND revoked_at IS NULL", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("revoke API key %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("revoke API key %s: no such key, or revoked already: %w", id, ErrNotFound)
	}
	return nil
}

// APIKeys lists the keys, oldest first, revoked ones included.
func (d *DB) APIKeys(ctx context.Context) ([]APIKey, error) {
	var keys []APIKey
	if err := d.db.NewSelect().Model(&keys).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	return keys, nil
}

// dummyHash is compared against when no key matches, so that an unknown
// key costs what a known one costs.
var dummyHash = hashKey("wharf: no such key")

// keyQuery finds an API key by the hex SHA-256 of its secret, with the
// level of its organisation; the placeholder is the dialect's. Open
// prepares it once: the check of a key is the one query of every
// authenticated request (until the server's credential cache has it), and
// building and parsing it anew each time cost more than running it.
const keyQuery = `SELECT k.id, k.org_name, k.hash, k.last_used_at, k.revoked_at, o.level
FROM api_keys AS k JOIN orgs AS o ON o.name = k.org_name
WHERE k.hash = `

// prepareKeyQuery prepares keyQuery on db.
func prepareKeyQuery(ctx context.Context, db *bun.DB, postgres bool) (*sql.Stmt, error) {
	q := keyQuery + "?"
	if postgres {
		q = keyQuery + "$1"
	}
	st, err := db.DB.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare the API key query: %w", err)
	}
	return st, nil
}

// APIKey checks an organisation API key. The work is the same whatever is
// wrong: one hash, one indexed query, one constant-time comparison.
// Errors: site.ErrUnauthenticated, or a database error.
func (d *DB) APIKey(ctx context.Context, key string) (site.Principal, error) {
	ctx, cancel := d.bounded(ctx)
	defer cancel()
	h := hashKey(key)
	var (
		id, org, hash, level string
		lastUsed, revoked    bun.NullTime
	)
	err := d.keyStmt.QueryRowContext(ctx, h).Scan(&id, &org, &hash, &lastUsed, &revoked, &level)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return site.Principal{}, fmt.Errorf("check API key: %w", d.busy(ctx, err))
	}
	want := dummyHash
	if found {
		want = hash
	}
	match := subtle.ConstantTimeCompare([]byte(want), []byte(h)) == 1
	if !found || !match || !revoked.IsZero() {
		return site.Principal{}, fmt.Errorf("%w: API key unknown or revoked", site.ErrUnauthenticated)
	}
	now := d.now()
	if now.Sub(lastUsed.Time) >= lastUseGranularity {
		// Stamping the last use is best effort: a failed write must not
		// refuse a valid key.
		_, _ = d.db.NewUpdate().Model((*APIKey)(nil)).Set("last_used_at = ?", now).Where("id = ?", id).Exec(ctx)
	}
	return site.Principal{
		Kind:  "apikey",
		Name:  id,
		Orgs:  []string{org},
		Level: highest([]string{level}),
	}, nil
}
