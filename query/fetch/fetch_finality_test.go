package fetch_test

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/internal/testenv/opgeth"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
)

// TestFinalityOPGeth: on a real op-geth whose sequencer calls the block
// 2 under the head safe and the block 4 under it finalized
// (engine_forkchoiceUpdated), the stored marks are the node's tags as
// the blocks are stored, and the feed's finalized events make every row
// at or under the finalized mark final exactly once; the books asked
// with end_block=finalized (and safe) end at those marks.
func TestFinalityOPGeth(t *testing.T) {
	n := opgeth.New(t, opgeth.Config{SafeLag: 2, FinalLag: 4})
	ctx := context.Background()
	src, db, key := realNode(t, n.URL)
	f := realNodeFetcher(t, db, src)
	bob := common.HexToAddress("0x0000000000000000000000000000000000b0b0b0")
	watched := []string{strings.ToLower(n.Accounts[0].Hex()), strings.ToLower(bob.Hex())}
	for _, a := range watched {
		if _, err := db.Subscribe(ctx, key.AccountID, chain, a); err != nil {
			t.Fatal(err)
		}
	}
	catchUpNode(t, f, db, src)
	for i := range 12 {
		if _, err := n.Mine(ctx, opgeth.Block{Txs: []opgeth.Tx{{From: 0, To: &bob, Value: big.NewInt(int64(1000 + i))}}}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			catchUpNode(t, f, db, src)
			checkFinality(t, db, src, key.AccountID, watched)
		}
	}
	if fin, _ := db.Finality(ctx, chain); fin.Finalized < 8 {
		t.Fatalf("finality %+v after 12 blocks, want the block 8 finalized", fin)
	}
	checkEndAtFinality(t, db, watched)
}

// TestFinalityGeth: as TestFinalityOPGeth on geth --dev, whose simulated
// beacon finalizes (and calls safe) the last block of each epoch of 32
// before the head's.
func TestFinalityGeth(t *testing.T) {
	g := testenv.NewGeth(t)
	ctx := context.Background()
	src, db, key := realNode(t, g.URL)
	f := realNodeFetcher(t, db, src)
	bob := "0x0000000000000000000000000000000000b0b0b0"
	watched := []string{g.Account, bob}
	for _, a := range watched {
		if _, err := db.Subscribe(ctx, key.AccountID, chain, a); err != nil {
			t.Fatal(err)
		}
	}
	catchUpNode(t, f, db, src)
	for i := range 70 { // a block each: past the second epoch
		g.Transact(t, bob, big.NewInt(int64(1000+i)), nil, 21_000)
		if i%10 == 9 {
			catchUpNode(t, f, db, src)
			checkFinality(t, db, src, key.AccountID, watched)
		}
	}
	if fin, _ := db.Finality(ctx, chain); fin.Finalized < 64 {
		t.Fatalf("finality %+v after 70 blocks, want the block 64 finalized", fin)
	}
	checkEndAtFinality(t, db, watched)
}

// checkFinality checks, once the fetcher caught up with the node, that
// the stored marks are the node's safe and finalized blocks (capped at
// the checkpoint), and that the account's feed makes each of the rows of
// watched at or under the finalized mark final once: stored final, or
// counted by one finalized event.
func checkFinality(t *testing.T, db *store.DB, src *evm.Source, account int64, watched []string) {
	t.Helper()
	ctx := context.Background()
	safe, err := src.Safe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, err := src.Finalized(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp, _, _ := db.Checkpoint(ctx, chain)
	fin, err := db.Finality(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	want := query.Finality{Safe: min(safe, cp.Number), Finalized: min(final, cp.Number), Source: query.FinalityByNode}
	if fin != want {
		t.Fatalf("finality %+v at checkpoint %d, want %+v (the node's safe %d, finalized %d)", fin, cp.Number, want, safe, final)
	}
	counted := map[string]int{}
	for after := int64(-1); ; {
		p, err := db.AccountEvents(ctx, account, after, query.EventFilter{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range p.Events {
			var d struct {
				Address        string
				BlockNumber    uint64 `json:"block_number"`
				Finality       string
				BalanceChanges int `json:"balance_changes"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
				t.Fatal(err)
			}
			switch {
			case ev.Kind == query.EventFinalized:
				counted[d.Address] += d.BalanceChanges
			case ev.Kind == query.EventBalanceChange && d.Finality == query.FinalityFinalized:
				counted[d.Address]++
			}
		}
		if len(p.Events) == 0 && p.Through == after {
			break
		}
		after = p.Through
	}
	for _, a := range watched {
		changes, err := db.AccountBalanceChanges(ctx, account, chain, a, nil, 10000)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, c := range changes {
			if fin.Of(c.Block) == query.FinalityFinalized {
				rows++
			}
		}
		if counted[a] != rows {
			t.Fatalf("%s: %d rows at or under the finalized block %d, the feed made %d final", a, rows, fin.Finalized, counted[a])
		}
	}
}

// TestFinalityAnvil: as TestFinalityOPGeth on anvil, which calls the
// block 32 under the head safe and the block 64 under it finalized
// (two epochs of 32 slots): transfers, then empty blocks (anvil_mine)
// past both.
func TestFinalityAnvil(t *testing.T) {
	a := testenv.NewAnvil(t)
	ctx := context.Background()
	src, db, key := realNode(t, a.URL)
	f := realNodeFetcher(t, db, src)
	bob := "0x0000000000000000000000000000000000b0b0b0"
	watched := []string{a.Accounts[0], bob}
	for _, w := range watched {
		if _, err := db.Subscribe(ctx, key.AccountID, chain, w); err != nil {
			t.Fatal(err)
		}
	}
	catchUpNode(t, f, db, src)
	for round := range 3 {
		for i := range 5 {
			if _, err := a.Send(ctx, map[string]any{"from": a.Accounts[0], "to": bob, "value": hexutil.EncodeUint64(uint64(1000 + i))}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Call(ctx, nil, "anvil_mine", hexutil.EncodeUint64(30)); err != nil {
			t.Fatal(err)
		}
		catchUpNode(t, f, db, src)
		checkFinality(t, db, src, key.AccountID, watched)
		fin, _ := db.Finality(ctx, chain)
		t.Logf("round %d: finality %+v", round, fin)
	}
	if fin, _ := db.Finality(ctx, chain); fin.Finalized < 30 || fin.Safe <= fin.Finalized {
		t.Fatalf("finality %+v after 105 blocks, want the block 30 finalized and a later one safe", fin)
	}
	checkEndAtFinality(t, db, watched)
}
