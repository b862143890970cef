package auth

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// User is a person who downloads with access tokens; it counts through the
// organisations it is a member of.
type User struct {
	bun.BaseModel `bun:"table:users"`

	Name      string    `bun:"name,pk"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	// ID is random and new each time a name is added: access tokens carry
	// it, so a token never outlives the user it was made for, even when
	// the name is removed and added again within the same second.
	ID   string   `bun:"id,nullzero"`
	Orgs []string `bun:"-"`
}

type membership struct {
	bun.BaseModel `bun:"table:memberships"`

	UserName string `bun:"user_name,pk"`
	OrgName  string `bun:"org_name,pk"`
}

// AddUser makes name a member of org, creating the user when it is new.
// Adding an existing member again is a no-op. Errors: ErrInvalid,
// ErrNotFound (no such organisation).
func (d *DB) AddUser(ctx context.Context, name, org string) error {
	if err := checkName("user", name); err != nil {
		return err
	}
	err := d.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := findOrg(ctx, tx, org); err != nil {
			return err
		}
		u := User{Name: name, CreatedAt: d.now(), ID: newUserID()}
		if _, err := tx.NewInsert().Model(&u).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
			return err
		}
		m := membership{UserName: name, OrgName: org}
		_, err := tx.NewInsert().Model(&m).On("CONFLICT (user_name, org_name) DO NOTHING").Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("add user %s to %s: %w", name, org, err)
	}
	return nil
}

// newUserID is a random user id.
func newUserID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// userID returns the id of a user, giving one to a user added before ids
// existed. Errors: ErrNotFound.
func (d *DB) userID(ctx context.Context, name string) (string, error) {
	id := newUserID()
	if _, err := d.db.NewUpdate().Model((*User)(nil)).Set("id = ?", id).Where("name = ? AND id IS NULL", name).Exec(ctx); err != nil {
		return "", fmt.Errorf("user %s: give an id: %w", name, err)
	}
	u, _, err := d.findUser(ctx, name)
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// RemoveUser removes a user from org, or deletes the user altogether when
// org is "". A deleted user's access tokens are refused from then on.
// Errors: ErrNotFound.
func (d *DB) RemoveUser(ctx context.Context, name, org string) error {
	var res sql.Result
	var err error
	if org == "" {
		res, err = d.db.NewDelete().Model((*User)(nil)).Where("name = ?", name).Exec(ctx)
	} else {
		res, err = d.db.NewDelete().Model((*membership)(nil)).Where("user_name = ? AND org_name = ?", name, org).Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("remove user %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if org != "" {
			return fmt.Errorf("remove user %s from %s: not a member: %w", name, org, ErrNotFound)
		}
		return fmt.Errorf("remove user %s: %w", name, ErrNotFound)
	}
	return nil
}

// Users lists the users by name with their organisations.
func (d *DB) Users(ctx context.Context) ([]User, error) {
	var users []User
	if err := d.db.NewSelect().Model(&users).Order("name").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	var ms []membership
	if err := d.db.NewSelect().Model(&ms).Order("org_name").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	byUser := map[string][]string{}
	for _, m := range ms {
		byUser[m.UserName] = append(byUser[m.UserName], m.OrgName)
	}
	for i := range users {
		users[i].Orgs = byUser[users[i].Name]
	}
	return users, nil
}

// findUser returns a user with its organisations and their highest level.
// Errors: ErrNotFound.
func (d *DB) findUser(ctx context.Context, name string) (User, string, error) {
	var u User
	err := d.db.NewSelect().Model(&u).Where("name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, "", fmt.Errorf("user %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return User{}, "", fmt.Errorf("find user %s: %w", name, err)
	}
	var rows []struct {
		Name  string `bun:"name"`
		Level string `bun:"level"`
	}
	err = d.db.NewSelect().TableExpr("memberships AS m").
		ColumnExpr("o.name, o.level").
		Join("JOIN orgs AS o ON o.name = m.org_name").
		Where("m.user_name = ?", name).
		OrderExpr("o.name").
		Scan(ctx, &rows)
	if err != nil {
		return User{}, "", fmt.Errorf("find organisations of user %s: %w", name, err)
	}
	levels := make([]string, len(rows))
	for i, r := range rows {
		u.Orgs = append(u.Orgs, r.Name)
		levels[i] = r.Level
	}
	return u, highest(levels), nil
}
