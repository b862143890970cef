package utxo_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2/hdkeychain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/chain/chaintest"
	"github.com/wharfhq/wharf/query/utxo"
)

// regtestChain is a btcd or litecoind regtest node with a test wallet: a
// key whose P2WPKH address every generated block pays, whose matured
// coinbase outputs Pay spends (signed with btcd's txscript, sent with
// sendrawtransaction).
type regtestChain struct {
	t      testing.TB
	node   *testenv.BitcoinNode
	reader *utxo.Reader
	net    *utxo.Network
	key    *btcec.PrivateKey
	payer  utxo.Address

	mu    sync.Mutex
	next  uint64 // the height of the next coinbase to spend
	fresh uint32
	seed  *hdkeychain.ExtendedKey
}

func newRegtestChain(t testing.TB, dialect string) *regtestChain {
	t.Helper()
	name := "bitcoin-regtest"
	if dialect == testenv.DialectCore {
		name = "litecoin-regtest"
	}
	n := network(t, name)
	seedBytes := bytes.Repeat([]byte{7}, 32)
	seed, err := hdkeychain.NewMaster(seedBytes, n.Params)
	if err != nil {
		t.Fatal(err)
	}
	c := &regtestChain{t: t, net: n, next: 1, seed: seed}
	c.key, _ = btcec.PrivKeyFromBytes(bytes.Repeat([]byte{1}, 32))
	c.payer = c.p2wpkh(c.key.PubKey())
	if dialect == testenv.DialectBtcd {
		c.node = testenv.NewBtcd(t, c.payer.String)
	} else {
		c.node = testenv.NewLitecoind(t)
	}
	c.node.Generate(t, 101, c.payer.String)
	r, err := utxo.Dial(context.Background(), c.node.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if r.Dialect() != dialect || r.Network().Name != name {
		t.Fatalf("dialed %s on %s, want %s on %s", r.Dialect(), r.Network().Name, dialect, name)
	}
	c.reader = r
	return c
}

func (c *regtestChain) p2wpkh(pub *btcec.PublicKey) utxo.Address {
	a, err := utxo.AddressFromScript(c.net, append([]byte{0x00, 0x14}, address.Hash160(pub.SerializeCompressed())...))
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

func (c *regtestChain) Reader() chain.Reader { return c.reader }
func (c *regtestChain) Payer() string        { return c.payer.String }

func (c *regtestChain) Fresh() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fresh++
	k, err := c.seed.Derive(c.fresh)
	if err != nil {
		c.t.Fatal(err)
	}
	pub, err := k.ECPubKey()
	if err != nil {
		c.t.Fatal(err)
	}
	return c.p2wpkh(pub).String
}

// spend sends amount to to from the next matured coinbase output, the
// change back to the payer, a fee of 1,000 units; it returns the txid.
func (c *regtestChain) spend(ctx context.Context, to string, amount int64) (string, error) {
	c.mu.Lock()
	height := c.next
	c.next++
	c.mu.Unlock()
	var hash string
	if err := c.node.Call(ctx, &hash, "getblockhash", height); err != nil {
		return "", err
	}
	var b struct {
		Tx []string `json:"tx"`
	}
	if err := c.node.Call(ctx, &b, "getblock", hash, 1); err != nil {
		return "", err
	}
	const value, fee = 50_0000_0000, 1000
	prev, err := chainhash.NewHashFromStr(b.Tx[0])
	if err != nil {
		return "", err
	}
	dest, err := utxo.ParseAddress(c.net, to)
	if err != nil {
		return "", err
	}
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(prev, 0), nil, nil))
	tx.AddTxOut(wire.NewTxOut(amount, dest.Script))
	tx.AddTxOut(wire.NewTxOut(value-amount-fee, c.payer.Script))
	fetcher := txscript.NewCannedPrevOutputFetcher(c.payer.Script, value)
	w, err := txscript.WitnessSignature(tx, txscript.NewTxSigHashes(tx, fetcher), 0, value, c.payer.Script, txscript.SigHashAll, c.key, true)
	if err != nil {
		return "", err
	}
	tx.TxIn[0].Witness = w
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		return "", err
	}
	var txid string
	if err := c.node.Call(ctx, &txid, "sendrawtransaction", hex.EncodeToString(buf.Bytes())); err != nil {
		return "", err
	}
	return txid, nil
}

