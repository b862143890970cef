package fetch_test

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// statementOf reads the whole statement of address, every page.
func statementOf(t *testing.T, db *store.DB, account int64, address string) []query.BalanceChange {
	t.Helper()
	var (
		out   []query.BalanceChange
		after *query.ChangeCursor
	)
	for {
		page, err := db.AccountBalanceChanges(context.Background(), account, chain, address, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 7 {
			return out
		}
		last := page[len(page)-1]
		after = &query.ChangeCursor{Block: last.Block, Contract: last.Contract}
	}
}

// checkStatement holds the statements of addresses to the node: rows
// chain, each row's causes add up to its amount, every row is reconciled
// (0 wei unexplained), and each row's balance_after is the node's
// balance (eth_getBalance or balanceOf) at its block, as is the newest at
// the checkpoint. It returns the causes of each address by kind.
func checkStatement(t *testing.T, db *store.DB, src *evm.Source, account int64, addresses []string) map[string]map[string][]query.Cause {
	t.Helper()
	ctx := context.Background()
	cp, _, err := db.Checkpoint(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	node := func(address, contract string, at uint64) *big.Int {
		t.Helper()
		bals, err := src.Balances(ctx, at, []query.BalanceQuery{{Address: address, Contract: contract}})
		if err != nil || len(bals) != 1 {
			t.Fatalf("node balance of %s %s at %d: %v %v", address, contract, at, bals, err)
		}
		return bals[0].Amount.Big()
	}
	kinds := make(map[string]map[string][]query.Cause)
	for _, a := range addresses {
		kinds[a] = make(map[string][]query.Cause)
		rows := statementOf(t, db, account, a)
		newer := make(map[string]*big.Int) // balance_after − amount of the newer row, by contract
		seen := make(map[string]bool)
		for _, r := range rows {
			after, amount := r.BalanceAfter.Big(), r.Amount.Big()
			if (r.Checked && !r.Reconciled) || !r.Difference.IsZero() {
				t.Errorf("%s block %d %q: unreconciled, difference %s: %+v", a, r.Block, r.Contract, r.Difference, r)
			}
			if want, ok := newer[r.Contract]; ok && want.Cmp(after) != 0 {
				t.Errorf("%s block %d %q: balance_after %s, the next row starts from %s", a, r.Block, r.Contract, after, want)
			}
			newer[r.Contract] = new(big.Int).Sub(after, amount)
			sum := new(big.Int)
			for _, c := range r.Causes {
				sum.Add(sum, c.Amount.Big())
				kinds[a][c.Kind] = append(kinds[a][c.Kind], c)
			}
			if sum.Cmp(amount) != 0 {
				t.Errorf("%s block %d %q: causes add up to %s, amount %s", a, r.Block, r.Contract, sum, amount)
			}
			if got := node(a, r.Contract, r.Block); got.Cmp(after) != 0 {
				t.Errorf("%s block %d %q: balance_after %s, node says %s (%s unexplained)", a, r.Block, r.Contract, after, got, new(big.Int).Sub(got, after))
			}
			if !seen[r.Contract] {
				seen[r.Contract] = true
				if got := node(a, r.Contract, cp.Number); got.Cmp(after) != 0 {
					t.Errorf("%s %q: newest balance_after %s (block %d), node says %s at the checkpoint %d", a, r.Contract, after, r.Block, got, cp.Number)
				}
			}
		}
	}
	return kinds
}

// TestStatementEveryKind sends every kind of movement on the simulated
// dev chain and holds the statements of every address involved to the
// node's balances.
func TestStatementEveryKind(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{Internals: fetch.InternalsOn})
		d := e.dev
		a0, a1, a2, a3 := d.Accounts[0], d.Accounts[1], d.Accounts[2], d.Accounts[3]
		gwei := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e9)) }
		addrs := []common.Address{a0, a1, a2, a3, d.FeeRecipient, d.Forwarder, d.Destructor, d.Factory}
		for _, a := range addrs {
			e.subscribe(a)
		}
		e.catchUp()
		first, _, err := e.db.Checkpoint(ctx, chain)
		if err != nil {
			t.Fatal(err)
		}

		// The destructor is funded a block before it self-destructs.
		e.mine(e.must(d.Forward(ctx, 3, []common.Address{d.Destructor}, gwei(19))))
		var hashes []string
		hashes = append(hashes,
			e.must(d.Transfer(ctx, 0, a1, gwei(11))),                               // transaction
			e.must(d.Transfer(ctx, 1, a1, gwei(3))),                                // self-transfer
			e.must(d.TransferToken(ctx, 1, a0, gwei(5))),                           // token
			e.must(d.Forward(ctx, 0, []common.Address{d.Forwarder, a2}, gwei(13))), // internal, nested
			e.must(d.Forward(ctx, 3, []common.Address{d.Token}, gwei(17))),         // inner call reverts: value stays
			e.must(d.SelfDestruct(ctx, 3, a1)),                                     // selfdestruct
			e.must(d.FailingTransfer(ctx, 2)),                                      // failed: fee only
		)
		h, created, err := d.Create2(ctx, 0, gwei(23)) // creation with value, by CREATE2
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h.Hex())
		h, deployed, err := d.Deploy(ctx, 2, gwei(29)) // a creating transaction with value
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h.Hex())
		if err := d.Withdraw(ctx, a1, 31); err != nil {
			t.Fatal(err)
		}
		// The created contracts, subscribed before they exist.
		e.subscribe(created)
		e.subscribe(deployed)
		addrs = append(addrs, created, deployed)
		e.catchUp() // syncs them, before the block that creates them
		e.mine(hashes...)
		e.catchUp()

		all := make([]string, 0, len(addrs))
		for _, a := range addrs {
			all = append(all, addr(a))
		}
		kinds := checkStatement(t, e.db, e.src, e.account, all)
		last, _, err := e.db.Checkpoint(ctx, chain)
		if err != nil {
			t.Fatal(err)
		}
		checkSeamParity(t, e, first.Number+1, last.Number, all)
		for _, c := range []struct {
			who  common.Address
			kind string
		}{
			{a0, query.KindTransaction}, {a1, query.KindTransaction}, {a0, query.KindFee}, {a0, query.KindToken},
			{a2, query.KindInternal}, {d.Forwarder, query.KindInternal}, {d.Forwarder, query.KindTransaction},
			{a1, query.KindSelfdestruct}, {d.Destructor, query.KindSelfdestruct}, {a1, query.KindWithdrawal},
			{d.FeeRecipient, query.KindFeeIncome}, {created, query.KindCreation},
			{deployed, query.KindCreation},
			{a2, query.KindFee},
		} {
			if len(kinds[addr(c.who)][c.kind]) == 0 {
				t.Errorf("%s: no %s in its statement: %v", c.who.Hex(), c.kind, kinds[addr(c.who)])
			}
		}
		// The reverted inner call moved nothing out of the forwarder: its
		// only way out is the nested payout.
		for _, c := range kinds[addr(d.Forwarder)][query.KindInternal] {
			if c.Amount != query.AmountFromBig(gwei(13)).Neg() && c.Amount != query.AmountFromBig(gwei(13)) {
				t.Errorf("forwarder internal movement %s, want ±%s only", c.Amount, gwei(13))
			}
		}
		// The factory's balance did not change (value in, value out to the
		// contract it created): no row, but its transaction lists the creation.
		var creations int
		for _, tx := range e.txs(d.Factory) {
			for _, tr := range tx.Transfers {
				if tr.Kind == query.KindCreation && tr.From == addr(d.Factory) && tr.To == addr(created) && tr.Amount == query.AmountFromBig(gwei(23)) {
					creations++
				}
			}
		}
		if creations != 1 {
			t.Errorf("the factory's transactions list %d creations of %s with %s wei, want 1", creations, created.Hex(), gwei(23))
		}
		// The created contracts are in their own lists, and named on the transaction.
		for _, c := range []common.Address{created, deployed} {
			txs := e.txs(c)
			if len(txs) == 0 || evm.Detail(txs[0]).Created != addr(c) {
				t.Errorf("%s: transactions %+v, want its creation naming it", c.Hex(), txs)
			}
		}
	})
}
