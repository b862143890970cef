package adversary

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wharfhq/wharf/query/utxo"
)

// Node is a node's JSON-RPC: testenv.BitcoinNode's Call.
type Node interface {
	// Call makes one call and decodes its result into result (nil:
	// ignore it).
	Call(ctx context.Context, result any, method string, params ...any) error
}

// Dialects of the node, as utxo.Reader.Dialect says.
const (
	Btcd = utxo.DialectBtcd
	Core = utxo.DialectCore
)

// view is what the node says of the tracked addresses at its tip.
type view struct {
	tip  uint64
	hash string
	// unspent are each address's unspent outputs in blocks.
	unspent map[string][]Coin
	// txs are the transactions of each address in blocks (btcd's
	// address index only; nil on Core).
	txs map[string]map[string]bool
}

// nodeView reads the node's own view of addrs: on Core its UTXO set
// (scantxoutset, then gettxout once per transaction for whether it is a
// coinbase), on btcd its address index (searchrawtransactions: the
// outputs paying an address less those its transactions spend).
func nodeView(ctx context.Context, n Node, dialect string, net *utxo.Network, addrs []string, coinbase map[string]bool) (*view, error) {
	v := &view{unspent: map[string][]Coin{}}
	if err := n.Call(ctx, &v.tip, "getblockcount"); err != nil {
		return nil, err
	}
	if err := n.Call(ctx, &v.hash, "getblockhash", v.tip); err != nil {
		return nil, err
	}
	if dialect == Core {
		return v, coreView(ctx, n, net, addrs, coinbase, v)
	}
	v.txs = map[string]map[string]bool{}
	for _, a := range addrs {
		if err := btcdView(ctx, n, net, a, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func coreView(ctx context.Context, n Node, net *utxo.Network, addrs []string, coinbase map[string]bool, v *view) error {
	descs := make([]string, len(addrs))
	for i, a := range addrs {
		descs[i] = "addr(" + a + ")"
	}
	var scan struct {
		Success  bool   `json:"success"`
		Height   uint64 `json:"height"`
		Unspents []struct {
			TxID         string      `json:"txid"`
			Vout         uint32      `json:"vout"`
			ScriptPubKey string      `json:"scriptPubKey"`
			Amount       json.Number `json:"amount"`
			Height       uint64      `json:"height"`
		} `json:"unspents"`
	}
	if err := n.Call(ctx, &scan, "scantxoutset", "start", descs); err != nil {
		return err
	}
	if !scan.Success || scan.Height != v.tip {
		return fmt.Errorf("scantxoutset: success %v at height %d, the tip is %d", scan.Success, scan.Height, v.tip)
	}
	for _, u := range scan.Unspents {
		a, err := addressOf(net, u.ScriptPubKey)
		if err != nil {
			return err
		}
		cb, ok := coinbase[u.TxID]
		if !ok {
			var out struct {
				Coinbase bool `json:"coinbase"`
			}
			if err := n.Call(ctx, &out, "gettxout", u.TxID, u.Vout, false); err != nil {
				return err
			}
			cb = out.Coinbase
			coinbase[u.TxID] = cb
		}
		value, err := sats(u.Amount)
		if err != nil {
			return err
		}
		v.unspent[a] = append(v.unspent[a], Coin{Outpoint: utxo.Outpoint{TxID: u.TxID, Vout: u.Vout}, Address: a, Value: value, Height: u.Height, Coinbase: cb})
	}
	return nil
}

// searchPage is how many transactions one searchrawtransactions reads.
const searchPage = 500

func btcdView(ctx context.Context, n Node, net *utxo.Network, addr string, v *view) error {
	made := map[utxo.Outpoint]Coin{}
	spent := map[utxo.Outpoint]bool{}
	txs := map[string]bool{}
	for skip := 0; ; skip += searchPage {
		var page []struct {
			TxID          string `json:"txid"`
			Confirmations uint64 `json:"confirmations"`
			BlockHash     string `json:"blockhash"`
			Vin           []struct {
				Coinbase string `json:"coinbase"`
				TxID     string `json:"txid"`
				Vout     uint32 `json:"vout"`
			} `json:"vin"`
			Vout []struct {
				Value        json.Number `json:"value"`
				N            uint32      `json:"n"`
				ScriptPubKey struct {
					Hex string `json:"hex"`
				} `json:"scriptPubKey"`
			} `json:"vout"`
		}
		err := n.Call(ctx, &page, "searchrawtransactions", addr, 1, skip, searchPage, 0)
		if err != nil && strings.Contains(err.Error(), "No information available about address") {
			break
		}
		if err != nil {
			return err
		}
		for _, tx := range page {
			if tx.BlockHash == "" || tx.Confirmations == 0 {
				continue // in the mempool
			}
			txs[tx.TxID] = true
			height := v.tip + 1 - tx.Confirmations
			cb := len(tx.Vin) > 0 && tx.Vin[0].Coinbase != ""
			for _, in := range tx.Vin {
				if in.Coinbase == "" {
					spent[utxo.Outpoint{TxID: in.TxID, Vout: in.Vout}] = true
				}
			}
			for _, o := range tx.Vout {
				a, err := addressOf(net, o.ScriptPubKey.Hex)
				if err != nil || a != addr {
					continue
				}
				value, err := sats(o.Value)
				if err != nil {
					return err
				}
				op := utxo.Outpoint{TxID: tx.TxID, Vout: o.N}
				made[op] = Coin{Outpoint: op, Address: addr, Value: value, Height: height, Coinbase: cb}
			}
		}
		if len(page) < searchPage {
			break
		}
	}
	v.txs[addr] = txs
	for op, c := range made {
		if !spent[op] {
			v.unspent[addr] = append(v.unspent[addr], c)
		}
	}
	return nil
}

// addressOf is the address a script (hex) pays.
func addressOf(net *utxo.Network, scriptHex string) (string, error) {
	b, err := hex.DecodeString(scriptHex)
	if err != nil {
		return "", fmt.Errorf("script %q: %w", scriptHex, err)
	}
	a, err := utxo.AddressFromScript(net, b)
	if err != nil {
		return "", err
	}
	return a.String, nil
}

// sats is a coin amount as the node writes it in units of 10^-8.
func sats(n json.Number) (int64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, fmt.Errorf("amount %q: %w", n, err)
	}
	return int64(math.Round(f * 1e8)), nil
}