func (c *regtestChain) Pay(ctx context.Context, from, to string, amount query.Amount) (string, uint64, error) {
	if from != c.payer.String {
		return "", 0, fmt.Errorf("only the payer %s pays, not %s", c.payer.String, from)
	}
	txid, err := c.spend(ctx, to, amount.Big().Int64())
	if err != nil {
		return "", 0, err
	}
	c.node.Generate(c.t, 1, c.payer.String)
	var height uint64
	if err := c.node.Call(ctx, &height, "getblockcount"); err != nil {
		return "", 0, err
	}
	return txid, height, nil
}

// Reorg invalidates the newest depth blocks and mines depth+1 others, a
// transaction of their own in the first so that none is the same block.
func (c *regtestChain) Reorg(ctx context.Context, depth int) error {
	var height uint64
	if err := c.node.Call(ctx, &height, "getblockcount"); err != nil {
		return err
	}
	var hash string
	if err := c.node.Call(ctx, &hash, "getblockhash", height-uint64(depth)+1); err != nil {
		return err
	}
	if err := c.node.Call(ctx, nil, "invalidateblock", hash); err != nil {
		return err
	}
	if _, err := c.spend(ctx, c.Fresh(), 5000); err != nil {
		return err
	}
	c.node.Generate(c.t, depth+1, c.Fresh())
	return nil
}

// TestContract runs the chain-family contract on btcd (btcd's dialect)
// and litecoind (Bitcoin Core's).
func TestContract(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) {
			chaintest.Run(t, chaintest.Config{
				Namespace: utxo.Family{}.Namespace(),
				New:       func(t *testing.T) chaintest.Chain { return newRegtestChain(t, dialect) },
			})
		})
	}
}

// coin is an output a test key can spend.
type coin struct {
	op     wire.OutPoint
	value  int64
	key    *btcec.PrivateKey
	script []byte
}

// send signs a transaction spending coins (all P2WPKH) to outs and sends
// it; it returns its txid.
func (c *regtestChain) send(ctx context.Context, coins []coin, outs ...*wire.TxOut) (string, error) {
	tx := wire.NewMsgTx(2)
	prev := make(map[wire.OutPoint]*wire.TxOut)
	for _, k := range coins {
		tx.AddTxIn(wire.NewTxIn(&k.op, nil, nil))
		prev[k.op] = wire.NewTxOut(k.value, k.script)
	}
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	hashes := txscript.NewTxSigHashes(tx, txscript.NewMultiPrevOutFetcher(prev))
	for i, k := range coins {
		w, err := txscript.WitnessSignature(tx, hashes, i, k.value, k.script, txscript.SigHashAll, k.key, true)
		if err != nil {
			return "", err
		}
		tx.TxIn[i].Witness = w
	}
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		return "", err
	}
	var txid string
	err := c.node.Call(ctx, &txid, "sendrawtransaction", hex.EncodeToString(buf.Bytes()))
	return txid, err
}

// coinbase is the payer's coinbase output of block height.
func (c *regtestChain) coinbase(t testing.TB, height uint64) coin {
	t.Helper()
	var hash string
	c.node.MustCall(t, &hash, "getblockhash", height)
	var b struct {
		Tx []string `json:"tx"`
	}
	c.node.MustCall(t, &b, "getblock", hash, 1)
	h, err := chainhash.NewHashFromStr(b.Tx[0])
	if err != nil {
		t.Fatal(err)
	}
	return coin{op: *wire.NewOutPoint(h, 0), value: 50_0000_0000, key: c.key, script: c.payer.Script}
}

