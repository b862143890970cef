package evm_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

// movement is a change of an address's state in a block: its balance by
// wei, its nonce by sent.
type movement struct {
	block uint64
	wei   int64
	sent  uint64
}

// fakeStates is a query.StateSource over fixed movements; it counts the
// balances and nonces read.
type fakeStates struct {
	moves map[string][]movement

	mu             sync.Mutex
	balances, nons int
}

func (f *fakeStates) States(_ context.Context, block uint64, addresses []string, nonces bool) ([]query.AccountState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]query.AccountState, len(addresses))
	for i, a := range addresses {
		var wei int64
		var nonce uint64
		for _, m := range f.moves[a] {
			if m.block <= block {
				wei += m.wei
				nonce += m.sent
			}
		}
		out[i].Balance = query.AmountOf(wei)
		f.balances++
		if nonces {
			out[i].Nonce = nonce
			f.nons++
		}
	}
	return out, nil
}

// batchedStates is fakeStates that batches (query.StateBatcher).
type batchedStates struct {
	*fakeStates
	rounds int
}

func (b *batchedStates) StatesAt(ctx context.Context, reads []query.StateRead) ([][]query.AccountState, error) {
	b.rounds++
	out := make([][]query.AccountState, len(reads))
	for i, r := range reads {
		out[i], _ = b.States(ctx, r.Block, r.Addresses, r.Nonces)
	}
	return out, nil
}

// changed is what the bisection must find: the blocks from to to where
// some address's balance or nonce changed.
func (f *fakeStates) changed(from, to uint64) []uint64 {
	net := make(map[string]map[uint64]movement)
	for a, ms := range f.moves {
		net[a] = make(map[uint64]movement)
		for _, m := range ms {
			n := net[a][m.block]
			n.wei += m.wei
			n.sent += m.sent
			net[a][m.block] = n
		}
	}
	var out []uint64
	for _, byBlock := range net {
		for b, m := range byBlock {
			if b >= from && b <= to && (m.wei != 0 || m.sent != 0) && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestBisectFindsEveryChange(t *testing.T) {
	const a, b, c = "0xa", "0xb", "0xc"
	cases := []struct {
		name     string
		moves    map[string][]movement
		from, to uint64
	}{
		{"receives and sends", map[string][]movement{
			a: {{0, 1000, 0}, {17, 50, 0}, {300, -70, 1}, {301, 5, 0}, {999, -1, 1}},
		}, 0, 1000},
		{"a send made up in its block: same balance, nonce moved", map[string][]movement{
			a: {{0, 1000, 0}, {40, -100, 1}, {40, 100, 0}, {700, 3, 0}},
		}, 0, 1000},
		{"a send made up later: same balance at the bounds, nonce moved", map[string][]movement{
			a: {{0, 1000, 0}, {10, -100, 1}, {20, 100, 0}},
		}, 1, 63},
		{"sends made up around others", map[string][]movement{
			a: {{0, 1000, 0}, {100, 7, 0}, {130, -40, 1}, {131, 40, 0}, {500, -9, 1}, {520, 9, 0}, {521, 1, 0}},
		}, 0, 4095},
		{"a receiver only", map[string][]movement{
			a: {{5, 1, 0}, {6, 1, 0}, {4000, 1, 0}},
		}, 0, 5000},
		{"part of the range", map[string][]movement{
			a: {{0, 1000, 0}, {99, -5, 1}, {100, -5, 1}, {150, -5, 1}, {150, 5, 0}, {200, -5, 1}, {201, 1, 0}},
		}, 100, 200},
		{"several addresses", map[string][]movement{
			a: {{0, 1000, 0}, {12, -1, 1}, {12, 1, 0}, {800, 5, 0}},
			b: {{3, 10, 0}, {800, 5, 0}, {801, -2, 1}},
			c: {{0, 7, 0}, {64, -3, 1}, {65, 3, 0}},
		}, 1, 1023},
		{"nothing changed", map[string][]movement{
			a: {{0, 1000, 0}},
			b: {{2000, 1, 1}},
		}, 1, 1999},
	}
	for _, tc := range cases {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batched=%v", tc.name, batched), func(t *testing.T) {
				fake := &fakeStates{moves: tc.moves}
				var ss query.StateSource = fake
				if batched {
					ss = &batchedStates{fakeStates: fake}
				}
				got, err := evm.ChangedBlocks(context.Background(), ss, tc.from, tc.to, slices.Sorted(maps.Keys(tc.moves)))
				if err != nil {
					t.Fatal(err)
				}
				if want := fake.changed(tc.from, tc.to); !slices.Equal(slices.Sorted(maps.Keys(got)), want) {
					t.Errorf("found %v, want %v", slices.Sorted(maps.Keys(got)), want)
				}
			})
		}
	}
}

