package evm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/chain/chaintest"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
)

// fresh returns an address no one has used.
func fresh() string {
	b := make([]byte, 20)
	rand.Read(b)
	return "0x" + hex.EncodeToString(b)
}

// devChain drives the dev chain for the contract.
type devChain struct {
	dev *devchain.Chain
	r   chain.Reader
}

func (c *devChain) Reader() chain.Reader { return c.r }
func (c *devChain) Payer() string        { return strings.ToLower(c.dev.Accounts[1].Hex()) }
func (c *devChain) Fresh() string        { return fresh() }

func (c *devChain) Pay(ctx context.Context, from, to string, amount query.Amount) (string, uint64, error) {
	if from != c.Payer() {
		return "", 0, fmt.Errorf("dev chain: %s is not the payer", from)
	}
	h, err := c.dev.Transfer(ctx, 1, common.HexToAddress(to), amount.Big())
	if err != nil {
		return "", 0, err
	}
	for range 10 {
		c.dev.Commit()
		if c.dev.Mined(ctx, h) {
			head, _ := c.dev.Head()
			return strings.ToLower(h.Hex()), head, nil
		}
	}
	return "", 0, fmt.Errorf("dev chain: %s not mined", h.Hex())
}

// Reorg forks below the newest depth blocks and seals one block holding a
// payment of its own, so that it differs from the one it replaces.
func (c *devChain) Reorg(ctx context.Context, depth int) error {
	head, _ := c.dev.Head()
	if err := c.dev.Fork(c.dev.BlockHash(head - uint64(depth))); err != nil {
		return err
	}
	if _, err := c.dev.Transfer(ctx, 2, common.HexToAddress(fresh()), big.NewInt(5)); err != nil {
		return err
	}
	c.dev.Commit()
	return nil
}

func TestContractDevChain(t *testing.T) {
	chaintest.Run(t, chaintest.Config{Namespace: evm.Namespace, New: func(t *testing.T) chaintest.Chain {
		dev := devchaintest.Start(t, devchain.Config{})
		return &devChain{dev: dev, r: evm.NewReader(devchaintest.Dial(t, dev))}
	}})
}

// gethChain drives a geth --dev node for the contract.
type gethChain struct {
	g *testenv.Geth
	r chain.Reader
}

func (c *gethChain) Reader() chain.Reader { return c.r }
func (c *gethChain) Payer() string        { return c.g.Account }
func (c *gethChain) Fresh() string        { return fresh() }

func (c *gethChain) Pay(ctx context.Context, from, to string, amount query.Amount) (string, uint64, error) {
	return pay(ctx, c.g.Send, from, to, amount)
}

func (c *gethChain) Reorg(context.Context, int) error {
	return fmt.Errorf("geth --dev: %w", chain.ErrNotImplemented)
}

func TestContractGeth(t *testing.T) {
	chaintest.Run(t, chaintest.Config{Namespace: evm.Namespace, New: func(t *testing.T) chaintest.Chain {
		g := testenv.NewGeth(t)
		r, err := evm.Family{}.Dial(t.Context(), g.URL)
		if err != nil {
			t.Fatal(err)
		}
		return &gethChain{g: g, r: r}
	}})
}

// anvilChain drives an anvil node for the contract: payments are mined a
// block each, and a reorg is anvil_reorg with a payment of its own in the
// first new block, so that it differs from the one it replaces.
type anvilChain struct {
	a *testenv.Anvil
	r chain.Reader
}

func (c *anvilChain) Reader() chain.Reader { return c.r }
func (c *anvilChain) Payer() string        { return c.a.Accounts[0] }
func (c *anvilChain) Fresh() string        { return fresh() }

func (c *anvilChain) Pay(ctx context.Context, from, to string, amount query.Amount) (string, uint64, error) {
	return pay(ctx, c.a.Send, from, to, amount)
}

func (c *anvilChain) Reorg(ctx context.Context, depth int) error {
	tx := map[string]any{"from": c.a.Accounts[2], "to": fresh(), "value": "0x5"}
	return c.a.Call(ctx, nil, "anvil_reorg", depth, []any{[]any{tx, 0}})
}

// TestContractAnvil runs the contract on anvil, a second EVM node: its
// reorgs are anvil_reorg's, of any depth.
func TestContractAnvil(t *testing.T) {
	chaintest.Run(t, chaintest.Config{Namespace: evm.Namespace, New: func(t *testing.T) chaintest.Chain {
		a := testenv.NewAnvil(t)
		r, err := evm.Family{}.Dial(t.Context(), a.URL)
		if err != nil {
			t.Fatal(err)
		}
		return &anvilChain{a: a, r: r}
	}})
}

// pay sends amount from to to through a node's send (Geth.Send,
// Anvil.Send) and returns the transaction's hash and block from its
// receipt.
func pay(ctx context.Context, send func(context.Context, map[string]any) (map[string]any, error), from, to string, amount query.Amount) (string, uint64, error) {
	r, err := send(ctx, map[string]any{"from": from, "to": to, "value": "0x" + amount.Big().Text(16), "gas": "0x7a120"})
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(r["blockNumber"].(string), "0x"), 16, 64)
	if err != nil {
		return "", 0, err
	}
	return r["transactionHash"].(string), n, nil
}
