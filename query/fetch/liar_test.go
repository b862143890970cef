package fetch_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/fetch"
)

// lieRounds is how many lies TestLyingNode tells on each database:
// WHARF_LIAR_ROUNDS (make soak sets more), default 7, one of each.
func lieRounds(t *testing.T) int {
	if s := os.Getenv("WHARF_LIAR_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WHARF_LIAR_ROUNDS=%q: want a number of rounds", s)
		}
		return n
	}
	return len(testenv.Lies)
}

// lieSays lists the lies that fail the fetcher, with what Health must
// say within lieWindow of each ("": anything); the others (slow answers
// within the timeout, a head that goes back) it may ride out.
var lieSays = map[testenv.Lie]string{
	testenv.LieOther:    "chain",
	testenv.LieHashes:   "",
	testenv.LieTruncate: "cut short",
	testenv.LieHang:     "",
	testenv.LieDown:     "HTTP 503",
}

// lieWindow is how long each lie lasts; a failing lie must show in
// Health within it, with the node asked at a backed-off rate.
const lieWindow = 2 * time.Second

// TestLyingNode is the lying-node generator: a fetcher runs against a
// dev chain behind a LyingNode that, round after round, tells a lie
// drawn from a seeded generator (another chain behind the same URL,
// wrong hashes, a head going back, truncated, slow and hung answers, 503)
// while the chain moves. Whatever the lie: no stored row or block is
// lost, no block of another chain is stored, a failing lie is degraded
// in Health within the window and saying what it is, the node is asked
// at a backed-off rate, and once the truth is back (and an operator
// resumed a chain the lie stopped) the fetcher catches up and the
// statement matches the node at every block. Longer under make soak
// (WHARF_LIAR_ROUNDS).
func TestLyingNode(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		rng := testenv.Rand(t, 34)
		otherID := []uint64{1337, 1338}[rng.IntN(2)]
		g := newGuarded(t, dsn, otherID, rng.Uint64(), fetch.Config{
			Interval: 50 * time.Millisecond, MaxBackoff: 250 * time.Millisecond, StallAfter: time.Second,
			IdentityInterval: 200 * time.Millisecond, MaxReorgDepth: 8,
		})
		g.move()
		g.catchUp()
		stop := g.start()
		defer stop()
		rounds := lieRounds(t)
		order := rng.Perm(len(testenv.Lies))
		for round := range rounds {
			lie := testenv.Lies[order[round%len(order)]]
			if round >= len(order) {
				lie = testenv.Lies[rng.IntN(len(testenv.Lies))]
			}
			g.move()
			g.settled(t, "before "+lie.String())
			before := g.snapshot()
			asked := g.liar.Requests()
			g.liar.Tell(lie)
			said := ""
			deadline := time.Now().Add(lieWindow)
			for moved := 0; time.Now().Before(deadline); moved++ {
				if moved%10 == 0 {
					g.move()
				}
				if err := g.f.Health(); err != nil && said == "" {
					said = err.Error()
				}
				g.kept(before, g.snapshot(), "under "+lie.String())
				time.Sleep(50 * time.Millisecond)
			}
			asked = g.liar.Requests() - asked
			g.liar.Tell(testenv.LieNone)
			t.Logf("round %d: %s: %d requests; said %q", round, lie, asked, said)
			if want, failing := lieSays[lie]; failing {
				switch {
				case said == "":
					t.Errorf("round %d: %s: Health ok for the whole %s", round, lie, lieWindow)
				case want != "" && !strings.Contains(said, want):
					t.Errorf("round %d: %s: Health said %q, want it to say %q", round, lie, said, want)
				case strings.Contains(said, "node unreachable") && lie != testenv.LieHang:
					t.Errorf("round %d: %s: Health said %q: the node answered", round, lie, said)
				}
				// A failing step costs a few calls, and the steps back off to
				// MaxBackoff: some 15 steps in the window, not hundreds.
				if most := int64(lieWindow/(250*time.Millisecond)+10) * 12; asked > most {
					t.Errorf("round %d: %s: %d requests in %s, want at most %d (back-off)", round, lie, asked, lieWindow, most)
				}
			}
			if s, err := g.db.ChainStop(ctx, chain); err != nil {
				t.Fatal(err)
			} else if s.Stopped() {
				t.Logf("round %d: %s stopped the chain: %s", round, lie, s.Reason)
				if err := g.db.ResumeChain(ctx, chain); err != nil {
					t.Fatal(err)
				}
			}
			g.kept(before, g.snapshot(), "after "+lie.String())
		}
		g.move()
		g.settled(t, "at the end")
		stop()
		g.kept(g.snapshot(), g.snapshot(), "at the end")
		checkStatement(t, g.db, g.src, g.account, g.addrs)
	})
}

// settled waits until the fetcher, running, has stored the chain's head
// and is healthy.
func (g *guarded) settled(t *testing.T, when string) {
	t.Helper()
	head, _ := g.dev.Head()
	g.waitStored(head, time.After(30*time.Second), when)
	deadline := time.Now().Add(10 * time.Second)
	for g.f.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s: Health() = %v 10 s after the head was stored", when, g.f.Health())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
