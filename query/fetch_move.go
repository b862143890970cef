package query

// The movements of one block that change a tracked address's balance,
// every kind: a transaction's value, its fee, its internal movements
// (traced), its token transfers, the block's withdrawals and its fee
// recipient's income.

import "math/big"

// move is one movement of a tracked address's balance of one asset.
type move struct {
	address  string
	contract string // "" for the native coin
	cause    Cause  // with a signed amount
}

// blockMoves lists the movements of block b for the tracked addresses,
// from its matched transactions txs (which carry their transfers: value,
// internal and token) and, when the fee recipient is tracked, every
// receipt of the block (all), whose priority fees it earns.
func blockMoves(b SourceBlock, txs []Transaction, all []Receipt, tracked func(string) bool) []move {
	var out []move
	add := func(address, contract, kind, hash string, amount *big.Int) {
		if amount.Sign() == 0 || !tracked(address) {
			return
		}
		out = append(out, move{address: address, contract: contract, cause: Cause{Kind: kind, TxHash: hash, Amount: amount.String()}})
	}
	for _, t := range txs {
		if fee, ok := new(big.Int).SetString(t.Fee, 10); ok {
			add(t.From, "", KindFee, t.Hash, fee.Neg(fee))
		}
		for _, tr := range t.Transfers {
			amount, ok := new(big.Int).SetString(tr.Amount, 10)
			if !ok {
				continue
			}
			kind := tr.Kind
			if kind == "" {
				kind = KindTransaction
				if tr.Asset == AssetERC20 {
					kind = KindToken
				}
			}
			add(tr.From, tr.Contract, kind, t.Hash, new(big.Int).Neg(amount))
			add(tr.To, tr.Contract, kind, t.Hash, amount)
		}
	}
	for _, w := range b.Withdrawals {
		if amount, ok := new(big.Int).SetString(w.Amount, 10); ok {
			add(w.Address, "", KindWithdrawal, "", amount)
		}
	}
	if all != nil && tracked(b.Miner) {
		add(b.Miner, "", KindFeeIncome, "", feeIncome(b, all))
	}
	return out
}

// feeIncome is what block b's fee recipient earns from its transactions:
// each one's gas used times its priority fee, the effective gas price
// above the base fee (which is burnt, as is blob gas).
func feeIncome(b SourceBlock, receipts []Receipt) *big.Int {
	base := new(big.Int)
	if b.BaseFee != "" {
		base.SetString(b.BaseFee, 10)
	}
	sum := new(big.Int)
	for _, r := range receipts {
		price, ok := new(big.Int).SetString(r.EffectiveGasPrice, 10)
		if !ok {
			continue
		}
		tip := price.Sub(price, base)
		if tip.Sign() <= 0 {
			continue
		}
		sum.Add(sum, tip.Mul(tip, new(big.Int).SetUint64(r.GasUsed)))
	}
	return sum
}
