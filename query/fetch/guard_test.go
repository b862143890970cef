package fetch_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
	"github.com/wharfhq/wharf/query/fetch"
)

// guarded is a fetcher's env whose node is behind a LyingNode, with a
// second dev chain for it to serve instead.
type guarded struct {
	*env
	liar  *testenv.LyingNode
	other *devchain.Chain
	addrs []string
}

// newGuarded starts a dev chain behind a lying proxy, another dev chain
// of otherID ahead of it, and a fetcher of cfg dialled to the proxy,
// with two subscribed addresses whose movements the chain has.
func newGuarded(t *testing.T, dsn string, otherID uint64, seed uint64, cfg fetch.Config) *guarded {
	t.Helper()
	ctx := context.Background()
	e := newEnv(t, dsn, cfg)
	g := &guarded{env: e, liar: testenv.NewLyingNode(t, e.dev.URL, seed)}
	// Five accounts: another genesis than the chain's four.
	g.other = devchaintest.Start(t, devchain.Config{ChainID: otherID, Accounts: 5})
	for range 20 {
		g.other.Commit()
	}
	g.liar.SetOther(g.other.URL)
	src, err := evm.Dial(ctx, g.liar.URL(), evm.SourceConfig{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	if e.cfg.Native.Symbol == "" {
		e.cfg.Native = query.NativeCoin{Symbol: "ETH", Decimals: 18}
	}
	e.f = e.fetcher(e.db, src, e.cfg)
	for _, a := range e.dev.Accounts[1:3] {
		e.subscribe(a)
		g.addrs = append(g.addrs, addr(a))
	}
	return g
}

// move mines a block moving wei to the subscribed addresses.
func (g *guarded) move() {
	g.t.Helper()
	ctx := context.Background()
	var hashes []string
	for i, a := range g.dev.Accounts[1:3] {
		hashes = append(hashes, g.must(g.dev.Transfer(ctx, 0, a, big.NewInt(int64(1000+i)))))
	}
	g.mine(hashes...)
}

// kept is what is stored of the chain: the statement rows of the
// subscribed addresses and the stored blocks' hashes.
type keptRows struct {
	rows   int
	hashes map[uint64]string
}

func (g *guarded) snapshot() keptRows {
	g.t.Helper()
	ctx := context.Background()
	h := keptRows{hashes: make(map[uint64]string)}
	for _, a := range g.addrs {
		h.rows += len(statementOf(g.t, g.db, g.account, a))
	}
	cp, ok, err := g.db.Checkpoint(ctx, chain)
	if err != nil {
		g.t.Fatal(err)
	}
	for n := uint64(1); ok && n <= cp.Number; n++ {
		b, err := g.db.StoredBlock(ctx, chain, n)
		if errors.Is(err, query.ErrNotFound) {
			continue
		}
		if err != nil {
			g.t.Fatal(err)
		}
		h.hashes[n] = b.Hash
	}
	return h
}

// kept fails the test when now lost any of before's rows or blocks, or
// holds a block that is not the dev chain's.
func (g *guarded) kept(before, now keptRows, when string) {
	g.t.Helper()
	if now.rows < before.rows {
		g.t.Errorf("%s: %d statement rows, %d before: history erased", when, now.rows, before.rows)
	}
	for n, h := range before.hashes {
		if now.hashes[n] != h {
			g.t.Errorf("%s: block %d is %q, was %s: history erased", when, n, now.hashes[n], h)
			break
		}
	}
	for n, h := range now.hashes {
		if real := strings.ToLower(g.dev.BlockHash(n).Hex()); h != real {
			g.t.Errorf("%s: stored block %d is %s, the chain's is %s: another chain's data", when, n, h, real)
			break
		}
	}
}

// TestNodeSwapKeepsHistory: behind the same URL, a node of another chain
// (another chain ID, or the same ID and another genesis, as every dev
// chain is 1337) deletes nothing: the fetcher refuses it, the error
// names it, and fetching goes on when the right node is back. It
// rewound to the other chain's fork point and fetched it as ETH.
func TestNodeSwapKeepsHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   uint64
		want string
	}{
		{"OtherChainID", 1338, "chain eip155:1338"},
		{"OtherGenesis", 1337, "another chain of chain ID eip155:1337"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ForEachDB(t, func(t *testing.T, dsn string) {
				ctx := context.Background()
				g := newGuarded(t, dsn, tc.id, testenv.Seed(t), fetch.Config{})
				for range 4 {
					g.move()
				}
				g.catchUp()
				before := g.snapshot()
				if before.rows == 0 {
					t.Fatal("no statement rows before the swap")
				}
				g.liar.Tell(testenv.LieOther)
				var err error
				for range 3 {
					if err = g.f.FetchOnce(ctx); err != nil {
						break
					}
				}
				if !errors.Is(err, fetch.ErrChainMismatch) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("step on the other chain: %v, want ErrChainMismatch naming %s", err, tc.want)
				}
				if h := g.f.Health(); h == nil || !strings.Contains(h.Error(), tc.want) {
					t.Errorf("Health() = %v, want it to name %s", h, tc.want)
				}
				g.kept(before, g.snapshot(), "on the other chain")
				g.liar.Tell(testenv.LieNone)
				g.move()
				g.catchUp()
				g.kept(before, g.snapshot(), "back on the chain")
				checkStatement(t, g.db, g.src, g.account, g.addrs)
			})
		})
	}
}

