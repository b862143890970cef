package utxo

import (
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// CoinbaseMaturity is how many confirmations a coinbase output needs
// before it can be spent (Bitcoin's and Litecoin's consensus).
const CoinbaseMaturity = 100

// Mature reports whether a coinbase output made in block height can be
// spent once tip is the newest block: a transaction of the next block
// may spend it when the output has CoinbaseMaturity confirmations
// (tip-height+1), as the node's consensus says. Bitcoin Core's wallet
// waits one block more for its own coins; the node accepts the spend a
// block before.
func Mature(height, tip uint64) bool {
	return tip >= height && tip-height+1 >= CoinbaseMaturity
}

// Balance is an address's balance at a tip, split by what it can spend.
type Balance struct {
	// Total is the sum of its unspent outputs.
	Total query.Amount
	// Immature is the part of Total in coinbase outputs not yet Mature.
	Immature query.Amount
}

// Spendable is Total less Immature.
func (b Balance) Spendable() query.Amount { return b.Total.Sub(b.Immature) }

// BalanceAt sums addr's moves in blocks (the canonical chain's, in order)
// up to tip. A coinbase output cannot be spent before it is mature, so
// every coinbase move of the newest CoinbaseMaturity-1 blocks is still
// unspent and is immature: no outpoint needs matching.
func BalanceAt(blocks []chain.BlockActivity, addr string, tip uint64) Balance {
	var b Balance
	for _, a := range blocks {
		if a.Block.Number > tip {
			break
		}
		for _, m := range a.Moves {
			if m.Address != addr || m.Asset != query.AssetNative {
				continue
			}
			b.Total = b.Total.Add(m.Amount)
			if m.Kind == query.KindCoinbase && !Mature(a.Block.Number, tip) {
				b.Immature = b.Immature.Add(m.Amount)
			}
		}
	}
	return b
}
