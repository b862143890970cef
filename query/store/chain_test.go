package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
)

// TestChainIdentity: a chain's CAIP-2 identity is recorded once, of any
// family; the first recorded wins, a genesis learnt later is added; a
// malformed chain ID is refused; a row that a replica of the release
// before records during a rolling upgrade (chain_id alone) reads as the
// EVM chain of its chain_id.
func TestChainIdentity(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := open(t, dsn)
		for _, tc := range []struct {
			chain      string
			first, got query.ChainIdentity
			want       query.ChainIdentity
		}{
			{"ETH", query.ChainIdentity{ID: "eip155:1"}, query.ChainIdentity{ID: "eip155:1", Genesis: "0xd4e5"},
				query.ChainIdentity{ID: "eip155:1", Genesis: "0xd4e5"}},
			{"OTHER", query.ChainIdentity{ID: "eip155:10", Genesis: "0xaa"}, query.ChainIdentity{ID: "eip155:11", Genesis: "0xbb"},
				query.ChainIdentity{ID: "eip155:10", Genesis: "0xaa"}},
			{"BTC", query.ChainIdentity{ID: "bip122:000000000019d6689c085ae165831e93", Genesis: "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"},
				query.ChainIdentity{ID: "bip122:000000000933ea01ad0ee984209779ba"},
				query.ChainIdentity{ID: "bip122:000000000019d6689c085ae165831e93", Genesis: "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"}},
		} {
			if _, err := db.RecordChainIdentity(ctx, tc.chain, tc.first); err != nil {
				t.Fatal(err)
			}
			got, err := db.RecordChainIdentity(ctx, tc.chain, tc.got)
			if err != nil || got != tc.want {
				t.Errorf("%s: recorded %+v, %v; want %+v", tc.chain, got, err, tc.want)
			}
			if got, err := db.ChainIdentity(ctx, tc.chain); err != nil || got != tc.want {
				t.Errorf("%s: ChainIdentity %+v, %v; want %+v", tc.chain, got, err, tc.want)
			}
		}
		for _, bad := range []string{"", "1", "eip155", "EIP155:1"} {
			if _, err := db.RecordChainIdentity(ctx, "BAD", query.ChainIdentity{ID: bad}); err == nil {
				t.Errorf("chain ID %q recorded", bad)
			}
		}
		if _, err := db.ChainIdentity(ctx, "BAD"); !errors.Is(err, query.ErrNotFound) {
			t.Errorf("a refused chain ID recorded: %v", err)
		}
		if _, err := db.Bun().ExecContext(ctx, `INSERT INTO chain_ids (chain, chain_id, recorded) VALUES ('OLD', 8453, ?)`, "2026-01-01 00:00:00+00"); err != nil {
			t.Fatal(err)
		}
		if got, err := db.ChainIdentity(ctx, "OLD"); err != nil || got.ID != "eip155:8453" {
			t.Errorf("a row of the release before: %+v, %v; want eip155:8453", got, err)
		}
	})
}
