package adversary

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/btcsuite/btcd/btcutil/v2/hdkeychain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/query/utxo"
)

// Keys is how many keys the generator's wallet holds: the first is the
// miner's (btcd pays every coinbase to it), the last is never tracked.
const Keys = 8

// Wallet returns the generator's keys for seed on net and the
// descriptors of all but the last: wpkh(A/0/*), pkh(A/1/*), tr(A/2/*)
// and wsh(sortedmulti(2,B/0/*,C/0/*,D/0/*)) of four accounts, key i
// being descriptor i%4's index i/4 (the first P2WPKH), each checked
// against its descriptor's derivation. The last key, P2WPKH, is of no
// descriptor.
func Wallet(net *utxo.Network, seed uint64) ([]*Key, []*utxo.Descriptor, error) {
	secret := make([]byte, 32)
	binary.BigEndian.PutUint64(secret[24:], seed)
	secret[0] = 1
	master, err := hdkeychain.NewMaster(secret, net.Params)
	if err != nil {
		return nil, nil, err
	}
	accts := make([]*hdkeychain.ExtendedKey, 4)
	xpubs := make([]string, 4)
	for i := range accts {
		if accts[i], err = master.Derive(hdkeychain.HardenedKeyStart + 86 + uint32(i)); err != nil {
			return nil, nil, err
		}
		x, err := accts[i].Neuter()
		if err != nil {
			return nil, nil, err
		}
		xpubs[i] = x.String()
	}
	var descs []*utxo.Descriptor
	for _, f := range []string{"wpkh(%[1]s/0/*)", "pkh(%[1]s/1/*)", "tr(%[1]s/2/*)", "wsh(sortedmulti(2,%[2]s/0/*,%[3]s/0/*,%[4]s/0/*))"} {
		d, err := utxo.ParseDescriptor(net, fmt.Sprintf(f, xpubs[0], xpubs[1], xpubs[2], xpubs[3]))
		if err != nil {
			return nil, nil, err
		}
		descs = append(descs, d)
	}
	child := func(acct *hdkeychain.ExtendedKey, branch, index uint32) ([]byte, error) {
		b, err := acct.Derive(branch)
		if err != nil {
			return nil, err
		}
		c, err := b.Derive(index)
		if err != nil {
			return nil, err
		}
		priv, err := c.ECPrivKey()
		if err != nil {
			return nil, err
		}
		return priv.Serialize(), nil
	}
	kinds := []string{P2WPKH, P2PKH, P2TR, P2WSH}
	var keys []*Key
	for i := range Keys - 1 {
		d, index := i%4, uint32(i/4)
		var secrets [][]byte
		if kinds[d] == P2WSH {
			for _, a := range accts[1:] {
				sk, err := child(a, 0, index)
				if err != nil {
					return nil, nil, err
				}
				secrets = append(secrets, sk)
			}
		} else {
			sk, err := child(accts[0], uint32(d), index)
			if err != nil {
				return nil, nil, err
			}
			secrets = append(secrets, sk)
		}
		k, err := newKey(net, kinds[d], secrets...)
		if err != nil {
			return nil, nil, err
		}
		want, err := descs[d].Derive(index)
		if err != nil || want.String != k.Address.String {
			return nil, nil, fmt.Errorf("key %d (%s): %s, its descriptor derives %s (%v)", i, kinds[d], k.Address.String, want.String, err)
		}
		keys = append(keys, k)
	}
	secret[1] = 2
	k, err := newKey(net, P2WPKH, secret)
	if err != nil {
		return nil, nil, err
	}
	return append(keys, k), descs, nil
}

// Generator makes random activity on a regtest node from a seed.
type Generator struct {
	node    Node
	dialect string
	net     *utxo.Network
	rand    *rand.Rand
	keys    []*Key
	byAddr  map[string]*Key
	checker *Checker
	// pending are outputs to the wallet made since the last block, and
	// spent the outputs spent since (btcd's gettxout does not say).
	pending []Coin
	spent   map[utxo.Outpoint]bool
	// Replaced are the transactions replaced in the mempool (RBF) that
	// no block holds.
	Replaced map[string]bool
	// Stats counts what the generator did, by action.
	Stats map[string]int
	// Premature are the node's refusals of a coinbase spend that
	// utxo.Mature said could be spent: each a violation.
	Premature []string
	// Log is what each step did, for a failure's report.
	Log []string
}

