package fetch_test

import (
	"context"
	"errors"
	"log/slog"
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

// TestLyingNodeGeth is TestLyingNode in front of a real geth --dev node,
// the other chain a dev chain of the same chain ID: each failing lie, in
// an order of the seed's, leaves every stored block geth's and every
// statement row in place, shows in Health within the window, and the
// fetcher catches up once the truth is back.
func TestLyingNodeGeth(t *testing.T) {
	ctx := context.Background()
	rng := testenv.Rand(t, 35)
	g := testenv.NewGeth(t)
	other := devchaintest.Start(t, devchain.Config{})
	for range 5 {
		other.Commit()
	}
	liar := testenv.NewLyingNode(t, g.URL, rng.Uint64())
	liar.SetOther(other.URL)
	truth, err := evm.Dial(ctx, g.URL, evm.SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(truth.Close)
	src, err := evm.Dial(ctx, liar.URL(), evm.SourceConfig{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	db, key := storeWithKey(t)
	to := "0x0000000000000000000000000000000000b0b0b0"
	for _, a := range []string{g.Account, to} {
		if _, err := db.Subscribe(ctx, key.AccountID, chain, a); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Logger: slog.New(slog.DiscardHandler),
		Interval: 50 * time.Millisecond, MaxBackoff: 250 * time.Millisecond, StallAfter: time.Second,
		IdentityInterval: 200 * time.Millisecond, MaxReorgDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	move := func() { g.Transact(t, to, big.NewInt(1000+rng.Int64N(1000)), nil, 21_000) }
	rows := func() int {
		n := 0
		for _, a := range []string{g.Account, to} {
			n += len(statementOf(t, db, key.AccountID, a))
		}
		return n
	}
	// geths checks that every stored block is geth's.
	geths := func(when string) {
		t.Helper()
		cp, ok, err := db.Checkpoint(ctx, chain)
		if err != nil || !ok {
			t.Fatalf("%s: checkpoint %v %v", when, ok, err)
		}
		for n := cp.Number; n > 0 && n+16 > cp.Number; n-- {
			b, err := db.StoredBlock(ctx, chain, n)
			if errors.Is(err, query.ErrNotFound) {
				break
			}
			real, err := truth.Blocks(ctx, n, n)
			if err != nil || len(real) != 1 {
				t.Fatalf("%s: geth's block %d: %v", when, n, err)
			}
			if b.Hash != real[0].Hash {
				t.Fatalf("%s: stored block %d is %s, geth's is %s: another chain's data", when, n, b.Hash, real[0].Hash)
			}
		}
	}
	settled := func(when string) {
		t.Helper()
		head, err := truth.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			cp, _, _ := db.Checkpoint(ctx, chain)
			if cp.Number >= head && f.Health() == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: stored %d of %d, Health %v, 30 s on", when, cp.Number, head, f.Health())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	move()
	settled("at the start")
	for _, i := range rng.Perm(len(testenv.Lies)) {
		lie := testenv.Lies[i]
		want, failing := lieSays[lie]
		if !failing {
			continue
		}
		move()
		settled("before " + lie.String())
		before := rows()
		liar.Tell(lie)
		move() // a block for the lie to be told about
		said := ""
		for end := time.Now().Add(lieWindow); time.Now().Before(end); {
			if err := f.Health(); err != nil && said == "" {
				said = err.Error()
			}
			time.Sleep(50 * time.Millisecond)
		}
		move()
		liar.Tell(testenv.LieNone)
		t.Logf("%s: said %q", lie, said)
		if said == "" || !strings.Contains(said, want) {
			t.Errorf("%s: Health said %q within %s, want it degraded saying %q", lie, said, lieWindow, want)
		}
		if s, err := db.ChainStop(ctx, chain); err == nil && s.Stopped() {
			if err := db.ResumeChain(ctx, chain); err != nil {
				t.Fatal(err)
			}
		}
		settled("after " + lie.String())
		if now := rows(); now < before {
			t.Errorf("%s: %d statement rows, %d before: history erased", lie, now, before)
		}
		geths("after " + lie.String())
	}
}
