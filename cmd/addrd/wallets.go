package main

// The wallet keeper: each descriptor wallet's addresses are derived on
// until its gap limit's worth after the newest used one, as its
// addresses get transactions, each new address subscribed, so a wallet
// follows its coins as a BIP 44 wallet looks for them.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
	seam "github.com/wharfhq/wharf/query/chain"
)

// walletKeeper extends the wallets of the chains whose family derives
// addresses.
type walletKeeper struct {
	store    query.WalletStore
	log      *slog.Logger
	derivers map[string]seam.Deriver // by chain name
}

// newWalletKeeper returns the keeper of the chains of syntax that derive
// addresses; nil when none does.
func newWalletKeeper(store query.WalletStore, log *slog.Logger, syntax map[string]seam.Syntax) *walletKeeper {
	k := &walletKeeper{store: store, log: log, derivers: map[string]seam.Deriver{}}
	for name, s := range syntax {
		if d, ok := s.(seam.Deriver); ok {
			k.derivers[name] = d
		}
	}
	if len(k.derivers) == 0 {
		return nil
	}
	return k
}

// start runs the keeper in wg every interval until ctx ends.
func (k *walletKeeper) start(ctx context.Context, wg *sync.WaitGroup, interval time.Duration) {
	if k == nil {
		return
	}
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if err := k.round(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("wallets: extending failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// round extends every wallet of every chain once.
func (k *walletKeeper) round(ctx context.Context) error {
	for chain, d := range k.derivers {
		ws, err := k.store.WalletsOf(ctx, chain)
		if err != nil {
			return err
		}
		for _, aw := range ws {
			if err := k.extend(ctx, d, aw.Account, aw.Wallet); err != nil {
				return fmt.Errorf("wallet %s: %w", aw.Wallet.Name(), err)
			}
		}
	}
	return nil
}

// extend derives w's descriptors on to GapLimit after their newest used
// index and records the new addresses; it writes nothing when nothing
// changed.
func (k *walletKeeper) extend(ctx context.Context, d seam.Deriver, account int64, w query.Wallet) error {
	_, addrs, err := k.store.Wallet(ctx, account, w.Chain, w.ID)
	if err != nil {
		return err
	}
	changed := false
	for _, a := range addrs {
		if a.Used && int64(a.Index) > w.Descriptors[a.Descriptor].Used {
			w.Descriptors[a.Descriptor].Used, changed = int64(a.Index), true
		}
	}
	var more []query.WalletAddress
	for i := range w.Descriptors {
		wd := &w.Descriptors[i]
		want := uint32(wd.Used + 1 + int64(w.GapLimit))
		if want <= wd.Derived {
			continue
		}
		as, err := d.Derive(wd.Descriptor, wd.Derived, want)
		if err != nil {
			return err
		}
		for j, a := range as {
			more = append(more, query.WalletAddress{Address: a, Descriptor: i, Index: wd.Derived + uint32(j)})
		}
		wd.Derived, changed = want, true
	}
	if !changed {
		return nil
	}
	if err := k.store.ExtendWallet(ctx, account, w, more); err != nil {
		return err
	}
	if len(more) > 0 {
		k.log.Info("wallets: derived", "wallet", w.Name(), "addresses", len(more))
	}
	return nil
}