// TestActivityKinds reads, on both dialects, a block where the payer
// pays B beside an OP_RETURN output, B pays C in the same block, and a
// block where the payer and C fund one transaction together: coinbase,
// received, spent and fee moves with their refs, OP_RETURN booked to no
// one, no fee cause where two addresses funded the inputs.
func TestActivityKinds(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			c := newRegtestChain(t, dialect)
			keyB, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{2}, 32))
			keyC, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{3}, 32))
			b, cc := c.p2wpkh(keyB.PubKey()), c.p2wpkh(keyC.PubKey())
			opReturn, _ := txscript.NullDataScript([]byte("wharf"))

			cb := c.coinbase(t, 1)
			tx1, err := c.send(ctx, []coin{cb}, wire.NewTxOut(7_0000_0000, b.Script), wire.NewTxOut(0, opReturn),
				wire.NewTxOut(cb.value-7_0000_0000-1000, c.payer.Script))
			if err != nil {
				t.Fatal(err)
			}
			h1, _ := chainhash.NewHashFromStr(tx1)
			tx2, err := c.send(ctx, []coin{{op: *wire.NewOutPoint(h1, 0), value: 7_0000_0000, key: keyB, script: b.Script}},
				wire.NewTxOut(6_9999_0000, cc.Script))
			if err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 1, c.payer.String)
			h2, _ := chainhash.NewHashFromStr(tx2)
			tx3, err := c.send(ctx, []coin{c.coinbase(t, 2), {op: *wire.NewOutPoint(h2, 0), value: 6_9999_0000, key: keyC, script: cc.Script}},
				wire.NewTxOut(56_9998_0000, b.Script))
			if err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 1, c.payer.String)

			tracked := map[string]bool{c.payer.String: true, b.String: true, cc.String: true}
			acts, err := c.reader.Activity(ctx, chain.Query{From: 1, To: 1, Tracked: tracked})
			if err != nil || len(acts) != 1 || len(acts[0].Moves) != 1 {
				t.Fatalf("block 1: %+v, %v", acts, err)
			}
			if m := acts[0].Moves[0]; m.Kind != query.KindCoinbase || m.Address != c.payer.String || m.Amount.String() != "5000000000" || m.Ref != cb.op.String() {
				t.Errorf("block 1's coinbase move %+v", m)
			}
			acts, err = c.reader.Activity(ctx, chain.Query{From: 102, To: 103, Tracked: tracked})
			if err != nil || len(acts) != 2 {
				t.Fatalf("blocks 102-103: %d, %v", len(acts), err)
			}
			type mv struct{ addr, kind, tx, ref, amount string }
			var got []mv
			for _, a := range acts {
				for _, m := range a.Moves {
					if m.Kind != query.KindCoinbase {
						got = append(got, mv{m.Address, m.Kind, m.Tx, m.Ref, m.Amount.String()})
					}
				}
			}
			cb2 := c.coinbase(t, 2)
			want := []mv{
				{c.payer.String, query.KindSpent, tx1, "0:" + cb.op.String(), "-4999999000"},
				{b.String, query.KindReceived, tx1, tx1 + ":0", "700000000"},
				{c.payer.String, query.KindReceived, tx1, tx1 + ":2", "4299999000"},
				{c.payer.String, query.KindFee, tx1, "", "-1000"},
				{b.String, query.KindSpent, tx2, "0:" + tx1 + ":0", "-699990000"},
				{cc.String, query.KindReceived, tx2, tx2 + ":0", "699990000"},
				{b.String, query.KindFee, tx2, "", "-10000"},
				{c.payer.String, query.KindSpent, tx3, "0:" + cb2.op.String(), "-5000000000"},
				{cc.String, query.KindSpent, tx3, "1:" + tx2 + ":0", "-699990000"},
				{b.String, query.KindReceived, tx3, tx3 + ":0", "5699980000"},
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("moves\n got %v\nwant %v", got, want)
			}
			for _, a := range acts {
				for _, tx := range a.Txs {
					if tx.Hash == tx3 && (tx.Payer != "" || !tx.Fee.IsZero()) {
						t.Errorf("tx3, funded by two addresses: payer %q fee %s", tx.Payer, tx.Fee)
					}
					if tx.Hash == tx1 && (tx.Payer != c.payer.String || tx.Fee.String() != "1000") {
						t.Errorf("tx1: payer %q fee %s", tx.Payer, tx.Fee)
					}
				}
			}
		})
	}
}

