package devchain

// The scenario API for tests: each way a real chain moves ether or tokens,
// one call each.

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Forward sends wei from demo account from through the forwarder, which
// passes it on along hops (each but the last another forwarder); Commit
// mines it.
func (d *Chain) Forward(ctx context.Context, from int, hops []common.Address, wei *big.Int) (common.Hash, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.forward(ctx, from, hops, wei)
}

func (d *Chain) forward(ctx context.Context, from int, hops []common.Address, wei *big.Int) (common.Hash, error) {
	var data []byte
	for _, h := range hops {
		data = append(data, common.LeftPadBytes(h.Bytes(), 32)...)
	}
	return d.send(ctx, from, &d.Forwarder, wei, data, contractGas)
}

// SelfDestruct makes the destructor self-destruct to beneficiary, which
// receives its balance; Commit mines it.
func (d *Chain) SelfDestruct(ctx context.Context, from int, beneficiary common.Address) (common.Hash, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.selfDestruct(ctx, from, beneficiary)
}

func (d *Chain) selfDestruct(ctx context.Context, from int, beneficiary common.Address) (common.Hash, error) {
	return d.send(ctx, from, &d.Destructor, nil, common.LeftPadBytes(beneficiary.Bytes(), 32), contractGas)
}

// Create2 has the factory create, by CREATE2 with wei, a new copy of the
// destructor; it returns the transaction and the created address; Commit
// mines it.
func (d *Chain) Create2(ctx context.Context, from int, wei *big.Int) (common.Hash, common.Address, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.create2(ctx, from, wei)
}

func (d *Chain) create2(ctx context.Context, from int, wei *big.Int) (common.Hash, common.Address, error) {
	// Bytes after the init code's RETURN never run: they make each
	// creation's address new.
	d.created++
	code := append(initCode(destructorCode), binary.BigEndian.AppendUint64(nil, d.created)...)
	addr := crypto.CreateAddress2(d.Factory, common.Hash{}, crypto.Keccak256(code))
	h, err := d.send(ctx, from, &d.Factory, wei, code, contractGas)
	return h, addr, err
}

// Deploy sends a transaction from demo account from that creates a copy of
// the destructor with wei, and returns it and the contract's address.
func (d *Chain) Deploy(ctx context.Context, from int, wei *big.Int) (common.Hash, common.Address, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	addr := d.Accounts[from]
	nonce, ok := d.nonces[addr]
	if !ok {
		n, err := d.client.PendingNonceAt(ctx, addr)
		if err != nil {
			return common.Hash{}, common.Address{}, err
		}
		nonce = n
	}
	h, err := d.send(ctx, from, nil, wei, initCode(destructorCode), contractGas)
	return h, crypto.CreateAddress(addr, nonce), err
}

// Withdraw queues a withdrawal of gwei to address for the next block
// (dev_addWithdrawal); Commit mines it.
func (d *Chain) Withdraw(ctx context.Context, to common.Address, gwei uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.withdraw(ctx, to, gwei)
}

func (d *Chain) withdraw(ctx context.Context, to common.Address, gwei uint64) error {
	w := &types.Withdrawal{Index: d.wdrawn, Validator: d.wdrawn, Address: to, Amount: gwei}
	if err := d.rpc.CallContext(ctx, nil, "dev_addWithdrawal", w); err != nil {
		return fmt.Errorf("dev chain: withdrawal: %w", err)
	}
	d.wdrawn++
	return nil
}

// Transfer sends wei from demo account from to to; Commit mines it.
func (d *Chain) Transfer(ctx context.Context, from int, to common.Address, wei *big.Int) (common.Hash, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.send(ctx, from, &to, wei, nil, 21_000)
}

// TransferToken sends demo tokens from demo account from to to; Commit mines it.
func (d *Chain) TransferToken(ctx context.Context, from int, to common.Address, amount *big.Int) (common.Hash, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sendToken(ctx, from, to, amount, tokenGas)
}

// FailingTransfer sends a token transfer of more than demo account from
// holds, which the chain mines as a failed (reverted) transaction.
func (d *Chain) FailingTransfer(ctx context.Context, from int) (common.Hash, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sendFailing(ctx, from)
}
