package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/site"
)

// Org is an organisation: the unit permissions are granted to.
type Org struct {
	bun.BaseModel `bun:"table:orgs"`

	Name      string    `bun:"name,pk"`
	Level     string    `bun:"level,notnull"` // site.LevelBasic or site.LevelFull
	CreatedAt time.Time `bun:"created_at,notnull"`
}

func checkLevel(level string) error {
	if level != site.LevelBasic && level != site.LevelFull {
		return fmt.Errorf("%w: level %q is neither %q nor %q", ErrInvalid, level, site.LevelBasic, site.LevelFull)
	}
	return nil
}

// CreateOrg creates an organisation. Errors: ErrInvalid, ErrExists.
func (d *DB) CreateOrg(ctx context.Context, name, level string) (Org, error) {
	if err := checkName("organisation", name); err != nil {
		return Org{}, err
	}
	if err := checkLevel(level); err != nil {
		return Org{}, err
	}
	org := Org{Name: name, Level: level, CreatedAt: d.now()}
	if _, err := d.db.NewInsert().Model(&org).Exec(ctx); err != nil {
		if isUniqueViolation(err) {
			return Org{}, fmt.Errorf("create organisation %s: %w", name, ErrExists)
		}
		return Org{}, fmt.Errorf("create organisation %s: %w", name, err)
	}
	return org, nil
}

// SetOrgLevel changes the permission level of an organisation; it applies
// to the next request of its members and keys. Errors: ErrInvalid, ErrNotFound.
func (d *DB) SetOrgLevel(ctx context.Context, name, level string) error {
	if err := checkLevel(level); err != nil {
		return err
	}
	res, err := d.db.NewUpdate().Model((*Org)(nil)).Set("level = ?", level).Where("name = ?", name).Exec(ctx)
	if err != nil {
		return fmt.Errorf("set level of organisation %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("set level of organisation %s: %w", name, ErrNotFound)
	}
	return nil
}

// Orgs lists the organisations by name.
func (d *DB) Orgs(ctx context.Context) ([]Org, error) {
	var orgs []Org
	if err := d.db.NewSelect().Model(&orgs).Order("name").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list organisations: %w", err)
	}
	return orgs, nil
}

// findOrg returns the organisation of a name. Errors: ErrNotFound.
func findOrg(ctx context.Context, db bun.IDB, name string) (Org, error) {
	var org Org
	err := db.NewSelect().Model(&org).Where("name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Org{}, fmt.Errorf("organisation %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Org{}, fmt.Errorf("find organisation %s: %w", name, err)
	}
	return org, nil
}

// highest returns the highest level among levels, "" for none.
func highest(levels []string) string {
	best := ""
	for _, l := range levels {
		switch {
		case l == site.LevelFull:
			return site.LevelFull
		case l == site.LevelBasic:
			best = site.LevelBasic
		}
	}
	return best
}