// TestHistory finds the blocks where an address moved through btcd's
// address index, and says Core has none.
func TestHistory(t *testing.T) {
	ctx := context.Background()
	c := newRegtestChain(t, testenv.DialectBtcd)
	to := c.Fresh()
	var want []uint64
	for range 3 {
		_, h, err := c.Pay(ctx, c.payer.String, to, query.AmountOf(1000))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, h)
		c.node.Generate(t, 2, "")
	}
	got, err := c.reader.History(ctx, to, 0, 1000)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("History(%s) = %v, %v; want %v", to, got, err, want)
	}
	if got, err := c.reader.History(ctx, to, want[1], want[2]-1); err != nil || fmt.Sprint(got) != fmt.Sprint(want[1:2]) {
		t.Errorf("History within [%d, %d] = %v, %v", want[1], want[2]-1, got, err)
	}
	if got, err := c.reader.History(ctx, c.Fresh(), 0, 1000); err != nil || len(got) != 0 {
		t.Errorf("History of an unused address = %v, %v", got, err)
	}
	core := newRegtestChain(t, testenv.DialectCore)
	if _, err := core.reader.History(ctx, core.payer.String, 0, 10); !errors.Is(err, chain.ErrNotImplemented) {
		t.Errorf("History on Core: %v, want ErrNotImplemented", err)
	}
}

