package evm_test

import (
	"context"
	"errors"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

// scanned returns the blocks from to to whose Activity lists something
// of address (a transaction or a movement), read block by block: what
// History must not miss.
func scanned(t *testing.T, r *evm.Reader, address string, from, to uint64) []uint64 {
	t.Helper()
	acts, err := r.Activity(context.Background(), chain.Query{From: from, To: to, Tracked: map[string]bool{address: true}, Pass: "scan"})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(acts)) != to-from+1 {
		t.Fatalf("Activity(%d, %d) = %d blocks", from, to, len(acts))
	}
	var out []uint64
	for _, a := range acts {
		if len(a.Txs) > 0 || len(a.Moves) > 0 {
			out = append(out, a.Block.Number)
		}
	}
	return out
}

// missing returns the blocks of want that got lacks.
func missing(got, want []uint64) []uint64 {
	var out []uint64
	for _, b := range want {
		if !slices.Contains(got, b) {
			out = append(out, b)
		}
	}
	return out
}

// TestReaderHistoryDevChain: on the archive dev chain (geth, no
// trace_filter), History finds every block where a sender, an address
// that only receives (natively, by a token, through a contract, by a
// withdrawal) and the contract passing a payment on took part, as a
// scan of every block does, at a fraction of its reads; the contract's
// pass-through only with ExhaustHistory. A node without old state
// answers chain.ErrNotImplemented.
func TestReaderHistoryDevChain(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{Archive: true})
	src := devchaintest.Dial(t, dev)
	x := common.HexToAddress("0x00000000000000000000000000000000000a11ce")
	sender := dev.Accounts[3]
	steps := []func() (common.Hash, error){
		func() (common.Hash, error) { return dev.Transfer(ctx, 0, x, big.NewInt(1000)) },
		func() (common.Hash, error) { return dev.TransferToken(ctx, 0, x, big.NewInt(7)) },
		func() (common.Hash, error) { return dev.Transfer(ctx, 3, dev.Accounts[1], big.NewInt(5)) },
		func() (common.Hash, error) { return dev.Forward(ctx, 0, []common.Address{x}, big.NewInt(300)) },
		func() (common.Hash, error) { return common.Hash{}, dev.Withdraw(ctx, x, 2) },
		func() (common.Hash, error) {
			return dev.Forward(ctx, 3, []common.Address{dev.Accounts[2]}, big.NewInt(40))
		},
	}
	start, _ := dev.Head()
	for _, step := range steps {
		if _, err := dev.CommitEmpty(40); err != nil {
			t.Fatal(err)
		}
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
		dev.Commit()
	}
	if _, err := dev.CommitEmpty(40); err != nil {
		t.Fatal(err)
	}
	head, _ := dev.Head()
	from := start + 1
	r := evm.NewReader(src)
	api, err := r.ProbeInternals(ctx)
	if err != nil || api == "" {
		t.Fatalf("the dev chain's trace API: %q, %v", api, err)
	}
	r.UseInternals(api)
	for _, c := range []struct {
		name    string
		address common.Address
		min     int // blocks the scan must find: the test tests something
	}{
		{"receiver", x, 4},
		{"sender", sender, 2},
		{"contract", dev.Forwarder, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := strings.ToLower(c.address.Hex())
			want := scanned(t, r, a, from, head)
			if len(want) < c.min {
				t.Fatalf("the scan finds %v for %s: want %d blocks at least", want, c.name, c.min)
			}
			got, err := r.History(ctx, a, from, head)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSorted(got) {
				t.Errorf("History = %v, not ascending", got)
			}
			lost := missing(got, want)
			if c.name == "contract" {
				// A payment passing through the forwarder moves nothing of
				// it at a block's end: found by reading every block only.
				if len(lost) == 0 {
					t.Errorf("History finds the forwarder's pass-through payments %v without reading every block", want)
				}
				r.ExhaustHistory(true)
				defer r.ExhaustHistory(false)
				if got, err = r.History(ctx, a, from, head); err != nil {
					t.Fatal(err)
				}
				lost = missing(got, want)
			}
			if len(lost) > 0 {
				t.Errorf("History = %v misses %v of the scan's %v", got, lost, want)
			}
			if len(got) > len(want)+2 {
				t.Errorf("History = %v, the scan %v: more than it needs", got, want)
			}
		})
	}

	// Two at once share the search, and find both.
	both, err := r.Histories(ctx, []string{strings.ToLower(x.Hex()), strings.ToLower(sender.Hex())}, from, head)
	if err != nil {
		t.Fatal(err)
	}
	if lost := missing(both, append(scanned(t, r, strings.ToLower(x.Hex()), from, head), scanned(t, r, strings.ToLower(sender.Hex()), from, head)...)); len(lost) > 0 {
		t.Errorf("Histories = %v misses %v", both, lost)
	}

	pruned := devchaintest.Start(t, devchain.Config{})
	if _, err := pruned.CommitEmpty(200); err != nil {
		t.Fatal(err)
	}
	_, err = evm.NewReader(devchaintest.Dial(t, pruned)).History(ctx, strings.ToLower(x.Hex()), 1, 100)
	if !errors.Is(err, chain.ErrNotImplemented) || !errors.Is(err, query.ErrNoState) {
		t.Errorf("History on a node without old state: %v, want ErrNotImplemented and ErrNoState", err)
	}
}

