package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
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
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/utxo"
)

// regtest is a btcd or litecoind regtest node addrd serves, with keys
// that sign with btcd's packages: the payer every block pays, and a
// wallet's master key.
type regtest struct {
	t       testing.TB
	dialect string
	node    *testenv.BitcoinNode
	net     *utxo.Network
	payer   *btcec.PrivateKey
	script  []byte // the payer's P2WPKH script
	addr    string
	master  *hdkeychain.ExtendedKey
}

func newRegtest(t testing.TB, dialect string) *regtest {
	t.Helper()
	r := regtestKeys(t, dialect, nil)
	r.start(101)
	return r
}

// regtestKeys is a regtest of dialect's network with its keys, no node
// yet: the payer is payer (nil: a fixed key of its own).
func regtestKeys(t testing.TB, dialect string, payer func(*regtest) *btcec.PrivateKey) *regtest {
	t.Helper()
	name := "bitcoin-regtest"
	if dialect == testenv.DialectCore {
		name = "litecoin-regtest"
	}
	n, err := utxo.NetworkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	r := &regtest{t: t, net: n, dialect: dialect}
	if r.master, err = hdkeychain.NewMaster(bytes.Repeat([]byte{9}, 32), n.Params); err != nil {
		t.Fatal(err)
	}
	if payer != nil {
		r.payer = payer(r)
	} else {
		r.payer, _ = btcec.PrivKeyFromBytes(bytes.Repeat([]byte{1}, 32))
	}
	r.script, r.addr = r.p2wpkh(r.payer.PubKey())
	return r
}

// start starts the node, which mines to the payer, and mines blocks.
func (r *regtest) start(blocks int) {
	if r.dialect == testenv.DialectBtcd {
		r.node = testenv.NewBtcd(r.t, r.addr)
	} else {
		r.node = testenv.NewLitecoind(r.t)
	}
	if blocks > 0 {
		r.node.Generate(r.t, blocks, r.addr)
	}
}

func (r *regtest) p2wpkh(pub *btcec.PublicKey) ([]byte, string) {
	script := append([]byte{0x00, 0x14}, address.Hash160(pub.SerializeCompressed())...)
	a, err := utxo.AddressFromScript(r.net, script)
	if err != nil {
		r.t.Fatal(err)
	}
	return script, a.String
}