// NewGenerator makes a generator over node (of dialect), its wallet
// keys, with rand; checker gives it the node's view of the coins.
func NewGenerator(node Node, dialect string, keys []*Key, r *rand.Rand, checker *Checker) *Generator {
	g := &Generator{node: node, dialect: dialect, net: checker.reader.Network(), rand: r, keys: keys, byAddr: map[string]*Key{}, checker: checker,
		Replaced: map[string]bool{}, Stats: map[string]int{}, spent: map[utxo.Outpoint]bool{}}
	for _, k := range keys {
		g.byAddr[k.Address.String] = k
	}
	return g
}

// Mine mines n blocks, paying their coinbase to a random wallet key on
// Core (btcd pays the one it was started with).
func (g *Generator) Mine(ctx context.Context, n int) error {
	return g.mine(ctx, n, g.keys[g.rand.IntN(len(g.keys))].Address.String)
}

// mine mines n blocks paying to (on Core).
func (g *Generator) mine(ctx context.Context, n int, to string) error {
	if n == 0 {
		return nil
	}
	var hashes []string
	var err error
	if g.dialect == Btcd {
		err = g.node.Call(ctx, &hashes, "generate", n)
	} else {
		err = g.node.Call(ctx, &hashes, "generatetoaddress", n, to)
	}
	if err != nil {
		return fmt.Errorf("mine %d: %w", n, err)
	}
	g.pending, g.spent = nil, map[utxo.Outpoint]bool{}
	for id := range g.Replaced {
		// A replaced transaction a block holds after all (a reorg
		// brought it back) is no longer one never to book.
		var tx struct {
			BlockHash string `json:"blockhash"`
		}
		if err := g.node.Call(ctx, &tx, "getrawtransaction", id, 1); err == nil && tx.BlockHash != "" {
			delete(g.Replaced, id)
		}
	}
	return nil
}

// Step makes one step: a few random transactions, then a block or a
// reorg.
func (g *Generator) Step(ctx context.Context) error {
	if err := g.transactions(ctx, 1+g.rand.IntN(4)); err != nil {
		return err
	}
	if g.rand.IntN(5) == 0 {
		return g.reorg(ctx)
	}
	g.Stats["block"]++
	return g.Mine(ctx, 1+g.rand.IntN(2))
}

// transactions sends n random transactions of the coins the node says
// are spendable.
func (g *Generator) transactions(ctx context.Context, n int) error {
	coins, err := g.coins(ctx)
	if err != nil {
		return err
	}
	for range n {
		if err := g.transaction(ctx, coins); err != nil {
			return err
		}
	}
	return nil
}

// coins are the wallet's spendable confirmed coins, by the node.
func (g *Generator) coins(ctx context.Context) (map[string][]Coin, error) {
	addrs := make([]string, len(g.keys))
	for i, k := range g.keys {
		addrs[i] = k.Address.String
	}
	v, err := nodeView(ctx, g.node, g.dialect, g.net, addrs, g.checker.coinbase)
	if err != nil {
		return nil, err
	}
	out := map[string][]Coin{}
	for a, us := range v.unspent {
		for _, u := range us {
			if !u.Coinbase || utxo.Mature(u.Height, v.tip) {
				out[a] = append(out[a], u)
			}
		}
		slices.SortFunc(out[a], func(x, y Coin) int { return strings.Compare(x.Outpoint.String(), y.Outpoint.String()) })
	}
	return out, nil
}

