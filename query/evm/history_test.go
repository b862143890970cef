package evm_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

// TestCommitEmpty: empty blocks sealed in bulk are real blocks of the
// chain (linked, timestamps rising, state readable at each), and the chain
// goes on with transactions after them, in memory or on disk, archive or
// not.
func TestCommitEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  devchain.Config
	}{
		{"archive on disk", devchain.Config{Archive: true, Dir: t.TempDir()}},
		{"archive in memory", devchain.Config{Archive: true}},
		{"not archive", devchain.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dev := devchaintest.Start(t, tc.cfg)
			start, _ := dev.Head()
			hash, err := dev.CommitEmpty(300)
			if err != nil {
				t.Fatal(err)
			}
			head, headHash := dev.Head()
			if head != start+300 || hash != headHash {
				t.Fatalf("head %d %s after 300 empty blocks on %d, want %d %s", head, headHash, start, start+300, hash)
			}
			x := dev.Accounts[1]
			sent, err := dev.Transfer(ctx, 0, x, big.NewInt(7))
			if err != nil {
				t.Fatal(err)
			}
			dev.Commit()
			if !dev.Mined(ctx, sent) {
				t.Fatal("a transfer after the empty blocks is not mined")
			}
			client, err := ethclient.Dial(dev.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			var prev uint64
			for n := start; n <= head+1; n++ {
				b, err := client.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
				if err != nil {
					t.Fatalf("block %d: %v", n, err)
				}
				if n > start && (b.ParentHash != dev.BlockHash(n-1) || b.Time <= prev) {
					t.Fatalf("block %d: parent %s time %d, want parent %s, after %d", n, b.ParentHash, b.Time, dev.BlockHash(n-1), prev)
				}
				prev = b.Time
			}
			if !tc.cfg.Archive {
				return
			}
			bal, err := client.BalanceAt(ctx, x, new(big.Int).SetUint64(start+150))
			if err != nil || bal.Sign() == 0 {
				t.Errorf("balance inside the empty blocks: %v, %v", bal, err)
			}
		})
	}
	t.Run("pending transactions", func(t *testing.T) {
		dev := devchaintest.Start(t, devchain.Config{})
		if _, err := dev.Transfer(context.Background(), 0, dev.Accounts[1], big.NewInt(1)); err != nil {
			t.Fatal(err)
		}
		if _, err := dev.CommitEmpty(3); err == nil {
			t.Error("empty blocks with a transaction pending: no error")
		}
	})
}

// TestWaitLogIndex: with the log index, eth_getLogs over a long range
// finds the Transfer logs once WaitLogIndex returns.
func TestWaitLogIndex(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{Archive: true, Dir: t.TempDir(), LogIndex: true})
	var sent []common.Hash
	for range 3 {
		if _, err := dev.CommitEmpty(500); err != nil {
			t.Fatal(err)
		}
		h, err := dev.TransferToken(ctx, 0, dev.Accounts[1], big.NewInt(1))
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, h)
		dev.Commit()
	}
	if err := dev.WaitLogIndex(ctx); err != nil {
		t.Fatal(err)
	}
	client, err := ethclient.Dial(dev.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	logs, err := client.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(3), Topics: [][]common.Hash{
		{crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))}, {common.BytesToHash(dev.Accounts[0].Bytes())}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != len(sent) {
		t.Fatalf("%d logs, want %d", len(logs), len(sent))
	}
	for i, l := range logs {
		if l.TxHash != sent[i] {
			t.Errorf("log %d of %s, want %s", i, l.TxHash, sent[i])
		}
	}
	if err := devchaintest.Start(t, devchain.Config{}).WaitLogIndex(ctx); err == nil {
		t.Error("WaitLogIndex without a log index: no error")
	}
}

// TestStatesAt: the states of many blocks in one batch are those States
// reads a block at a time; a node without old state says ErrNoState.
func TestStatesAt(t *testing.T) {
	ctx := context.Background()
	dev := devchaintest.Start(t, devchain.Config{Archive: true})
	a, b := lower(dev.Accounts[0]), lower(dev.Accounts[1])
	for i := range 5 {
		if _, err := dev.Transfer(ctx, 0, dev.Accounts[1], big.NewInt(int64(10+i))); err != nil {
			t.Fatal(err)
		}
		dev.Commit()
	}
	// Small batches: the reads span several, sent at once.
	src, err := evm.Dial(ctx, dev.URL, evm.SourceConfig{BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	head, _ := dev.Head()
	var reads []query.StateRead
	for n := range head + 1 {
		reads = append(reads, query.StateRead{Block: n, Addresses: []string{a, b}, Nonces: n%2 == 0})
	}
	reads = append(reads, query.StateRead{Block: head, Addresses: []string{a}, Nonces: true})
	got, err := src.StatesAt(ctx, reads)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reads {
		want, err := src.States(ctx, r.Block, r.Addresses, r.Nonces)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("block %d: %v, States says %v", r.Block, got[i], want)
		}
	}
	client, err := ethclient.Dial(dev.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if nonce, err := client.NonceAt(ctx, dev.Accounts[0], nil); err != nil || nonce == 0 || got[len(got)-1][0].Nonce != nonce {
		t.Errorf("nonce of %s at the head: %d, the node says %d, %v", a, got[len(got)-1][0].Nonce, nonce, err)
	}

	pruned := devchaintest.Start(t, devchain.Config{})
	if _, err := pruned.CommitEmpty(200); err != nil {
		t.Fatal(err)
	}
	_, err = devchaintest.Dial(t, pruned).StatesAt(ctx, []query.StateRead{{Block: 1, Addresses: []string{a}}})
	if !errors.Is(err, query.ErrNoState) {
		t.Errorf("old state on a node that keeps none: %v, want ErrNoState", err)
	}
}
