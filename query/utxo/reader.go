package utxo

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Reader reads one UTXO chain from a node: chain.Reader.
type Reader struct {
	net *Network
	rpc *rpc

	mu      sync.Mutex
	dialect string // "" until asked (dialectOf)
	// index holds the outputs the reader saw paid to tracked addresses,
	// so that their spends are known without reading the transactions
	// that made them. An outpoint not in it is read from the node, all
	// of a block's at once (one batch).
	index map[Outpoint]output
}

var _ chain.Reader = (*Reader)(nil)

// output is a transaction output: the address it pays (canonical, "" for
// none) and its value.
type output struct {
	Address string
	Value   int64
}

// Network is the network the node serves.
func (r *Reader) Network() *Network { return r.net }

// Dialect is DialectBtcd or DialectCore; "" until the node answered once
// (a Reader of Open).
func (r *Reader) Dialect() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dialect
}

// Close closes the reader's idle connections to the node.
func (r *Reader) Close() { r.rpc.close() }

// rawBlock is a block as getblock verbosity 2 writes it.
type rawBlock struct {
	Hash     string  `json:"hash"`
	Height   uint64  `json:"height"`
	Time     int64   `json:"time"`
	Previous string  `json:"previousblockhash"`
	Tx       []rawTx `json:"tx"`    // Core
	RawTx    []rawTx `json:"rawtx"` // btcd
}

type rawTx struct {
	TxID     string `json:"txid"`
	Size     int    `json:"size"`
	VSize    int    `json:"vsize"`
	Weight   int    `json:"weight"`
	LockTime uint32 `json:"locktime"`
	Vin      []struct {
		Coinbase string `json:"coinbase"`
		TxID     string `json:"txid"`
		Vout     uint32 `json:"vout"`
		Sequence uint32 `json:"sequence"`
	} `json:"vin"`
	Vout []struct {
		Value        json.Number `json:"value"`
		N            uint32      `json:"n"`
		ScriptPubKey struct {
			Hex string `json:"hex"`
		} `json:"scriptPubKey"`
	} `json:"vout"`
}

// Detail is the family's document of a transaction (chain.Tx.Detail).
type Detail struct {
	Coinbase bool `json:"coinbase,omitempty"`
	// SpendableFrom is, for a coinbase, the first block that may spend
	// its outputs: its own height plus CoinbaseMaturity (Mature).
	SpendableFrom uint64 `json:"spendable_from,omitempty"`
	// Size is the serialized size in bytes, VSize the virtual size
	// (Weight ÷ 4, rounded up) that fee rates are counted in, Weight the
	// BIP 141 weight.
	Size   int `json:"size"`
	VSize  int `json:"vsize"`
	Weight int `json:"weight"`
	// LockTime is the transaction's nLockTime: a height below 500,000,000,
	// else a Unix time.
	LockTime uint32 `json:"locktime"`
	// RBF is true when an input's sequence is below 0xfffffffe: the
	// transaction signalled that it may be replaced (BIP 125).
	RBF     bool           `json:"rbf"`
	Inputs  []DetailInput  `json:"inputs"`
	Outputs []DetailOutput `json:"outputs"`
}

// signalsRBF reports whether an input of sequence opts its transaction
// into replacement (BIP 125).
func signalsRBF(sequence uint32) bool { return sequence < 0xfffffffe }

// DetailInput is an input: the outpoint it spends, its address and value
// when it paid one ("" and 0 for a coinbase's).
type DetailInput struct {
	Outpoint string `json:"outpoint,omitempty"`
	Address  string `json:"address,omitempty"`
	Value    int64  `json:"value"`
}

// DetailOutput is an output: its address ("" for OP_RETURN and
// non-standard scripts, which pay no one) and value.
type DetailOutput struct {
	N       uint32 `json:"n"`
	Address string `json:"address,omitempty"`
	Value   int64  `json:"value"`
}