// TestFeeTakesWholeSpends holds the fee's netting where an input is
// smaller than the fee: a 600-unit input first and a coinbase second
// paying a fee of 1,000 (the small spend is taken whole, the coinbase's
// gives the remaining 400), and a 700-unit output burnt whole to the fee
// beside an OP_RETURN. No spend is positive, and the spends taken whole
// are named by the fee move's ref.
func TestFeeTakesWholeSpends(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			c := newRegtestChain(t, dialect)
			cb := c.coinbase(t, 1)
			tx0, err := c.send(ctx, []coin{cb}, wire.NewTxOut(600, c.payer.Script), wire.NewTxOut(700, c.payer.Script),
				wire.NewTxOut(cb.value-1300-1000, c.payer.Script))
			if err != nil {
				t.Fatal(err)
			}
			h0, _ := chainhash.NewHashFromStr(tx0)
			small := coin{op: *wire.NewOutPoint(h0, 0), value: 600, key: c.key, script: c.payer.Script}
			burnt := coin{op: *wire.NewOutPoint(h0, 1), value: 700, key: c.key, script: c.payer.Script}
			cb2 := c.coinbase(t, 2)
			tx1, err := c.send(ctx, []coin{small, cb2}, wire.NewTxOut(cb2.value+600-1000, c.payer.Script))
			if err != nil {
				t.Fatal(err)
			}
			opReturn, _ := txscript.NullDataScript(bytes.Repeat([]byte("w"), 40))
			tx2, err := c.send(ctx, []coin{burnt}, wire.NewTxOut(0, opReturn))
			if err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 1, c.payer.String)
			acts, err := c.reader.Activity(ctx, chain.Query{From: 102, To: 102, Tracked: map[string]bool{c.payer.String: true}})
			if err != nil || len(acts) != 1 {
				t.Fatalf("block 102: %+v, %v", acts, err)
			}
			type mv struct{ kind, tx, ref, amount string }
			var got []mv
			for _, m := range acts[0].Moves {
				if m.Tx == tx1 || m.Tx == tx2 {
					got = append(got, mv{m.Kind, m.Tx, m.Ref, m.Amount.String()})
				}
			}
			want := []mv{
				{query.KindSpent, tx1, "1:" + cb2.op.String(), "-4999999600"},
				{query.KindReceived, tx1, tx1 + ":0", "4999999600"},
				{query.KindFee, tx1, "0:" + small.op.String(), "-1000"},
				{query.KindFee, tx2, "0:" + burnt.op.String(), "-700"},
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("moves\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestCoinbaseMaturity holds utxo.Mature and BalanceAt to the node's
// consensus at the boundary: with the tip at 101, the coinbase of block 2
// (100 confirmations) is spent and that of block 3 (99) is refused; one
// block later block 3's is spent. BalanceAt counts the newest 99
// coinbase outputs immature, the rest spendable.
func TestCoinbaseMaturity(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			c := newRegtestChain(t, dialect)
			var tip uint64
			c.node.MustCall(t, &tip, "getblockcount")
			if tip != 101 || !utxo.Mature(2, tip) || utxo.Mature(3, tip) {
				t.Fatalf("tip %d: Mature(2) %v, Mature(3) %v; want 101, true, false", tip, utxo.Mature(2, tip), utxo.Mature(3, tip))
			}
			acts, err := c.reader.Activity(ctx, chain.Query{From: 0, To: tip, Tracked: map[string]bool{c.payer.String: true}})
			if err != nil {
				t.Fatal(err)
			}
			b := utxo.BalanceAt(acts, c.payer.String, tip)
			if b.Total.String() != "505000000000" || b.Immature.String() != "495000000000" || b.Spendable().String() != "10000000000" {
				t.Errorf("BalanceAt(101) = total %s, immature %s, spendable %s; want 101, 99 and 2 coinbases of 50", b.Total, b.Immature, b.Spendable())
			}
			var d utxo.Detail
			if err := json.Unmarshal(acts[3].Txs[0].Detail, &d); err != nil || !d.Coinbase || d.SpendableFrom != 103 {
				t.Errorf("block 3's coinbase detail %s (%v): want coinbase, spendable_from 103", acts[3].Txs[0].Detail, err)
			}
			pay := func(height uint64) error {
				cb := c.coinbase(t, height)
				_, err := c.send(ctx, []coin{cb}, wire.NewTxOut(cb.value-1000, c.payer.Script))
				return err
			}
			if err := pay(2); err != nil {
				t.Errorf("the node refused the mature coinbase of block 2: %v", err)
			}
			// Core: bad-txns-premature-spend-of-coinbase; btcd: "before required maturity".
			if err := pay(3); err == nil || !strings.Contains(err.Error(), "premature") && !strings.Contains(err.Error(), "maturity") {
				t.Errorf("the coinbase of block 3 at tip 101: %v, want refused as premature", err)
			}
			c.node.Generate(t, 1, c.payer.String)
			if !utxo.Mature(3, tip+1) {
				t.Error("Mature(3, 102) = false")
			}
			if err := pay(3); err != nil {
				t.Errorf("the node refused the coinbase of block 3 at tip 102: %v", err)
			}
		})
	}
}

// wallet is the test wallet's account key (m/84'), and its receive and
// change descriptors wpkh(TPUB/0/*) and wpkh(TPUB/1/*).
func (c *regtestChain) wallet(t testing.TB) (*hdkeychain.ExtendedKey, []*utxo.Descriptor) {
	t.Helper()
	acct, err := c.seed.Derive(hdkeychain.HardenedKeyStart + 84)
	if err != nil {
		t.Fatal(err)
	}
	xpub, err := acct.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	var descs []*utxo.Descriptor
	for _, branch := range []string{"0", "1"} {
		d, err := utxo.ParseDescriptor(c.net, "wpkh("+xpub.String()+"/"+branch+"/*)")
		if err != nil {
			t.Fatal(err)
		}
		descs = append(descs, d)
	}
	return acct, descs
}