// take picks up to n coins of addr not yet spent (in the mempool
// either), from coins and the outputs made since the last block.
func (g *Generator) take(ctx context.Context, coins map[string][]Coin, addr string, n int) ([]Coin, error) {
	var out []Coin
	pool := append(slices.Clone(coins[addr]), g.pendingOf(addr)...)
	g.rand.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	for _, c := range pool {
		if len(out) == n {
			break
		}
		if g.spent[c.Outpoint] {
			continue
		}
		var o *struct {
			Value float64 `json:"value"`
		}
		if err := g.node.Call(ctx, &o, "gettxout", c.Outpoint.TxID, c.Outpoint.Vout, true); err != nil {
			return nil, err
		}
		if o != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

func (g *Generator) pendingOf(addr string) []Coin {
	var out []Coin
	for _, c := range g.pending {
		if c.Address == addr {
			out = append(out, c)
		}
	}
	return out
}

// Kinds of transaction the generator makes.
var kinds = []string{"pay", "pay", "pay", "many", "consolidate", "shared", "dust", "burn", "rbf", "chain"}

// transaction sends one random transaction of the wallet's coins.
func (g *Generator) transaction(ctx context.Context, coins map[string][]Coin) error {
	kind := kinds[g.rand.IntN(len(kinds))]
	owner := g.keys[g.rand.IntN(len(g.keys))].Address.String
	if rich := slices.Sorted(maps.Keys(coins)); len(rich) > 0 && g.rand.IntN(5) > 0 {
		owner = rich[g.rand.IntN(len(rich))]
	}
	n := 1 + g.rand.IntN(3)
	switch kind {
	case "consolidate":
		n = 2 + g.rand.IntN(99)
	case "burn":
		n = 1
	}
	var in []Coin
	var err error
	if kind == "chain" {
		in = g.pendingOf(owner)
		if len(in) > 1 {
			in = in[:1]
		}
	} else if in, err = g.take(ctx, coins, owner, n); err != nil {
		return err
	}
	if kind == "shared" {
		other, err := g.take(ctx, coins, g.keys[g.rand.IntN(len(g.keys))].Address.String, 1)
		if err != nil {
			return err
		}
		for _, o := range other {
			if !slices.ContainsFunc(in, func(c Coin) bool { return c.Outpoint == o.Outpoint }) {
				in = append(in, o)
			}
		}
	}
	if kind == "burn" && len(in) == 1 && in[0].Value > 1_000_000 {
		kind = "pay" // burn only what a fee can be: dust and small change
	}
	if len(in) == 0 {
		g.Stats["no coins"]++
		return nil
	}
	var total int64
	for _, c := range in {
		total += c.Value
	}
	fee := int64(300 + g.rand.IntN(3000))
	if kind == "burn" {
		fee = total
	}
	if total-fee < 0 {
		g.Stats["too small"]++
		return nil
	}
	outs := g.outputs(kind, total-fee, owner)
	seq := uint32(wire.MaxTxInSequenceNum)
	if kind == "rbf" {
		seq = wire.MaxTxInSequenceNum - 2 // BIP 125: replaceable
	}
	txid, err := g.send(ctx, in, outs, seq)
	if err != nil && (strings.Contains(err.Error(), "premature") || strings.Contains(err.Error(), "maturity")) {
		g.Premature = append(g.Premature, err.Error())
	}
	if err != nil {
		g.Stats["rejected "+kind]++
		g.Log = append(g.Log, fmt.Sprintf("%s rejected: %v", kind, err))
		return nil
	}
	for _, c := range in {
		g.spent[c.Outpoint] = true
		g.Stats["input "+g.byAddr[c.Address].Kind]++
		if c.Coinbase {
			g.Stats["input coinbase"]++
		}
	}
	if len(in) >= 50 {
		g.Stats["50+ inputs"]++
	}
	g.Stats[kind]++
	g.Log = append(g.Log, fmt.Sprintf("%s %s: %d in, %d out, fee %d", kind, txid, len(in), len(outs), fee))
	if kind == "rbf" {
		bump := fee + 2000 + int64(g.rand.IntN(2000))
		if total-bump > 0 {
			outs2 := g.outputs("pay", total-bump, owner)
			txid2, err := g.send(ctx, in, outs2, seq)
			if err != nil {
				g.Stats["rejected replacement"]++
				g.Log = append(g.Log, fmt.Sprintf("replacement rejected: %v", err))
			} else {
				g.Stats["replaced"]++
				g.Replaced[txid] = true
				g.forget(txid)
				g.remember(txid2, outs2)
				g.Log = append(g.Log, fmt.Sprintf("replaced by %s", txid2))
				return nil
			}
		}
	}
	g.remember(txid, outs)
	return nil
}

// outputs splits value among random outputs for kind, change back to
// owner or to another key; OP_RETURN beside them at times.
func (g *Generator) outputs(kind string, value int64, owner string) []*wire.TxOut {
	var outs []*wire.TxOut
	if kind == "burn" || g.rand.IntN(6) == 0 {
		// 40 bytes: Core refuses a transaction under 82 bytes.
		script, _ := txscript.NullDataScript([]byte(fmt.Sprintf("wharf adversary %024d", g.rand.Uint32())))
		outs = append(outs, wire.NewTxOut(0, script))
	}
	if kind == "burn" || value == 0 {
		return outs
	}
	n := 1 + g.rand.IntN(2)
	switch kind {
	case "many":
		n = 5 + g.rand.IntN(40)
	case "consolidate":
		n = 1
	}
	if kind == "dust" {
		for range 1 + g.rand.IntN(4) {
			d := int64(546 + g.rand.IntN(500))
			if d >= value {
				break
			}
			outs = append(outs, wire.NewTxOut(d, g.keys[g.rand.IntN(len(g.keys))].Address.Script))
			value -= d
		}
	}
	for i := range n {
		share := value / int64(n-i)
		if i < n-1 && share > 2 {
			share = share/2 + g.rand.Int64N(share)
		}
		if i == n-1 {
			share = value
		}
		if share <= 0 {
			break
		}
		to := g.keys[g.rand.IntN(len(g.keys))].Address
		if i == n-1 && g.rand.IntN(2) == 0 {
			to = g.byAddr[owner].Address // change
		}
		outs = append(outs, wire.NewTxOut(share, to.Script))
		value -= share
	}
	g.rand.Shuffle(len(outs), func(i, j int) { outs[i], outs[j] = outs[j], outs[i] })
	return outs
}

// send signs and sends a transaction of in to outs.
func (g *Generator) send(ctx context.Context, in []Coin, outs []*wire.TxOut, seq uint32) (string, error) {
	tx := wire.NewMsgTx(2)
	for _, c := range in {
		h, err := chainhash.NewHashFromStr(c.Outpoint.TxID)
		if err != nil {
			return "", err
		}
		txin := wire.NewTxIn(wire.NewOutPoint(h, c.Outpoint.Vout), nil, nil)
		txin.Sequence = seq
		tx.AddTxIn(txin)
	}
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	raw, err := sign(tx, in, g.byAddr)
	if err != nil {
		return "", err
	}
	// No ceiling on the fee: a burn pays all.
	var noLimit any = 0
	if g.dialect == Btcd {
		noLimit = true
	}
	var txid string
	err = g.node.Call(ctx, &txid, "sendrawtransaction", raw, noLimit)
	return txid, err
}

func (g *Generator) remember(txid string, outs []*wire.TxOut) {
	for i, o := range outs {
		a, err := utxo.AddressFromScript(g.net, o.PkScript)
		if err != nil || g.byAddr[a.String] == nil {
			continue
		}
		g.pending = append(g.pending, Coin{Outpoint: utxo.Outpoint{TxID: txid, Vout: uint32(i)}, Address: a.String, Value: o.Value})
	}
}

func (g *Generator) forget(txid string) {
	g.pending = slices.DeleteFunc(g.pending, func(c Coin) bool { return c.Outpoint.TxID == txid })
}

// reorg replaces the newest 1 to 6 blocks: invalidateblock, a
// transaction of the new branch's own and depth+1 blocks; or, a third of
// the time, fewer blocks and reconsiderblock, which brings the first
// branch back.
func (g *Generator) reorg(ctx context.Context) error {
	var tip uint64
	if err := g.node.Call(ctx, &tip, "getblockcount"); err != nil {
		return err
	}
	depth := 1 + g.rand.IntN(6)
	if tip < uint64(depth)+utxo.CoinbaseMaturity+2 {
		g.Stats["block"]++
		return g.Mine(ctx, 1)
	}
	var hash string
	if err := g.node.Call(ctx, &hash, "getblockhash", tip+1-uint64(depth)); err != nil {
		return err
	}
	if err := g.node.Call(ctx, nil, "invalidateblock", hash); err != nil {
		return fmt.Errorf("invalidateblock %s: %w", hash, err)
	}
	g.pending, g.spent = nil, map[utxo.Outpoint]bool{}
	// A transaction of the branch's own, so that no block of it is one
	// of the old branch again.
	if err := g.transactions(ctx, 1+g.rand.IntN(2)); err != nil {
		return err
	}
	g.Log = append(g.Log, fmt.Sprintf("reorg of depth %d at %d", depth, tip+1-uint64(depth)))
	if depth > 1 && g.rand.IntN(3) == 0 {
		if err := g.mine(ctx, g.rand.IntN(depth), g.nowhere()); err != nil {
			return err
		}
		g.Stats["reorg back"]++
		if err := g.node.Call(ctx, nil, "reconsiderblock", hash); err != nil {
			return fmt.Errorf("reconsiderblock %s: %w", hash, err)
		}
		return nil
	}
	g.Stats[fmt.Sprintf("reorg %d", depth)]++
	return g.mine(ctx, depth+1, g.nowhere())
}

// nowhere is a P2WPKH address of no key, new each call: Core's blocks
// of a new branch pay it, so that none is a block invalidated before
// (the same payee, transactions and second would make the same block,
// which Core refuses as invalid).
func (g *Generator) nowhere() string {
	script := make([]byte, 22)
	script[1] = 20
	binary.BigEndian.PutUint64(script[2:], g.rand.Uint64())
	binary.BigEndian.PutUint64(script[10:], g.rand.Uint64())
	a, err := utxo.AddressFromScript(g.net, script)
	if err != nil {
		panic(err) // a P2WPKH script is an address
	}
	return a.String
}