// key is the wallet's key at branch/index (wpkh(TPUB/branch/*)).
func (r *regtest) key(branch, index uint32) *btcec.PrivateKey {
	k, err := r.master.Derive(branch)
	if err == nil {
		k, err = k.Derive(index)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	p, err := k.ECPrivKey()
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// coin is an output a key of the test spends.
type coin struct {
	txid   string
	vout   uint32
	value  int64
	key    *btcec.PrivateKey
	script []byte
}

// coinbase is the payer's coinbase output of block height.
func (r *regtest) coinbase(height uint64) coin {
	var hash string
	r.node.MustCall(r.t, &hash, "getblockhash", height)
	var b struct {
		Tx []string `json:"tx"`
	}
	r.node.MustCall(r.t, &b, "getblock", hash, 1)
	return coin{txid: b.Tx[0], value: 50_0000_0000, key: r.payer, script: r.script}
}

// send signs a transaction of coins (P2WPKH) paying outs (address,
// amount) and sends it; it returns its txid.
func (r *regtest) send(coins []coin, outs ...any) string {
	r.t.Helper()
	var txid string
	r.node.MustCall(r.t, &txid, "sendrawtransaction", r.sign(coins, outs...))
	return txid
}

// sign signs a transaction of coins (P2WPKH) paying outs (address,
// amount) and returns it in hex.
func (r *regtest) sign(coins []coin, outs ...any) string {
	r.t.Helper()
	tx := wire.NewMsgTx(2)
	prev := map[wire.OutPoint]*wire.TxOut{}
	for _, c := range coins {
		h, err := chainhash.NewHashFromStr(c.txid)
		if err != nil {
			r.t.Fatal(err)
		}
		op := wire.NewOutPoint(h, c.vout)
		tx.AddTxIn(wire.NewTxIn(op, nil, nil))
		prev[*op] = wire.NewTxOut(c.value, c.script)
	}
	for i := 0; i < len(outs); i += 2 {
		a, err := utxo.ParseAddress(r.net, outs[i].(string))
		if err != nil {
			r.t.Fatal(err)
		}
		tx.AddTxOut(wire.NewTxOut(outs[i+1].(int64), a.Script))
	}
	hashes := txscript.NewTxSigHashes(tx, txscript.NewMultiPrevOutFetcher(prev))
	for i, c := range coins {
		w, err := txscript.WitnessSignature(tx, hashes, i, c.value, c.script, txscript.SigHashAll, c.key, true)
		if err != nil {
			r.t.Fatal(err)
		}
		tx.TxIn[i].Witness = w
	}
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		r.t.Fatal(err)
	}
	return hex.EncodeToString(buf.Bytes())
}

// send is a request with a JSON body.
func (s *served) send(tb testing.TB, key, method, path, body string) (int, []byte) {
	tb.Helper()
	id, secret, _ := strings.Cut(key, ":")
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.SetBasicAuth(id, secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s.check(tb, req, resp, b)
	return resp.StatusCode, b
}

// get reads path into v, failing on anything but a 200.
func (s *served) get(tb testing.TB, key, path string, v any) {
	tb.Helper()
	status, body := s.do(tb, key, "GET", path)
	if status != 200 {
		tb.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		tb.Fatalf("GET %s: %s: %v", path, body, err)
	}
}

type apiBalances struct {
	Balances []struct {
		Asset    string `json:"asset"`
		Symbol   string `json:"symbol"`
		Decimals int    `json:"decimals"`
		Amount   string `json:"amount"`
		Block    uint64 `json:"block_number"`
	} `json:"balances"`
}

func (b apiBalances) native() string {
	for _, x := range b.Balances {
		if x.Asset == query.AssetNative {
			return x.Amount
		}
	}
	return "none"
}

type apiStatement struct {
	Rows []struct {
		Block        uint64     `json:"block_number"`
		Amount       string     `json:"amount"`
		BalanceAfter string     `json:"balance_after"`
		Reconciled   *bool      `json:"reconciled"`
		Difference   string     `json:"difference"`
		Causes       []apiCause `json:"causes"`
	} `json:"balance_changes"`
}

type apiCause struct {
	Kind     string `json:"kind"`
	TxHash   string `json:"transaction_hash"`
	Amount   string `json:"amount"`
	Outpoint string `json:"outpoint"`
}

type apiWallet struct {
	Descriptors []struct {
		DerivedCount int `json:"derived_count"`
		NextIndex    int `json:"next_index"`
	} `json:"descriptors"`
	AddressCount int `json:"address_count"`
	Used         int `json:"used_address_count"`
}

// TestServeBitcoin runs addrd serve on a btcd and a litecoind in regtest:
// an address and a descriptor wallet subscribed through the API, a
// payment to both, a spend of the wallet with change, a reorg; the
// balances equal the node's unspent outputs, the statement's rows are
// reconciled at the tip, the wallet extends by its gap limit, the events
// feed has the rows and their retraction.
func TestServeBitcoin(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) { testServeBitcoin(t, dialect) })
	}
}

