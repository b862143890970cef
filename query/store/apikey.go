package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// lastUsedEvery bounds how often Authenticate writes a key's last use, so
// that a busy key costs a read per request, not a write.
const lastUsedEvery = time.Minute

type apiKeyRow struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID         string    `bun:"id,pk"`
	AccountID  int64     `bun:"account_id"`
	SecretHash []byte    `bun:"secret_hash"`
	Created    time.Time `bun:"created"`
	LastUsed   time.Time `bun:"last_used,nullzero"`
	Revoked    time.Time `bun:"revoked,nullzero"`
	Account    string    `bun:"account,scanonly"`
}

func (r apiKeyRow) key() query.APIKey {
	return query.APIKey{ID: r.ID, AccountID: r.AccountID, Account: r.Account, Created: utc(r.Created),
		LastUsed: utc(r.LastUsed), Revoked: utc(r.Revoked)}
}

// CreateAPIKey creates a key for the account named name, creating the
// account if needed, and returns the key and its secret, shown once.
func (db *DB) CreateAPIKey(ctx context.Context, name string) (query.APIKey, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return query.APIKey{}, "", fmt.Errorf("store: create API key: account name is empty")
	}
	id, err := db.token(12, hex.EncodeToString)
	if err != nil {
		return query.APIKey{}, "", err
	}
	secret, err := db.token(32, base64.RawURLEncoding.EncodeToString)
	if err != nil {
		return query.APIKey{}, "", err
	}
	row := apiKeyRow{ID: "ak" + id, SecretHash: hashSecret(secret), Created: db.stamp(), Account: name}
	err = db.tx(ctx, func(tx bun.Tx) error {
		row.AccountID, err = db.ensureAccount(ctx, tx, name)
		if err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(&row).Exec(ctx)
		return err
	})
	if err != nil {
		return query.APIKey{}, "", wrap("create API key", err)
	}
	return row.key(), secret, nil
}

// token returns n random bytes encoded.
func (db *DB) token(n int, enc func([]byte) string) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(db.rand, b); err != nil {
		return "", fmt.Errorf("store: random: %w", err)
	}
	return enc(b), nil
}

func hashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// ensureAccount returns the id of the account named name, creating it.
func (db *DB) ensureAccount(ctx context.Context, tx bun.IDB, name string) (int64, error) {
	_, err := tx.ExecContext(ctx, "INSERT INTO accounts (name, created) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", name, db.stamp())
	if err != nil {
		return 0, err
	}
	var id int64
	err = tx.NewRaw("SELECT id FROM accounts WHERE name = ?", name).Scan(ctx, &id)
	return id, err
}

// RevokeAPIKey revokes a key. Errors: query.ErrNotFound.
func (db *DB) RevokeAPIKey(ctx context.Context, id string) error {
	return wrap("revoke API key "+id, db.revokeAPIKey(ctx, db.w, id))
}

func (db *DB) revokeAPIKey(ctx context.Context, tx bun.IDB, id string) error {
	res, err := tx.NewUpdate().Table("api_keys").Set("revoked = ?", db.stamp()).
		Where("id = ?", id).Where("revoked IS NULL").Exec(ctx)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		// Unknown, or revoked already: either way there is no such active key.
		return query.ErrNotFound
	}
	return nil
}

// ListAPIKeys lists all keys, newest first.
func (db *DB) ListAPIKeys(ctx context.Context) ([]query.APIKey, error) {
	var rows []apiKeyRow
	err := db.r.NewSelect().Model(&rows).
		ColumnExpr("k.id, k.account_id, k.created, k.last_used, k.revoked, a.name AS account").
		ModelTableExpr("api_keys AS k").Join("JOIN accounts AS a ON a.id = k.account_id").
		OrderExpr("k.created DESC, k.id").Scan(ctx)
	if err != nil {
		return nil, wrap("list API keys", err)
	}
	keys := make([]query.APIKey, len(rows))
	for i, r := range rows {
		keys[i] = r.key()
	}
	return keys, nil
}

// dummyHash is compared against when the key does not exist, so that an
// unknown ID takes as long as a wrong secret.
var dummyHash = hashSecret("")

// Authenticate checks id and secret in constant time and returns the
// account. Errors: query.ErrUnauthenticated.
func (db *DB) Authenticate(ctx context.Context, id, secret string) (query.Account, error) {
	acct, err := db.authenticate(ctx, id, secret)
	if err != nil {
		return query.Account{}, wrap("authenticate", err)
	}
	return acct, nil
}

// authenticateQuery reads an API key and its account: one of the hot
// reads, as every request makes it.
const authenticateQuery = `SELECT k.account_id, k.secret_hash, k.last_used, k.revoked, a.name, a.created
	FROM api_keys AS k JOIN accounts AS a ON a.id = k.account_id WHERE k.id = $1`

func (db *DB) authenticate(ctx context.Context, id, secret string) (query.Account, error) {
	var row struct {
		AccountID  int64
		SecretHash []byte
		LastUsed   time.Time `bun:",nullzero"`
		Revoked    time.Time `bun:",nullzero"`
		Name       string
		Created    time.Time
	}
	rows, err := db.queryHot(ctx, authenticateQuery, id)
	if err == nil {
		err = db.r.ScanRows(ctx, rows, &row) // closes rows
	}
	found := err == nil
	if err != nil && !isNoRows(err) {
		return query.Account{}, err
	}
	want := dummyHash
	if found {
		want = row.SecretHash
	}
	match := subtle.ConstantTimeCompare(hashSecret(secret), want) == 1
	if !found || !match || !row.Revoked.IsZero() {
		return query.Account{}, query.ErrUnauthenticated
	}
	if now := db.stamp(); now.Sub(row.LastUsed) >= lastUsedEvery {
		// Best effort: a failed stamp must not fail the request.
		_, _ = db.w.NewUpdate().Table("api_keys").Set("last_used = ?", now).Where("id = ?", id).Exec(ctx)
	}
	return query.Account{ID: row.AccountID, Name: row.Name, Created: utc(row.Created)}, nil
}