// forwarderCode is the init code of a contract that sends the value it
// is called with to the address in its first calldata word: a payment
// that passes through it.
var forwarderCode = hexutil.MustDecode("0x600f600c600039600f6000f3" + "600060006000600034600035" + "5af100")

// TestReaderHistoryAnvil: on anvil, which answers trace_filter, History
// finds the payments that pass through a contract, and the calls to an
// address that only receives that move nothing, without reading every
// block.
func TestReaderHistoryAnvil(t *testing.T) {
	ctx := context.Background()
	a := testenv.NewAnvil(t)
	payer := a.Accounts[0]
	x := "0x00000000000000000000000000000000000a11ce"
	receipt, err := a.Send(ctx, map[string]any{"from": payer, "data": hexutil.Encode(forwarderCode)})
	if err != nil {
		t.Fatal(err)
	}
	forwarder, _ := receipt["contractAddress"].(string)
	if forwarder == "" {
		t.Fatalf("no contract created: %v", receipt)
	}
	forwarder = strings.ToLower(forwarder)
	if err := a.Call(ctx, nil, "anvil_mine", "0x20"); err != nil {
		t.Fatal(err)
	}
	word := hexutil.Encode(common.LeftPadBytes(common.HexToAddress(x).Bytes(), 32))
	blocks := make(map[string][]uint64)
	for _, tx := range []struct {
		to, value string
		parties   []string
	}{
		{forwarder, "0x1000", []string{forwarder, x}}, // passes 4096 wei on to x
		{forwarder, "0x0", []string{forwarder, x}},    // moves nothing
		{x, "0x0", []string{x}},                       // a call to x without value
	} {
		r, err := a.Send(ctx, map[string]any{"from": payer, "to": tx.to, "value": tx.value, "data": word, "gas": "0x30000"})
		if err != nil {
			t.Fatal(err)
		}
		n, err := hexutil.DecodeUint64(r["blockNumber"].(string))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tx.parties {
			blocks[p] = append(blocks[p], n)
		}
		if err := a.Call(ctx, nil, "anvil_mine", "0x20"); err != nil {
			t.Fatal(err)
		}
	}
	src, err := evm.Dial(ctx, a.URL, evm.SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	head, err := src.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := evm.NewReader(src)
	for _, p := range slices.Sorted(maps.Keys(blocks)) {
		got, err := r.History(ctx, p, 1, head)
		if err != nil {
			t.Fatal(err)
		}
		if lost := missing(got, blocks[p]); len(lost) > 0 {
			t.Errorf("History(%s) = %v misses %v of %v", p, got, lost, blocks[p])
		}
	}
}