// TestDeepReorgStops: a reorg deeper than MaxReorgDepth deletes nothing
// and stops the chain (Health and ChainStop say why, every step until an
// order says so); `addrd chain resume` applies it, `addrd chain rewind`
// fetches again from the block given. It was applied, however deep.
func TestDeepReorgStops(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{MaxReorgDepth: 2})
		d := e.dev
		a := d.Accounts[1]
		e.subscribe(a)
		e.catchUp()
		for range 6 {
			e.mine(e.must(d.Transfer(ctx, 0, a, big.NewInt(7))))
			e.catchUp()
		}
		head, _ := d.Head()
		fork := head - 4
		rows := statementOf(t, e.db, e.account, addr(a))
		if err := d.Fork(d.BlockHash(fork)); err != nil {
			t.Fatal(err)
		}
		// Another sender's transfer first: the same transactions on the
		// same parent would make the same block again.
		e.must(d.Transfer(ctx, 2, a, big.NewInt(222)))
		for range 6 {
			d.Commit()
		}
		for i := range 3 {
			err := e.f.FetchOnce(ctx)
			if !errors.Is(err, query.ErrChainStopped) || !strings.Contains(err.Error(), "deeper than 2 blocks") {
				t.Fatalf("step %d after a reorg of 4 blocks: %v, want ErrChainStopped for a reorg deeper than 2\n%s", i, err, e.log)
			}
		}
		if got := statementOf(t, e.db, e.account, addr(a)); len(got) != len(rows) {
			t.Errorf("statement after the refused reorg: %d rows, %d before", len(got), len(rows))
		}
		s, err := e.db.ChainStop(ctx, chain)
		if err != nil || !s.Stopped() || !strings.Contains(s.Reason, "addrd chain resume") {
			t.Errorf("ChainStop = %+v, %v: want it stopped, saying how to resume", s, err)
		}
		if h := e.f.Health(); h == nil || !strings.Contains(h.Error(), "deeper than 2 blocks") {
			t.Errorf("Health() = %v, want the refused reorg", h)
		}

		t.Run("Resume", func(t *testing.T) {
			if err := e.db.ResumeChain(ctx, chain); err != nil {
				t.Fatal(err)
			}
			e.catchUp()
			if cp, _ := e.db.StoredBlock(ctx, chain, fork+1); cp.Hash != strings.ToLower(d.BlockHash(fork+1).Hex()) {
				t.Errorf("block %d after the resume is %s, want the new chain's", fork+1, cp.Hash)
			}
			checkStatement(t, e.db, e.src, e.account, []string{addr(a)})
			if s, _ := e.db.ChainStop(ctx, chain); s.Stopped() || s.Accept {
				t.Errorf("ChainStop after the resumed reorg = %+v, want neither stopped nor accepting", s)
			}
		})
		t.Run("Rewind", func(t *testing.T) {
			cp, _, _ := e.db.Checkpoint(ctx, chain)
			if err := e.db.RewindChain(ctx, chain, cp.Number-3); err != nil {
				t.Fatal(err)
			}
			e.fetch()
			if got, _, _ := e.db.Checkpoint(ctx, chain); got.Number != cp.Number {
				t.Errorf("checkpoint after the rewind and a step: %d, want %d again", got.Number, cp.Number)
			}
			checkStatement(t, e.db, e.src, e.account, []string{addr(a)})
			if s, _ := e.db.ChainStop(ctx, chain); s.RewindTo != -1 {
				t.Errorf("ChainStop after the rewind = %+v, want the order done", s)
			}
		})
	})
}
