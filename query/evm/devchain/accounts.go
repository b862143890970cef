package devchain

// The demo accounts: their keys and funds, and signing and sending their
// transactions.

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

// Key returns the private key of demo account i: derived from a fixed
// seed, so the accounts are the same on every run and every machine.
func Key(i int) *ecdsa.PrivateKey {
	k, err := crypto.ToECDSA(crypto.Keccak256([]byte(fmt.Sprintf("wharf dev account %d", i))))
	if err != nil {
		panic(err) // a Keccak-256 digest is a valid secp256k1 scalar but with negligible odds
	}
	return k
}

// devFunds is each demo account's genesis balance: 1,000,000 ETH.
var devFunds = new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))

// tokenGas is the gas limit of a demo token transfer: room for a new
// balance slot at the state-growth prices of the forks the dev chain runs.
const tokenGas = 300_000

// devTokens is each demo account's starting token balance: 1,000,000 WDT.
var devTokens = new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))

// sendToken sends a token transfer; d.mu is held.
func (d *Chain) sendToken(ctx context.Context, from int, to common.Address, amount *big.Int, gas uint64) (common.Hash, error) {
	data, err := d.token.Pack("transfer", to, amount)
	if err != nil {
		return common.Hash{}, err
	}
	return d.send(ctx, from, &d.Token, nil, data, gas)
}

// sendFailing sends a token transfer that reverts; d.mu is held.
func (d *Chain) sendFailing(ctx context.Context, from int) (common.Hash, error) {
	too := new(big.Int).Mul(devTokens, big.NewInt(1_000_000))
	to := d.Accounts[(from+1)%len(d.Accounts)]
	return d.sendToken(ctx, from, to, too, tokenGas)
}

// send signs and submits a dynamic-fee transaction from demo account from
// with a locally tracked nonce; d.mu is held.
func (d *Chain) send(ctx context.Context, from int, to *common.Address, value *big.Int, data []byte, gas uint64) (common.Hash, error) {
	if from < 0 || from >= len(d.keys) {
		return common.Hash{}, fmt.Errorf("dev chain: no demo account %d", from)
	}
	addr := d.Accounts[from]
	nonce, ok := d.nonces[addr]
	if !ok {
		n, err := d.client.PendingNonceAt(ctx, addr)
		if err != nil {
			return common.Hash{}, fmt.Errorf("dev chain: nonce of %s: %w", addr.Hex(), err)
		}
		nonce = n
	}
	if value == nil {
		value = new(big.Int)
	}
	tx, err := types.SignNewTx(d.keys[from], d.signer, &types.DynamicFeeTx{
		ChainID:   d.signer.ChainID(),
		Nonce:     nonce,
		GasTipCap: big.NewInt(params.GWei),
		GasFeeCap: big.NewInt(100 * params.GWei),
		Gas:       gas,
		To:        to,
		Value:     value,
		Data:      data,
	})
	if err != nil {
		return common.Hash{}, fmt.Errorf("dev chain: sign: %w", err)
	}
	// Into the pool directly and synchronously: the next Commit seals it,
	// rather than the one after when the pool promotes it late (under
	// load a step's block then held another step's transactions).
	if err := d.backend.TxPool().Add([]*types.Transaction{tx}, true)[0]; err != nil {
		delete(d.nonces, addr) // read it again next time
		return common.Hash{}, fmt.Errorf("dev chain: send from %s: %w", addr.Hex(), err)
	}
	d.nonces[addr] = nonce + 1
	return tx.Hash(), nil
}