// TestDiscoverWallet finds a wallet's used addresses with gap limit 20
// on both nodes (btcd through its address index, litecoind by scanning):
// receive indexes 0, 5, 24 and 44 (each within 20 of the one before) and
// change 3 are found, receive 70 (26 after 44) is not, and the branches
// are derived to 20 after their newest used address.
func TestDiscoverWallet(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			c := newRegtestChain(t, dialect)
			_, descs := c.wallet(t)
			var want []string
			for _, p := range []struct {
				branch int
				index  uint32
				found  bool
			}{{0, 0, true}, {0, 5, true}, {0, 24, true}, {0, 44, true}, {0, 70, false}, {1, 3, true}} {
				a, err := descs[p.branch].Derive(p.index)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := c.Pay(ctx, c.payer.String, a.String, query.AmountOf(10_000)); err != nil {
					t.Fatal(err)
				}
				if p.found {
					want = append(want, a.String)
				}
			}
			w, err := utxo.NewWallet(utxo.DefaultGapLimit, descs...)
			if err != nil {
				t.Fatal(err)
			}
			tip, _ := c.reader.Head(ctx)
			start := time.Now()
			reads, err := c.reader.Discover(ctx, w, 0, tip)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Used(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("used\n got %v\nwant %v", got, want)
			}
			if n := len(w.Addresses()); n != 65+24 {
				t.Errorf("%d addresses derived, want 65 receive and 24 change", n)
			}
			t.Logf("%s: %d blocks read whole, %s", dialect, reads, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestWalletStatement folds a wallet's moves per transaction on both
// nodes: a payment in to two of its addresses (+100,000), a
// consolidation of both to a third and change (internal, nets to 0, fee
// 1,000 though two addresses funded it), a payment out with change
// (-50,000, fee 500).
func TestWalletStatement(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			c := newRegtestChain(t, dialect)
			acct, descs := c.wallet(t)
			type key struct {
				priv *btcec.PrivateKey
				addr utxo.Address
			}
			derive := func(branch, i uint32) key {
				t.Helper()
				b, err := acct.Derive(branch)
				if err != nil {
					t.Fatal(err)
				}
				k, err := b.Derive(i)
				if err != nil {
					t.Fatal(err)
				}
				priv, err := k.ECPrivKey()
				if err != nil {
					t.Fatal(err)
				}
				return key{priv, c.p2wpkh(priv.PubKey())}
			}
			w, err := utxo.NewWallet(5, descs...)
			if err != nil {
				t.Fatal(err)
			}
			r0, r1, r2, c0, c1 := derive(0, 0), derive(0, 1), derive(0, 2), derive(1, 0), derive(1, 1)
			coinOf := func(txid string, vout uint32, value int64, k key) coin {
				h, _ := chainhash.NewHashFromStr(txid)
				return coin{op: *wire.NewOutPoint(h, vout), value: value, key: k.priv, script: k.addr.Script}
			}
			cb := c.coinbase(t, 1)
			tx1, err := c.send(ctx, []coin{cb}, wire.NewTxOut(60_000, r0.addr.Script), wire.NewTxOut(40_000, r1.addr.Script),
				wire.NewTxOut(cb.value-100_000-1000, c.payer.Script))
			if err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 1, c.payer.String)
			tx2, err := c.send(ctx, []coin{coinOf(tx1, 0, 60_000, r0), coinOf(tx1, 1, 40_000, r1)},
				wire.NewTxOut(90_000, r2.addr.Script), wire.NewTxOut(9_000, c0.addr.Script))
			if err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 1, c.payer.String)
			tx3, err := c.send(ctx, []coin{coinOf(tx2, 0, 90_000, r2)}, wire.NewTxOut(50_000, c.payer.Script), wire.NewTxOut(39_500, c1.addr.Script))
			if err != nil {
				t.Fatal(err)
			}
			c.node.Generate(t, 1, c.payer.String)
			tracked := map[string]bool{}
			for _, a := range w.Addresses() {
				tracked[a] = true
			}
			acts, err := c.reader.Activity(ctx, chain.Query{From: 102, To: 104, Tracked: tracked})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range acts {
				txs, err := w.Statement(a)
				if err != nil {
					t.Fatal(err)
				}
				for _, tx := range txs {
					got = append(got, fmt.Sprintf("%s %s fee %s internal %v", tx.Tx, tx.Amount, tx.Fee, tx.Internal))
				}
			}
			want := []string{
				tx1 + " 100000 fee 0 internal false",
				tx2 + " 0 fee 1000 internal true",
				tx3 + " -50000 fee 500 internal false",
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("statement\n got %v\nwant %v", got, want)
			}
		})
	}
}