// Activity reads blocks q.From to q.To and returns what touched the
// tracked addresses: outputs received (KindReceived, ref txid:vout),
// outputs spent (KindSpent, ref "INPUT:txid:vout", the spending input's
// index and the outpoint), coinbase outputs (KindCoinbase), and the fee
// (KindFee) where one tracked address funded every input: the fee is
// then taken out of its spends in input order, each giving at most its
// whole value, so that an address's moves in a block always add up to its
// balance change and no spend is positive. A spend the fee takes whole (a
// transaction that burns an output to its fee) is no spend move: the fee
// move's ref names it ("INPUT:txid:vout", several space-separated), so
// every outpoint spent is still named once. OP_RETURN and non-standard
// outputs book to no one.
func (r *Reader) Activity(ctx context.Context, q chain.Query) ([]chain.BlockActivity, error) {
	head, err := r.Head(ctx)
	if err != nil {
		return nil, err
	}
	var out []chain.BlockActivity
	// The transactions read for their outputs, for the range's other blocks.
	seen := make(map[string]*rawTx)
	for h := q.From; h <= q.To && h <= head; h++ {
		var hash string
		if err := r.rpc.call(ctx, &hash, "getblockhash", h); err != nil {
			return nil, err
		}
		var b rawBlock
		if err := r.rpc.call(ctx, &b, "getblock", hash, 2); err != nil {
			return nil, err
		}
		if len(out) > 0 && b.Previous != out[len(out)-1].Block.Hash {
			return out, nil
		}
		a, err := r.block(ctx, &b, q.Tracked, seen)
		if err != nil {
			return nil, fmt.Errorf("block %d %s: %w", h, hash, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// block turns one block into its activity.
func (r *Reader) block(ctx context.Context, b *rawBlock, tracked map[string]bool, seen map[string]*rawTx) (chain.BlockActivity, error) {
	a := chain.BlockActivity{Block: query.Block{Number: b.Height, Hash: b.Hash, ParentHash: b.Previous, Time: time.Unix(b.Time, 0).UTC()}}
	txs := b.Tx
	if len(txs) == 0 { // btcd's
		txs = append(txs, b.RawTx...)
	}
	// The outputs of the block itself, for spends within it.
	made := make(map[Outpoint]output)
	for _, tx := range txs {
		for _, o := range tx.Vout {
			v, err := sats(o.Value)
			if err != nil {
				return a, err
			}
			made[Outpoint{tx.TxID, o.N}] = output{Address: r.addressOf(o.ScriptPubKey.Hex), Value: v}
		}
	}
	if len(tracked) == 0 {
		return a, nil
	}
	prev, err := r.prevouts(ctx, txs, made, seen)
	if err != nil {
		return a, err
	}
	for i, tx := range txs {
		coinbase := len(tx.Vin) > 0 && tx.Vin[0].Coinbase != ""
		d := Detail{Coinbase: coinbase, Size: tx.Size, VSize: tx.VSize, Weight: tx.Weight, LockTime: tx.LockTime}
		if coinbase {
			d.SpendableFrom = b.Height + CoinbaseMaturity
		}
		var moves []chain.Move
		var in, outSum int64
		funders := map[string]bool{}
		var spends []int // the moves of the inputs, by index in moves
		// The transfers: each input's spend (at -1 - its index), then each
		// output paid to an address (at its index).
		var transfers []chain.Transfer
		for j, vin := range tx.Vin {
			d.RBF = d.RBF || vin.Coinbase == "" && signalsRBF(vin.Sequence)
			if vin.Coinbase != "" {
				d.Inputs = append(d.Inputs, DetailInput{})
				continue
			}
			op := Outpoint{vin.TxID, vin.Vout}
			po := prev[op]
			in += po.Value
			funders[po.Address] = true
			d.Inputs = append(d.Inputs, DetailInput{Outpoint: op.String(), Address: po.Address, Value: po.Value})
			if po.Address != "" {
				transfers = append(transfers, chain.Transfer{Asset: query.AssetNative, From: po.Address, Amount: query.AmountOf(po.Value),
					Kind: query.KindSpent, Ref: strconv.Itoa(j) + ":" + op.String(), Position: -1 - j})
			}
			if tracked[po.Address] {
				spends = append(spends, len(moves))
				moves = append(moves, chain.Move{Address: po.Address, Asset: query.AssetNative, Kind: query.KindSpent,
					Tx: tx.TxID, Ref: strconv.Itoa(j) + ":" + op.String(), Amount: query.AmountOf(-po.Value)})
			}
		}
		for _, o := range tx.Vout {
			op := Outpoint{tx.TxID, o.N}
			m := made[op]
			outSum += m.Value
			d.Outputs = append(d.Outputs, DetailOutput{N: o.N, Address: m.Address, Value: m.Value})
			if m.Address == "" {
				continue
			}
			kind := query.KindReceived
			if coinbase {
				kind = query.KindCoinbase
			}
			transfers = append(transfers, chain.Transfer{Asset: query.AssetNative, To: m.Address, Amount: query.AmountOf(m.Value), Kind: kind,
				Ref: strconv.FormatUint(uint64(o.N), 10), Position: int(o.N)})
			if tracked[m.Address] && m.Value > 0 {
				moves = append(moves, chain.Move{Address: m.Address, Asset: query.AssetNative, Kind: kind, Tx: tx.TxID, Ref: op.String(), Amount: query.AmountOf(m.Value)})
				r.remember(op, m)
			}
		}
		payer, fee := "", int64(0)
		if !coinbase && len(funders) == 1 {
			for f := range funders {
				payer = f
			}
			if fee = in - outSum; fee > 0 && tracked[payer] && len(spends) > 0 {
				consumed := netFee(moves, spends, fee)
				moves = append(moves, chain.Move{Address: payer, Asset: query.AssetNative, Kind: query.KindFee, Tx: tx.TxID,
					Ref: strings.Join(consumed, " "), Amount: query.AmountOf(-fee)})
			}
			for k := range transfers {
				if transfers[k].Kind != query.KindSpent {
					transfers[k].From = payer
				}
			}
		}
		if len(moves) == 0 {
			continue
		}
		moves = dropZero(moves)
		detail, err := json.Marshal(d)
		if err != nil {
			return a, err
		}
		t := chain.Tx{Hash: tx.TxID, Index: uint(i), Status: query.StatusSuccess, Parties: parties(d), Transfers: transfers, Detail: detail}
		if payer != "" {
			t.Payer, t.Fee = payer, query.AmountOf(fee)
		}
		a.Txs = append(a.Txs, t)
		a.Moves = append(a.Moves, moves...)
	}
	return a, nil
}

// prevouts returns the outputs the block's inputs spend: from the block
// itself, the index, or the node (getrawtransaction of each transaction
// not known, in one batch; seen keeps them for the range's next blocks).
func (r *Reader) prevouts(ctx context.Context, txs []rawTx, made map[Outpoint]output, seen map[string]*rawTx) (map[Outpoint]output, error) {
	out := make(map[Outpoint]output)
	want := map[string]bool{}
	var order []string
	var fromNode []Outpoint
	r.mu.Lock()
	for _, tx := range txs {
		for _, vin := range tx.Vin {
			if vin.Coinbase != "" {
				continue
			}
			op := Outpoint{vin.TxID, vin.Vout}
			if o, ok := made[op]; ok {
				out[op] = o
			} else if o, ok := r.index[op]; ok {
				out[op] = o
				delete(r.index, op)
			} else {
				fromNode = append(fromNode, op)
				if _, ok := seen[op.TxID]; !ok && !want[op.TxID] {
					want[op.TxID] = true
					order = append(order, op.TxID)
				}
			}
		}
	}
	r.mu.Unlock()
	params := make([][]any, len(order))
	for i, id := range order {
		params[i] = []any{id, 1}
	}
	results, err := r.rpc.batch(ctx, "getrawtransaction", params)
	if err != nil {
		return nil, err
	}
	for i, raw := range results {
		tx := new(rawTx)
		if err := json.Unmarshal(raw, tx); err != nil {
			return nil, fmt.Errorf("getrawtransaction %s: %v: %w", order[i], err, query.ErrUnavailable)
		}
		seen[order[i]] = tx
	}
	// Only the outputs spent are decoded: a transaction read may have
	// thousands.
	for _, op := range fromNode {
		tx := seen[op.TxID]
		if int(op.Vout) >= len(tx.Vout) || tx.Vout[op.Vout].N != op.Vout {
			return nil, fmt.Errorf("getrawtransaction %s has no output %d: %w", op.TxID, op.Vout, query.ErrUnavailable)
		}
		o := tx.Vout[op.Vout]
		v, err := sats(o.Value)
		if err != nil {
			return nil, err
		}
		out[op] = output{Address: r.addressOf(o.ScriptPubKey.Hex), Value: v}
	}
	return out, nil
}

func (r *Reader) remember(op Outpoint, o output) {
	r.mu.Lock()
	r.index[op] = o
	r.mu.Unlock()
}

// addressOf is the canonical address an output script pays, "" for none.
func (r *Reader) addressOf(scriptHex string) string {
	script, err := hex.DecodeString(scriptHex)
	if err != nil {
		return ""
	}
	a, err := AddressFromScript(r.net, script)
	if err != nil {
		return ""
	}
	return a.String
}

func parties(d Detail) []string {
	seen := map[string]bool{}
	var out []string
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, in := range d.Inputs {
		add(in.Address)
	}
	for _, o := range d.Outputs {
		add(o.Address)
	}
	return out
}

// netFee takes fee out of the spends (moves[spends[i]], all of the one
// payer) in input order, each giving at most its whole value, so that no
// spend turns positive. It returns the refs of the spends it took whole:
// they are dropped as zero, and the fee move names them instead.
func netFee(moves []chain.Move, spends []int, fee int64) []string {
	left := query.AmountOf(fee)
	var consumed []string
	for _, k := range spends {
		if left.IsZero() {
			break
		}
		take := moves[k].Amount.Neg()
		if take.Cmp(left) > 0 {
			take = left
		}
		moves[k].Amount = moves[k].Amount.Add(take)
		left = left.Sub(take)
		if moves[k].Amount.IsZero() {
			consumed = append(consumed, moves[k].Ref)
		}
	}
	return consumed
}

func dropZero(ms []chain.Move) []chain.Move {
	out := ms[:0]
	for _, m := range ms {
		if !m.Amount.IsZero() {
			out = append(out, m)
		}
	}
	return out
}
