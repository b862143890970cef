package devchain

// The demo producer: a block of demo transfers every BlockInterval (addrd
// serve --dev), and the showcase of every way ether moves.

import (
	"context"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/params"
)

// produce commits a block of demo transfers every BlockInterval until Close.
func (d *Chain) produce() {
	defer close(d.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		select {
		case <-d.stop:
			return
		case <-d.cfg.Clock.After(d.cfg.BlockInterval):
		}
		if _, err := d.Step(ctx); err != nil {
			d.cfg.Logger.Warn("dev chain: producing a block", "err", err)
		}
	}
}

// Step sends a block's worth of demo transfers among the demo accounts,
// native and ERC-20 (every tenth block also one that fails), and commits
// them in a new block whose hash it returns.
func (d *Chain) Step(ctx context.Context) (common.Hash, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.steps++
	n := len(d.Accounts)
	for i := range d.cfg.TxsPerBlock {
		from := d.rng.IntN(n)
		to := d.Accounts[(from+1+d.rng.IntN(n-1))%n]
		amount := new(big.Int).Mul(big.NewInt(int64(1+d.rng.IntN(1000))), big.NewInt(params.GWei))
		var err error
		if i%2 == 0 {
			_, err = d.send(ctx, from, &to, amount, nil, 21_000)
		} else {
			_, err = d.sendToken(ctx, from, to, amount, tokenGas)
		}
		if err != nil {
			return common.Hash{}, err
		}
	}
	if d.steps%10 == 0 {
		from := d.rng.IntN(n)
		if _, err := d.sendFailing(ctx, from); err != nil {
			return common.Hash{}, err
		}
	}
	if d.cfg.Showcase {
		if err := d.showcase(ctx); err != nil {
			return common.Hash{}, err
		}
	}
	return d.beacon.Commit(), nil
}

// showcase sends this step's turn of the other ways ether moves; d.mu is
// held.
func (d *Chain) showcase(ctx context.Context) error {
	gwei := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(params.GWei)) }
	n := len(d.Accounts)
	var err error
	switch d.steps % 5 {
	case 1: // a payout through two forwarders: internal, nested
		_, err = d.forward(ctx, 0, []common.Address{d.Forwarder, d.Accounts[2%n]}, gwei(int64(1+d.rng.IntN(1000))))
	case 2: // a withdrawal from the beacon chain
		err = d.withdraw(ctx, d.Accounts[1], uint64(1+d.rng.IntN(1000)))
	case 3: // fund the destructor, which self-destructs to account 3
		if _, err = d.send(ctx, 0, &d.Destructor, gwei(int64(1+d.rng.IntN(1000))), nil, contractGas); err == nil {
			_, err = d.selfDestruct(ctx, 0, d.Accounts[3%n])
		}
	case 4: // a contract created with value by CREATE2
		_, _, err = d.create2(ctx, 1, gwei(int64(1+d.rng.IntN(1000))))
	case 0: // a call with value whose inner call reverts (the token takes no ether): the value stays in the forwarder
		_, err = d.forward(ctx, 2%n, []common.Address{d.Token}, gwei(1))
	}
	return err
}