func testServeBitcoin(t *testing.T, dialect string) {
	ctx := context.Background()
	r := newRegtest(t, dialect)
	chain := map[string]string{testenv.DialectBtcd: "BTCREGTEST", testenv.DialectCore: "LTCREGTEST"}[dialect]
	db := filepath.Join(t.TempDir(), "addrd.db")
	out, _, err := run(t, "apikey", "create", "--name", "alice", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	key := lastLine(out)
	// A UTXO node's balances cost a scan: the fetcher checks them at most
	// once a refresh interval, here shorter than the 2 s between its
	// steps, so that every block's rows are checked.
	s := startServe(t, "--db", db, "--chain", chain+"="+r.node.URL, "--confirmations", "0", "--refresh-interval", "1s")
	s.checkOpenAPI(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("addrd's log:\n%s", s.stderr)
		}
	})
	node, err := utxo.Open(r.node.URL, r.net)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()

	// Bad input first: another network's address, a wallet on a bad checksum.
	if status, body := s.do(t, key, "PUT", "/v1/chains/"+chain+"/addresses/bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"); status != 400 || !strings.Contains(string(body), "this chain is") {
		t.Errorf("a mainnet address on %s: %d %s", chain, status, body)
	}

	bKey, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{2}, 32))
	_, b := r.p2wpkh(bKey.PubKey())
	base := "/v1/chains/" + chain
	if status, body := s.do(t, key, "PUT", base+"/addresses/"+b); status != 200 {
		t.Fatalf("subscribe %s: %d %s", b, status, body)
	}
	tpub, err := r.master.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	const wallet = "/wallets/treasury"
	body := fmt.Sprintf(`{"descriptors":[{"descriptor":"wpkh(%s/0/*)"},{"descriptor":"wpkh(%s/1/*)","internal":true}],"gap_limit":3}`, tpub, tpub)
	if status, resp := s.send(t, key, "PUT", base+wallet, body); status != 200 {
		t.Fatalf("PUT wallet: %d %s", status, resp)
	}
	var addrs struct {
		Addresses []struct {
			Address string `json:"address"`
		} `json:"addresses"`
	}
	s.get(t, key, base+wallet+"/addresses", &addrs)
	if len(addrs.Addresses) != 6 {
		t.Fatalf("wallet addresses %+v, want 3 receive and 3 change", addrs)
	}
	recv2, change0 := addrs.Addresses[2].Address, addrs.Addresses[3].Address
	if _, a := r.p2wpkh(r.key(0, 2).PubKey()); a != recv2 {
		t.Fatalf("the wallet's receive address 2 is %s, the key's %s", recv2, a)
	}

	// The payer pays B 1 coin and the wallet's receive address 2 2 coins.
	cb := r.coinbase(1)
	tx1 := r.send([]coin{cb}, b, int64(1_0000_0000), recv2, int64(2_0000_0000), r.addr, cb.value-3_0000_0000-1000)
	r.node.Generate(t, 1, r.addr)

	var w apiWallet
	eventually(t, 30*time.Second, "the wallet extends past its used address 2", func() bool {
		s.get(t, key, base+wallet, &w)
		return w.Used == 1 && w.Descriptors[0].DerivedCount == 6 && w.Descriptors[0].NextIndex == 3
	})
	var bal apiBalances
	eventually(t, 30*time.Second, "B's balance", func() bool {
		s.get(t, key, base+"/addresses/"+b+"/balances", &bal)
		return bal.native() == "100000000"
	})
	if x := bal.Balances[0]; x.Symbol != r.net.Coin || x.Decimals != 8 {
		t.Errorf("B's balance %+v, want %s with 8 decimals", x, r.net.Coin)
	}
	eventually(t, 30*time.Second, "the wallet's balance", func() bool {
		s.get(t, key, base+wallet+"/balances", &bal)
		return bal.native() == "200000000"
	})

	// The wallet spends its 2 coins: 0.5 to B, the rest but the fee to its
	// change address 0.
	wKey := r.key(0, 2)
	wScript, _ := r.p2wpkh(wKey.PubKey())
	tx2 := r.send([]coin{{txid: tx1, vout: 1, value: 2_0000_0000, key: wKey, script: wScript}}, b, int64(5000_0000), change0, int64(1_4999_0000))
	r.node.Generate(t, 1, r.addr)
	eventually(t, 30*time.Second, "the wallet's balance after its spend", func() bool {
		s.get(t, key, base+wallet+"/balances", &bal)
		return bal.native() == "149990000"
	})
	eventually(t, 30*time.Second, "the change branch extends past change 0", func() bool {
		s.get(t, key, base+wallet, &w)
		return w.Used == 2 && w.Descriptors[1].DerivedCount == 4
	})

	// The wallet moves its change to its receive address 3: internal,
	// nothing but the fee leaves it.
	cKey := r.key(1, 0)
	cScript, _ := r.p2wpkh(cKey.PubKey())
	s.get(t, key, base+wallet+"/addresses", &addrs)
	recv3 := addrs.Addresses[3].Address
	tx3 := r.send([]coin{{txid: tx2, vout: 1, value: 1_4999_0000, key: cKey, script: cScript}}, recv3, int64(1_4998_9000))
	r.node.Generate(t, 1, r.addr)
	eventually(t, 30*time.Second, "the wallet's balance after its internal transfer", func() bool {
		s.get(t, key, base+wallet+"/balances", &bal)
		return bal.native() == "149989000"
	})
	var ws struct {
		Rows []struct {
			BlockNumber  uint64 `json:"block_number"`
			Amount       string `json:"amount"`
			BalanceAfter string `json:"balance_after"`
			Reconciled   *bool  `json:"reconciled"`
			Txs          []struct {
				Hash     string `json:"transaction_hash"`
				Amount   string `json:"amount"`
				Fee      string `json:"fee"`
				Internal bool   `json:"internal"`
			} `json:"transactions"`
		} `json:"balance_changes"`
	}
	s.get(t, key, base+wallet+"/balance_changes", &ws)
	ok := len(ws.Rows) == 3 && len(ws.Rows[0].Txs) == 1 && len(ws.Rows[1].Txs) == 1 && len(ws.Rows[2].Txs) == 1
	if ok {
		r0, r1, r2 := ws.Rows[0], ws.Rows[1], ws.Rows[2]
		t0, t1, t2 := r0.Txs[0], r1.Txs[0], r2.Txs[0]
		ok = r0.Amount == "-1000" && r0.BalanceAfter == "149989000" && t0.Hash == tx3 && t0.Amount == "-1000" && t0.Fee == "1000" && t0.Internal &&
			r1.Amount == "-50010000" && r1.BalanceAfter == "149990000" && t1.Hash == tx2 && t1.Fee == "10000" && !t1.Internal &&
			r2.Amount == "200000000" && r2.BalanceAfter == "200000000" && t2.Hash == tx1 && t2.Fee == "0" && !t2.Internal
	}
	if !ok {
		t.Errorf("the wallet's statement %+v; want the internal transfer %s (fee 1000), the spend %s (0.5 out, fee 10000), the receipt %s", ws.Rows, tx3, tx2, tx1)
	}
	if ok {
		checkWalletBooks(t, s, key, base+wallet, [3]uint64{ws.Rows[2].BlockNumber, ws.Rows[1].BlockNumber, ws.Rows[0].BlockNumber}, tx1, tx2, tx3)
	}
	// The wallet's transactions, two a page: each once, with what it
	// moved across the wallet, the change move internal.
	type sums struct {
		Amount   string `json:"amount"`
		Fee      string `json:"fee"`
		Internal bool   `json:"internal"`
	}
	type walletTx struct {
		Hash   string `json:"hash"`
		Wallet sums   `json:"wallet"`
	}
	var wtxs []walletTx
	for path := base + wallet + "/transactions?page_size=2"; ; {
		var page struct {
			Transactions []walletTx `json:"transactions"`
			Next         string     `json:"next_page_token"`
		}
		s.get(t, key, path, &page)
		wtxs = append(wtxs, page.Transactions...)
		if page.Next == "" || len(wtxs) > 10 {
			break
		}
		path = base + wallet + "/transactions?page_size=2&page_token=" + page.Next
	}
	if got, want := fmt.Sprint(wtxs), fmt.Sprint([]walletTx{
		{tx3, sums{"-1000", "1000", true}},
		{tx2, sums{"-50010000", "10000", false}},
		{tx1, sums{"200000000", "0", false}},
	}); got != want {
		t.Errorf("the wallet's transactions %s, want %s", got, want)
	}
	if rc := ws.Rows[0].Reconciled; rc == nil || !*rc {
		t.Errorf("the wallet's row at the tip: reconciled %v, want checked and equal", rc)
	}

	var st apiStatement
	eventually(t, 30*time.Second, "B's statement", func() bool {
		s.get(t, key, base+"/addresses/"+b+"/balance_changes", &st)
		return len(st.Rows) == 2
	})
	newest, oldest := st.Rows[0], st.Rows[1]
	if oldest.Amount != "100000000" || len(oldest.Causes) != 1 || oldest.Causes[0].Kind != query.KindReceived || oldest.Causes[0].TxHash != tx1 ||
		oldest.Causes[0].Outpoint != tx1+":0" {
		t.Errorf("B's first row %+v, want 1 coin received in %s:0", oldest, tx1)
	}
	if newest.Amount != "50000000" || newest.BalanceAfter != "150000000" || newest.Causes[0].TxHash != tx2 {
		t.Errorf("B's second row %+v, want 0.5 received in %s", newest, tx2)
	}
	if newest.Reconciled == nil || !*newest.Reconciled {
		t.Errorf("B's row at the tip: reconciled %v, difference %s; want it checked against the node and equal", newest.Reconciled, newest.Difference)
	}
	// The wallet's receive address 2 spent its output of tx1 in tx2.
	var spent apiStatement
	s.get(t, key, base+"/addresses/"+recv2+"/balance_changes", &spent)
	if len(spent.Rows) != 2 || !slices.ContainsFunc(spent.Rows[0].Causes, func(c apiCause) bool {
		return c.Kind == query.KindSpent && c.TxHash == tx2 && c.Outpoint == tx1+":1"
	}) {
		t.Errorf("receive address 2's statement %+v, want its spend of %s:1 in %s", spent.Rows, tx1, tx2)
	}
	tip, err := node.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodeBal, err := node.Balances(ctx, tip, []query.BalanceQuery{{Address: b}})
	if err != nil || nodeBal[0].Amount.String() != newest.BalanceAfter {
		t.Errorf("the node's balance of B %+v, %v; the statement's %s", nodeBal, err, newest.BalanceAfter)
	}
	var txs struct {
		Transactions []struct {
			Hash      string `json:"hash"`
			Transfers []struct {
				Symbol   string `json:"symbol"`
				Decimals int    `json:"decimals"`
			} `json:"transfers"`
		} `json:"transactions"`
	}
	s.get(t, key, base+"/addresses/"+b+"/transactions", &txs)
	if len(txs.Transactions) != 2 || txs.Transactions[0].Hash != tx2 || txs.Transactions[1].Hash != tx1 {
		t.Errorf("B's transactions %+v, want %s then %s", txs, tx2, tx1)
	}
	for _, tx := range txs.Transactions {
		for _, tr := range tx.Transfers {
			if tr.Symbol != r.net.Coin || tr.Decimals != 8 {
				t.Errorf("transaction %s: a transfer of %q with %d decimals, want %s with 8", tx.Hash, tr.Symbol, tr.Decimals, r.net.Coin)
			}
		}
	}

	// One transaction, with its family's detail (the OpenAPI document's
	// UtxoTransactionDetail, which checkOpenAPI holds it to).
	var one struct {
		Hash   string `json:"hash"`
		From   string `json:"from"`
		Fee    string `json:"fee"`
		VSize  int    `json:"vsize"`
		Weight int    `json:"weight"`
		RBF    *bool  `json:"rbf"`
		Inputs []struct {
			Outpoint string `json:"outpoint"`
			Value    int64  `json:"value"`
		} `json:"inputs"`
		Outputs []struct {
			Address string `json:"address"`
		} `json:"outputs"`
		Transfers []struct {
			Position int    `json:"log_index"`
			Kind     string `json:"kind"`
			From     string `json:"from"`
			To       string `json:"to"`
			Amount   string `json:"amount"`
		} `json:"transfers"`
	}
	s.get(t, key, base+"/transactions/"+tx2, &one)
	// Each movement its transfer, at its own position: the spend of input
	// 0 at -1, the outputs at their index.
	if got, want := fmt.Sprint(one.Transfers), fmt.Sprint([]struct {
		Position       int
		Kind, From, To string
		Amount         string
	}{{-1, query.KindSpent, recv2, "", "200000000"}, {0, query.KindReceived, recv2, b, "50000000"}, {1, query.KindReceived, recv2, change0, "149990000"}}); got != want {
		t.Errorf("transaction %s's transfers %s, want %s", tx2, got, want)
	}
	if n := storedTransfers(t, db, chain, tx2); n != 3 {
		t.Errorf("transaction %s has %d rows in the transfers table, want one per transfer: 3", tx2, n)
	}
	if one.Hash != tx2 || one.From != recv2 || one.Fee != "10000" || one.VSize == 0 || one.Weight <= 3*one.VSize || one.RBF == nil || *one.RBF ||
		len(one.Inputs) != 1 || one.Inputs[0].Outpoint != tx1+":1" || one.Inputs[0].Value != 2_0000_0000 || len(one.Outputs) != 2 || one.Outputs[1].Address != change0 {
		t.Errorf("transaction %s: %+v", tx2, one)
	}

	// A reorg of depth 2: the blocks of tx2 and tx3 are invalidated and
	// three others mined, with a payment from the payer to B of its own:
	// B's row of tx2 is retracted and B's balance follows the node's.
	var hash string
	r.node.MustCall(t, &hash, "getblockhash", tip-1)
	r.node.MustCall(t, nil, "invalidateblock", hash)
	cb2 := r.coinbase(2)
	r.send([]coin{cb2}, b, int64(7), r.addr, cb2.value-7-1000)
	r.node.Generate(t, 3, r.addr)
	tip, err = node.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodeBal, err = node.Balances(ctx, tip, []query.BalanceQuery{{Address: b}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "B's balance after the reorg", func() bool {
		s.get(t, key, base+"/addresses/"+b+"/balances", &bal)
		return bal.native() == nodeBal[0].Amount.String() && bal.Balances[0].Block == tip
	})
	var feed struct {
		Events []struct {
			Type string `json:"type"`
			Data struct {
				Address string `json:"address"`
			} `json:"data"`
			Wallet *struct {
				Name     string `json:"name"`
				Internal bool   `json:"internal"`
			} `json:"wallet"`
		} `json:"events"`
	}
	s.get(t, key, "/v1/events?page_size=1000", &feed)
	kinds := map[string]int{}
	// The events of the wallet's addresses name it, those of its change
	// branch as internal; B's name no wallet.
	labels := map[string]string{}
	for _, e := range feed.Events {
		if e.Data.Address == b {
			kinds[e.Type]++
		}
		if e.Type == query.EventBalanceChange {
			label := "none"
			if e.Wallet != nil {
				label = fmt.Sprintf("%s internal=%v", e.Wallet.Name, e.Wallet.Internal)
			}
			if prev, ok := labels[e.Data.Address]; ok && prev != label {
				t.Errorf("events of %s labelled %s and %s", e.Data.Address, prev, label)
			}
			labels[e.Data.Address] = label
		}
	}
	if kinds["balance_change"] < 3 || kinds["balance_change_retracted"] < 1 {
		t.Errorf("B's events %v, want its rows and a retraction", kinds)
	}
	name := "chains/" + chain + "/wallets/treasury"
	for a, want := range map[string]string{b: "none", recv2: name + " internal=false", change0: name + " internal=true"} {
		if labels[a] != want {
			t.Errorf("the balance_change events of %s are labelled %q, want %q", a, labels[a], want)
		}
	}
}

