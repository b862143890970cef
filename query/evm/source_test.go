package evm_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

func lower(a common.Address) string { return strings.ToLower(a.Hex()) }

func TestDevStarts(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{})
	src := devchaintest.Dial(t, dev)
	head, err := src.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Block 1 deploys the token, block 2 shares it out.
	if head != 2 {
		t.Errorf("head = %d, want 2", head)
	}
	if len(dev.Accounts) != 4 {
		t.Errorf("%d accounts, want 4", len(dev.Accounts))
	}
	// Deterministic accounts: the same on every run.
	again := devchaintest.Start(t, devchain.Config{})
	if again.Accounts[0] != dev.Accounts[0] || again.Token != dev.Token {
		t.Errorf("accounts differ between runs: %s %s vs %s %s", dev.Accounts[0], dev.Token, again.Accounts[0], again.Token)
	}
	bals, err := src.Balances(ctx, head, []query.BalanceQuery{
		{Address: lower(dev.Accounts[1])},
		{Address: lower(dev.Accounts[1]), Contract: lower(dev.Token)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bals) != 2 {
		t.Fatalf("got %d balances, want 2: %+v", len(bals), bals)
	}
	if got, want := bals[0].Amount, query.MustParseAmount("1000000000000000000000000"); got != want {
		t.Errorf("native = %s, want %s", got, want)
	}
	if got, want := bals[1], (query.Balance{
		Address: lower(dev.Accounts[1]), Asset: query.AssetERC20, Contract: lower(dev.Token),
		Symbol: "WDT", Name: "Wharf Demo Token", Decimals: 18, Amount: query.MustParseAmount("1000000000000000000000000"), Block: head,
	}); got != want {
		t.Errorf("token balance = %+v, want %+v", got, want)
	}
}

func TestSourceReadsABlock(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{})
	src := devchaintest.Dial(t, dev)
	a, b := dev.Accounts[0], dev.Accounts[1]
	native, err := dev.Transfer(ctx, 0, b, big.NewInt(12345))
	if err != nil {
		t.Fatal(err)
	}
	token, err := dev.TransferToken(ctx, 1, a, big.NewInt(777))
	if err != nil {
		t.Fatal(err)
	}
	failed, err := dev.FailingTransfer(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	hash := dev.Commit()
	n, _ := dev.Head()

	blocks, err := src.Blocks(ctx, n, n+5)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 {
		t.Fatalf("Blocks(%d, %d) = %d blocks, want 1 (the node has no more)", n, n+5, len(blocks))
	}
	blk := blocks[0]
	if blk.Hash != hash.Hex() || blk.Number != n || blk.ParentHash != dev.BlockHash(n-1).Hex() {
		t.Errorf("block = %+v, want number %d hash %s", blk.Block, n, hash.Hex())
	}
	if len(blk.Txs) != 3 {
		t.Fatalf("%d txs, want 3", len(blk.Txs))
	}
	tx := blk.Txs[0]
	if tx.Hash != native.Hex() || tx.From != lower(a) || tx.To != lower(b) || tx.Value != query.AmountOf(12345) {
		t.Errorf("native tx = %+v", tx)
	}

	transfers, err := src.Transfers(ctx, n, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(transfers) != 1 {
		t.Fatalf("%d transfers, want 1 (the failed one emits none): %+v", len(transfers), transfers)
	}
	if got := transfers[0]; got.TxHash != token.Hex() || got.From != lower(b) || got.To != lower(a) ||
		got.Amount != query.AmountOf(777) || got.Contract != lower(dev.Token) || got.BlockHash != hash.Hex() {
		t.Errorf("transfer = %+v", got)
	}
	for _, tc := range []struct {
		name      string
		addresses []string
		want      int
	}{
		{"From", []string{lower(b)}, 1},
		{"To", []string{lower(a)}, 1},
		{"Neither", []string{lower(dev.Accounts[3])}, 0},
		{"Empty", []string{}, 0},
	} {
		t.Run("Transfers"+tc.name, func(t *testing.T) {
			got, err := src.Transfers(ctx, 0, n, tc.addresses)
			if err != nil {
				t.Fatal(err)
			}
			var inBlock int
			for _, tt := range got {
				if tt.BlockNumber == n {
					inBlock++
				}
			}
			if inBlock != tc.want {
				t.Errorf("%d transfers in block %d, want %d", inBlock, n, tc.want)
			}
		})
	}

	t.Run("BlockReceipts", func(t *testing.T) {
		rs, logs, err := src.BlockReceipts(ctx, blk.Block)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 3 || rs[0].TxHash != native.Hex() || rs[2].Status != query.StatusFailed {
			t.Errorf("receipts = %+v", rs)
		}
		if len(logs) != 1 || logs[0] != transfers[0] {
			t.Errorf("transfer logs = %+v, want %+v", logs, transfers)
		}
	})

	hashes := []string{native.Hex(), token.Hex(), failed.Hex()}
	for _, tc := range []struct {
		name string
		cfg  evm.SourceConfig
	}{
		{"OneByOne", evm.SourceConfig{BlockReceiptsFrom: 100}},
		{"WholeBlock", evm.SourceConfig{BlockReceiptsFrom: 1}},
	} {
		t.Run("Receipts"+tc.name, func(t *testing.T) {
			s, err := evm.Dial(ctx, dev.URL, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rs, err := s.Receipts(ctx, blk.Block, hashes)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{query.StatusSuccess, query.StatusSuccess, query.StatusFailed}
			for i, r := range rs {
				if r.TxHash != hashes[i] || r.Status != want[i] {
					t.Errorf("receipt %d = %+v, want status %s", i, r, want[i])
				}
				if r.Fee.Sign() <= 0 {
					t.Errorf("receipt %d fee = %s", i, r.Fee)
				}
			}
			stale := blk.Block
			stale.Hash = common.Hash{1}.Hex()
			if _, err := s.Receipts(ctx, stale, hashes[:1]); !errors.Is(err, query.ErrNotFound) {
				t.Errorf("receipt from a block no longer canonical: err = %v, want ErrNotFound", err)
			}
		})
	}

	// Balances at an older block are what they were then.
	before, err := src.Balances(ctx, n-1, []query.BalanceQuery{{Address: lower(b)}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := src.Balances(ctx, n, []query.BalanceQuery{{Address: lower(b)}})
	if err != nil {
		t.Fatal(err)
	}
	if before[0].Amount == after[0].Amount || before[0].Block != n-1 || after[0].Block != n {
		t.Errorf("balance of %s at %d: %+v, at %d: %+v; want them to differ", b, n-1, before[0], n, after[0])
	}
}

func TestSourceNodeGone(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{})
	src := devchaintest.Dial(t, dev)
	if err := dev.StopHTTP(); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Head", func() error { _, err := src.Head(ctx); return err }},
		{"Blocks", func() error { _, err := src.Blocks(ctx, 1, 2); return err }},
		{"Transfers", func() error { _, err := src.Transfers(ctx, 1, 2, nil); return err }},
		{"Balances", func() error {
			_, err := src.Balances(ctx, 1, []query.BalanceQuery{{Address: lower(dev.Accounts[0])}})
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, query.ErrUnavailable) {
				t.Errorf("err = %v, want ErrUnavailable", err)
			}
		})
	}
	if err := dev.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Head(ctx); err != nil {
		t.Errorf("after StartHTTP: %v", err)
	}
}

func TestDevStep(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{})
	src := devchaintest.Dial(t, dev)
	for range 10 {
		if _, err := dev.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := dev.Head()
	blocks, err := src.Blocks(ctx, 3, head)
	if err != nil {
		t.Fatal(err)
	}
	var txs int
	var hashes []string
	var last query.Block
	for _, b := range blocks {
		txs += len(b.Txs)
		if b.Number == head {
			last = b.Block
			for _, tx := range b.Txs {
				hashes = append(hashes, tx.Hash)
			}
		}
	}
	// Ten steps of four transfers, and one failing transfer in the tenth.
	if txs != 41 {
		t.Errorf("%d transactions in 10 steps, want 41", txs)
	}
	rs, err := src.Receipts(ctx, last, hashes)
	if err != nil {
		t.Fatal(err)
	}
	var failed int
	for _, r := range rs {
		if r.Status == query.StatusFailed {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed transactions in the tenth block, want 1", failed)
	}
}

// TestTracesOfAnotherBlock: traces are checked against the block read:
// when the node's block at that number holds other transactions (the
// chain moved in between), Traces says ErrNotFound instead of answering
// for another block.
func TestTracesOfAnotherBlock(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{})
	src := devchaintest.Dial(t, dev)
	api, err := src.ProbeTraces(ctx)
	if err != nil || api != query.TraceCallTracer {
		t.Fatalf("ProbeTraces = %q, %v; want %s", api, err, query.TraceCallTracer)
	}
	if _, err := dev.Forward(ctx, 0, []common.Address{dev.Accounts[1]}, big.NewInt(5)); err != nil {
		t.Fatal(err)
	}
	dev.Commit()
	head, _ := dev.Head()
	blocks, err := src.Blocks(ctx, head, head)
	if err != nil || len(blocks) != 1 {
		t.Fatal(blocks, err)
	}
	moves, err := src.Traces(ctx, blocks[0], api)
	if err != nil || len(moves) != 1 || moves[0].Kind != query.KindInternal || moves[0].Amount != query.AmountOf(5) {
		t.Fatalf("Traces = %+v, %v; want the forwarder's payout of 5", moves, err)
	}
	other := blocks[0]
	other.Txs = append([]query.SourceTx{}, other.Txs...)
	other.Txs[0].Hash = "0x" + strings.Repeat("ab", 32)
	if _, err := src.Traces(ctx, other, api); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("Traces of a block with other transactions: %v, want ErrNotFound", err)
	}
	other.Txs = append(other.Txs, other.Txs[0])
	if _, err := src.Traces(ctx, other, api); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("Traces of a block with more transactions: %v, want ErrNotFound", err)
	}
}
