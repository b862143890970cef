package adversary_test

import (
	"context"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/evm/adversary"
)

// hostileMints is how many times TestHostileTokenStorage mints its token
// to each address: 24, or ADDRD_HOSTILE_MINTS.
func hostileMints(t *testing.T) int {
	n := 24
	if s := os.Getenv("ADDRD_HOSTILE_MINTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("ADDRD_HOSTILE_MINTS=%q: want a number above 1", s)
		}
	}
	return n
}

// TestHostileTokenStorage, on the dev chain, on SQLite and PostgreSQL: a
// token whose symbol() and name() each answer a megabyte, minted N times
// to a subscribed address, grows the store by its metadata once (one
// tokens row), not once a transfer: no stored transaction document holds
// the token's symbol or name, and what a mint costs the documents does
// not grow with the metadata's length.
func TestHostileTokenStorage(t *testing.T) {
	n := hostileMints(t)
	for _, db := range testenv.DBs() {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			rng := testenv.Rand(t, 341)
			s := newStack(t, run{seed: rng.Uint64N(1 << 32), postgres: db.Name == "PostgreSQL", traces: true, window: 1000})
			victim := s.gen.Key(2)
			s.subscribe(victim)
			s.catchUp()
			tokens, err := s.gen.DeployHostile(ctx, []adversary.HostileMeta{adversary.HostileBigMeta(rng)})
			if err != nil {
				t.Fatal(err)
			}
			token := strings.ToLower(tokens[0].Address.Hex())
			for i := 0; i < n; i++ {
				if err := s.gen.HostileMint(ctx, tokens[0].Address, victim, big.NewInt(int64(1+i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.gen.Seal(ctx); err != nil {
				t.Fatal(err)
			}
			s.catchUp()

			bdb := s.db.Bun()
			var meta []struct {
				Symbol string `bun:"symbol"`
				Name   string `bun:"name"`
			}
			if err := bdb.NewRaw("SELECT symbol, name FROM tokens WHERE chain = ? AND contract = ?", chainName, token).Scan(ctx, &meta); err != nil {
				t.Fatalf("tokens: %v", err)
			}
			if len(meta) != 1 || meta[0].Symbol == "" || meta[0].Name == "" {
				t.Fatalf("tokens rows of %s: %+v, want one with its symbol and name", token, meta)
			}
			var docs []string
			for _, table := range []string{"transactions", "tx_addresses"} {
				var d []string
				if err := bdb.NewRaw("SELECT doc FROM "+table+" WHERE chain = ? AND doc IS NOT NULL", chainName).Scan(ctx, &d); err != nil {
					t.Fatalf("%s: %v", table, err)
				}
				docs = append(docs, d...)
			}
			copies, bytes, mints := 0, 0, 0
			for _, d := range docs {
				if strings.Contains(d, token) {
					mints++
					bytes += len(d)
				}
				if strings.Contains(d, meta[0].Symbol) || strings.Contains(d, meta[0].Name) {
					copies++
				}
			}
			t.Logf("%s: %d mints of a token answering 1 MB symbol and name (stored %d and %d bytes): %d documents name it, %d bytes (%d a document), %d with a copy of its metadata",
				db.Name, n, len(meta[0].Symbol), len(meta[0].Name), mints, bytes, bytes/max(1, mints), copies)
			if mints < n {
				t.Errorf("%d documents name the token, want at least the %d mints'", mints, n)
			}
			if copies != 0 {
				t.Errorf("the token's metadata is copied into %d of %d documents (%d bytes, %d a document): want it once, in tokens",
					copies, mints, bytes, bytes/max(1, mints))
			}
		})
	}
}