// TestBisectRandom: random histories in which, as on a chain, a balance
// falls only with a send (the nonce moves), sends sometimes made up
// exactly by receipts in the same or a later block.
func TestBisectRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	addresses := []string{"0xa", "0xb", "0xc"}
	for i := range 200 {
		moves := make(map[string][]movement)
		to := uint64(1 + rng.IntN(5000))
		for _, a := range addresses {
			for range rng.IntN(12) {
				block := uint64(rng.IntN(int(to) + 1))
				wei := int64(1 + rng.IntN(20))
				switch rng.IntN(3) {
				case 0:
					moves[a] = append(moves[a], movement{block, wei, 0})
				case 1:
					moves[a] = append(moves[a], movement{block, -wei, 1})
				default: // a send made up, here or later
					later := min(to, block+uint64(rng.IntN(3)*rng.IntN(100)))
					moves[a] = append(moves[a], movement{block, -wei, 1}, movement{later, wei, 0})
				}
			}
		}
		from := uint64(rng.IntN(int(to) + 1))
		fake := &fakeStates{moves: moves}
		got, err := evm.ChangedBlocks(context.Background(), &batchedStates{fakeStates: fake}, from, to, addresses)
		if err != nil {
			t.Fatal(err)
		}
		want := fake.changed(from, to)
		if !slices.Equal(slices.Sorted(maps.Keys(got)), want) {
			t.Fatalf("history %d (%d-%d, %v): found %v, want %v", i, from, to, moves, slices.Sorted(maps.Keys(got)), want)
		}
		// Blocks known beforehand (some of the changes, some blocks
		// without any, some outside the range) cut the range first: the
		// same changes are found.
		var known []uint64
		for _, b := range want {
			if rng.IntN(2) == 0 {
				known = append(known, b)
			}
		}
		for range rng.IntN(4) {
			known = append(known, uint64(rng.IntN(int(to)+2)))
		}
		got, err = evm.ChangedBlocksKnown(context.Background(), &batchedStates{fakeStates: fake}, from, to, addresses, known)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(got)), want) {
			t.Fatalf("history %d (%d-%d, %v), known %v: found %v, want %v", i, from, to, moves, known, slices.Sorted(maps.Keys(got)), want)
		}
	}
}

// TestBisectCost: the reads the search makes for k changes spread over a
// range, and the round trips of a batching source.
func TestBisectCost(t *testing.T) {
	const blocks, k = 100_000, 200
	moves := map[string][]movement{"0xa": {{0, 1_000_000, 0}}}
	for i := range k {
		m := movement{uint64(i*blocks/k + blocks/k/2), 100, 0}
		if i%2 == 1 {
			m.wei, m.sent = -150, 1
		}
		moves["0xa"] = append(moves["0xa"], m)
	}
	receiver := map[string][]movement{"0xa": slices.DeleteFunc(slices.Clone(moves["0xa"]), func(m movement) bool { return m.sent > 0 })}
	for _, tc := range []struct {
		name  string
		moves map[string][]movement
		// at most, per change: balances, nonces; round trips in all
		balances, nonces float64
		rounds           int
	}{
		{"sends and receives", moves, 12, 2.1, 20},
		{"receives only", receiver, 12, 0.1, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := &batchedStates{fakeStates: &fakeStates{moves: tc.moves}}
			got, err := evm.ChangedBlocks(context.Background(), ss, 1, blocks, []string{"0xa"})
			if err != nil {
				t.Fatal(err)
			}
			n := float64(len(got))
			t.Logf("%d changes over %d blocks: %d balances (%.1f a change), %d nonces, %d round trips", len(got), blocks, ss.balances, float64(ss.balances)/n, ss.nons, ss.rounds)
			if float64(ss.balances) > tc.balances*n || float64(ss.nons) > tc.nonces*n+2 || ss.rounds > tc.rounds {
				t.Errorf("%d balances, %d nonces in %d round trips for %v changes: want at most %.0f, %.0f, %d", ss.balances, ss.nons, ss.rounds, n, tc.balances*n, tc.nonces*n+2, tc.rounds)
			}
		})
	}
}