// storedTransfers counts the rows of transaction hash in the transfers
// table of the SQLite database at path.
func storedTransfers(t *testing.T, path, chain, hash string) int {
	t.Helper()
	db, err := store.OpenNoMigrate(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.Bun().QueryRowContext(context.Background(), "SELECT count(*) FROM transfers WHERE chain = ? AND hash = ?", chain, hash).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkWalletBooks holds a wallet's statement in ranges and pages, and its
// CSV export, to the wallet's three rows, oldest first at blocks, of
// the receipt tx1, the spend tx2 and the internal transfer tx3.
func checkWalletBooks(t *testing.T, s *served, key, path string, blocks [3]uint64, tx1, tx2, tx3 string) {
	t.Helper()
	type page struct {
		Rows []struct {
			BlockNumber uint64 `json:"block_number"`
		} `json:"balance_changes"`
		Next string `json:"next_page_token"`
	}
	read := func(query string) []uint64 {
		var out []uint64
		for q := query; ; {
			var p page
			s.get(t, key, path+"/balance_changes?"+q, &p)
			for _, r := range p.Rows {
				out = append(out, r.BlockNumber)
			}
			if p.Next == "" || len(out) > 10 {
				return out
			}
			q = query + "&page_token=" + p.Next
		}
	}
	b1, b2, b3 := blocks[0], blocks[1], blocks[2]
	for _, tc := range []struct {
		query string
		want  []uint64
	}{
		{"page_size=2", []uint64{b3, b2, b1}},
		{"page_size=1&order_by=block_number", []uint64{b1, b2, b3}},
		{fmt.Sprintf("page_size=1&start_block=%d", b2), []uint64{b3, b2}},
		{fmt.Sprintf("end_block=%d&order_by=block_number", b2), []uint64{b1, b2}},
		{"start_time=2000-01-01T00:00:00Z&end_time=2000-01-02T00:00:00Z", nil},
		// Finalized by depth on a UTXO chain: 128 blocks below the head,
		// which is not above block 128 here.
		{"end_block=finalized&page_size=1", nil},
	} {
		if got := read(tc.query); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("the wallet's statement ?%s: blocks %v, want %v", tc.query, got, tc.want)
		}
	}
	// The wallet's transactions in the same ranges, by their blocks.
	readTxs := func(query string) []uint64 {
		var out []uint64
		for q := query; ; {
			var p struct {
				Txs []struct {
					BlockNumber uint64 `json:"block_number"`
				} `json:"transactions"`
				Next string `json:"next_page_token"`
			}
			s.get(t, key, path+"/transactions?"+q, &p)
			for _, x := range p.Txs {
				out = append(out, x.BlockNumber)
			}
			if p.Next == "" || len(out) > 10 {
				return out
			}
			q = query + "&page_token=" + p.Next
		}
	}
	for _, tc := range []struct {
		query string
		want  []uint64
	}{
		{"page_size=1&order_by=block_number", []uint64{b1, b2, b3}},
		{fmt.Sprintf("page_size=1&start_block=%d", b2), []uint64{b3, b2}},
		{fmt.Sprintf("end_block=%d", b2), []uint64{b2, b1}},
		{"kind=fee&order_by=block_number", []uint64{b2, b3}},
		{"kind=spent", []uint64{b3, b2}},
		{"kind=received&order_by=block_number", []uint64{b1, b2, b3}},
	} {
		if got := readTxs(tc.query); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("the wallet's transactions ?%s: blocks %v, want %v", tc.query, got, tc.want)
		}
	}
	// A token of one range is refused for another; an address's filter
	// for the wallet's statement.
	var p page
	s.get(t, key, path+"/balance_changes?page_size=1", &p)
	if status, body := s.do(t, key, "GET", path+"/balance_changes?page_size=1&order_by=block_number&page_token="+p.Next); status != 400 || !strings.Contains(string(body), "other query parameters") {
		t.Errorf("a token of another order: %d %s", status, body)
	}
	if status, body := s.do(t, key, "GET", path+"/balance_changes?kind=fee"); status != 400 || !strings.Contains(string(body), "takes no kind") {
		t.Errorf("a kind filter on a wallet's statement: %d %s", status, body)
	}
	// The wallet's balance as of a block, as its statement tells it.
	for n, want := range map[uint64]string{b1 - 1: "0", b1: "200000000", b2: "149990000", b3: "149989000"} {
		var bal apiBalances
		s.get(t, key, fmt.Sprintf("%s/balances?block_number=%d", path, n), &bal)
		if bal.native() != want || bal.Balances[0].Block != n {
			t.Errorf("the wallet's balances at block %d: %+v, want %s", n, bal, want)
		}
	}
	if status, body := s.do(t, key, "GET", path+"/balances?time=2999-01-01T00:00:00Z"); status != 400 || !strings.Contains(string(body), "after the newest stored block") {
		t.Errorf("the wallet's balances after the head: %d %s", status, body)
	}
	// The export: a header, then a row per block oldest first.
	status, body := s.do(t, key, "GET", path+"/balance_changes:export")
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if status != 200 || len(lines) != 4 || !strings.HasPrefix(lines[0], "chain,wallet,block_number,") {
		t.Fatalf("the wallet's export: %d\n%s", status, body)
	}
	for i, want := range []string{
		fmt.Sprintf(",treasury,%d,", b1), ",200000000,2,200000000,2,0," + tx1 + ",,true,0",
		fmt.Sprintf(",treasury,%d,", b2), ",-50010000,-0.5001,149990000,1.4999,10000," + tx2 + ",,true,0",
		fmt.Sprintf(",treasury,%d,", b3), ",-1000,-0.00001,149989000,1.49989,1000,," + tx3 + ",true,0",
	} {
		if line := lines[1+i/2]; !strings.Contains(line, want) {
			t.Errorf("the wallet's export, row %d %q, want it to hold %q", i/2, line, want)
		}
	}
}
