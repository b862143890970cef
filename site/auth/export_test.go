package auth

import (
	"context"

	"github.com/golang-jwt/jwt/v5"
)

// SignForTest signs claims with the issuer key, as CreateToken does, so
// tests can make validly signed tokens with other claims.
func (d *DB) SignForTest(ctx context.Context, claims jwt.Claims) (string, error) {
	return d.sign(ctx, claims)
}

// SignHeaderForTest is SignForTest with extra header fields.
func (d *DB) SignHeaderForTest(ctx context.Context, claims jwt.Claims, header map[string]any) (string, error) {
	return d.signHeader(ctx, claims, header)
}

// RevokedSessionsForTest counts the revocation records kept.
func (d *DB) RevokedSessionsForTest(ctx context.Context) (int64, error) {
	return d.revokedSessions(ctx)
}

// ForgetUserIDForTest makes a user look as if it was added before users
// had ids.
func (d *DB) ForgetUserIDForTest(ctx context.Context, name string) error {
	_, err := d.db.NewUpdate().Model((*User)(nil)).Set("id = NULL").Where("name = ?", name).Exec(ctx)
	return err
}
