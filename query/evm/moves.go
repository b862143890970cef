package evm

// The movements of one block that change a tracked address's balance,
// every kind: a transaction's value, its fee, its internal movements
// (traced), its token transfers, the block's withdrawals and its fee
// recipient's income.

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"

	"github.com/wharfhq/wharf/query"
)

// move is one movement of a tracked address's balance of one asset.
type move struct {
	address  string
	asset    string
	contract string      // "" for the native coin, else a holding key
	cause    query.Cause // with a signed amount and its Ref (transferRef, withdrawalRef...)
}

// References of the causes of EVM movements (chain.Move.Ref): the fee,
// the mint and the value of a transaction, a call path, a log index, a
// withdrawal's index and validator, a block's fee income.
const (
	refFee       = "fee"
	refMint      = "mint"
	refValue     = "value"
	refFeeIncome = "fee-income"
)

// transferRef is the reference of a transfer's movement: its log, its
// call path or the transaction's value.
func transferRef(tr query.Transfer) string {
	switch {
	case tr.Position >= 0:
		return "log:" + strconv.Itoa(tr.Position)
	case tr.CallPath != "":
		return "call:" + tr.CallPath
	}
	return refValue
}

// withdrawalRef is the reference of a withdrawal's movement.
func withdrawalRef(w query.Withdrawal) string { return query.WithdrawalRef(w.Index, w.Validator) }

// blockMoves lists the movements of block b for the tracked addresses,
// from its matched transactions txs (which carry their transfers: value,
// internal and token) and, when the fee recipient is tracked, every
// receipt of the block (all), whose priority fees it earns.
func blockMoves(b query.SourceBlock, txs []query.Transaction, all []query.Receipt, tracked func(string) bool) []move {
	var out []move
	add := func(address, asset, contract, kind, hash, ref string, amount query.Amount) {
		if amount.IsZero() || !tracked(address) {
			return
		}
		out = append(out, move{address: address, asset: asset, contract: contract,
			cause: query.Cause{Kind: kind, TxHash: hash, Amount: amount, Ref: ref}})
	}
	for _, t := range txs {
		// A deposit's mint comes before its call, and stays when it fails.
		add(t.From, query.AssetNative, "", query.KindMint, t.Hash, refMint, t.Mint)
		add(t.From, query.AssetNative, "", query.KindFee, t.Hash, refFee, t.Fee.Neg())
		if p := t.FeeParts; p.Split() && len(out) > 0 && out[len(out)-1].cause.Kind == query.KindFee {
			out[len(out)-1].cause.Fee = &p
		}
		for _, tr := range t.Transfers {
			if tr.Error != "" {
				continue // a reverted call: listed, moving nothing
			}
			kind := tr.Kind
			if kind == "" {
				kind = query.KindTransaction
				if query.IsToken(tr.Asset) {
					kind = query.KindToken
				}
			}
			key, ref := tr.Holding(), transferRef(tr)
			add(tr.From, tr.Asset, key, kind, t.Hash, ref, tr.Amount.Neg())
			add(tr.To, tr.Asset, key, kind, t.Hash, ref, tr.Amount)
		}
	}
	for _, w := range b.Withdrawals {
		add(w.Address, query.AssetNative, "", query.KindWithdrawal, "", withdrawalRef(w), w.Amount)
	}
	if all != nil && tracked(b.Miner) {
		add(b.Miner, query.AssetNative, "", query.KindFeeIncome, "", refFeeIncome, feeIncome(b, all))
	}
	return out
}

// feeIncome is what block b's fee recipient earns from its transactions:
// each one's gas used times its priority fee, the effective gas price
// above the base fee (which is burnt, as is blob gas).
func feeIncome(b query.SourceBlock, receipts []query.Receipt) query.Amount {
	base := b.BaseFee.Big()
	sum := new(big.Int)
	for _, r := range receipts {
		tip := r.EffectiveGasPrice.Big()
		if tip.Sub(tip, base).Sign() <= 0 {
			continue
		}
		sum.Add(sum, tip.Mul(tip, new(big.Int).SetUint64(r.GasUsed)))
	}
	return query.AmountFromBig(sum)
}

// logsByBlock groups Transfer logs by block number.
func logsByBlock(logs []query.TokenTransfer) map[uint64][]query.TokenTransfer {
	out := make(map[uint64][]query.TokenTransfer)
	for _, l := range logs {
		out[l.BlockNumber] = append(out[l.BlockNumber], l)
	}
	return out
}

// matched is what of one block touches tracked addresses.
type matched struct {
	hashes  []string                         // matched transactions, in block order
	logs    map[string][]query.TokenTransfer // the Transfer logs of each matched transaction
	moves   map[string][]query.InternalMove  // the internal movements of each matched transaction
	touched []string                         // tracked addresses touched, without duplicates
	miner   bool                             // the block's fee recipient is tracked
}

// matchBlock finds the transactions of b that touch a tracked address:
// as sender, recipient, created contract, or party of one of its Transfer
// logs or internal movements; and the tracked addresses its withdrawals
// and fee income go to. Its cost is that of the block: one map look-up
// per party, whatever the number of tracked addresses.
func matchBlock(b query.SourceBlock, logs []query.TokenTransfer, moves []query.InternalMove, tracked func(string) bool) matched {
	m := matched{logs: make(map[string][]query.TokenTransfer), moves: make(map[string][]query.InternalMove)}
	hit := make(map[string]bool)
	seen := make(map[string]bool)
	touch := func(a string) bool {
		if a == "" || !tracked(a) {
			return false
		}
		if !seen[a] {
			seen[a] = true
			m.touched = append(m.touched, a)
		}
		return true
	}
	for _, l := range logs {
		if l.BlockHash != b.Hash {
			continue
		}
		m.logs[l.TxHash] = append(m.logs[l.TxHash], l)
		f, t := touch(l.From), touch(l.To)
		if f || t {
			hit[l.TxHash] = true
		}
	}
	for _, mv := range moves {
		m.moves[mv.TxHash] = append(m.moves[mv.TxHash], mv)
		if mv.Error != "" {
			continue // moved nothing: listed if the transaction is
		}
		f, t := touch(mv.From), touch(mv.To)
		if f || t {
			hit[mv.TxHash] = true
		}
	}
	for _, tx := range b.Txs {
		if tx.System {
			continue // the chain's own bookkeeping: no one's movement
		}
		f, t, c := touch(tx.From), touch(tx.To), touch(tx.Created)
		if f || t || c || hit[tx.Hash] {
			m.hashes = append(m.hashes, tx.Hash)
		}
	}
	for _, w := range b.Withdrawals {
		touch(w.Address)
	}
	m.miner = touch(b.Miner)
	return m
}

// transactions builds the matched transactions of b from their receipts
// (in the order of m.hashes): the native value as a transfer with log
// index -1 when it moved, its internal movements (-2, -3..., the
// reverted ones included, with their error) and the token transfers of
// the transaction.
func (m matched) transactions(b query.SourceBlock, receipts []query.Receipt) []query.Transaction {
	byHash := make(map[string]query.SourceTx, len(m.hashes))
	for _, tx := range b.Txs {
		byHash[tx.Hash] = tx
	}
	out := make([]query.Transaction, 0, len(m.hashes))
	for i, h := range m.hashes {
		tx := byHash[h]
		t := query.Transaction{
			Hash:        h,
			BlockNumber: b.Number,
			BlockHash:   b.Hash,
			BlockTime:   b.Time,
			Index:       tx.Index,
			Status:      receipts[i].Status,
			From:        tx.From,
			To:          tx.To,
			Value:       tx.Value,
			Fee:         receipts[i].Fee,
			FeeParts:    receipts[i].FeeParts,
			Mint:        tx.Mint,
		}
		d := TxDetail{
			Nonce:             tx.Nonce,
			Type:              tx.Type,
			GasLimit:          tx.GasLimit,
			GasUsed:           receipts[i].GasUsed,
			EffectiveGasPrice: receipts[i].EffectiveGasPrice,
			Method:            tx.Method,
			Input:             "0x" + hex.EncodeToString(tx.Input),
			CumulativeGasUsed: receipts[i].CumulativeGasUsed,
		}
		if t.Status == query.StatusSuccess {
			d.Created = tx.Created
		}
		if t.Status == query.StatusSuccess && !tx.Value.IsZero() {
			to, kind := tx.To, query.KindTransaction
			if to == "" {
				to, kind = tx.Created, query.KindCreation
			}
			t.Transfers = append(t.Transfers, query.Transfer{Position: -1, Asset: query.AssetNative, From: tx.From, To: to, Amount: tx.Value, Kind: kind})
		}
		internal := 0
		for _, mv := range m.moves[h] {
			if mv.CallPath == "" {
				if t.Status == query.StatusFailed {
					d.RevertReason = mv.Error // the top-level call
				}
				continue
			}
			if t.Status != query.StatusSuccess && mv.Error == "" {
				continue // not traced as failed: trust the receipt
			}
			if mv.Error == "" && mv.Kind == query.KindCreation && d.Created == "" {
				d.Created = mv.To
			}
			if mv.Amount.IsZero() {
				continue
			}
			internal++
			t.Transfers = append(t.Transfers, query.Transfer{Position: -1 - internal, Asset: query.AssetNative, From: mv.From, To: mv.To,
				Amount: mv.Amount, Kind: mv.Kind, CallType: mv.CallType, CallPath: mv.CallPath, Error: mv.Error})
		}
		for _, l := range m.logs[h] {
			t.Transfers = append(t.Transfers, query.Transfer{Position: l.LogIndex, Asset: l.Asset, Contract: l.Contract, From: l.From, To: l.To,
				Amount: l.Amount, Kind: query.KindToken, TokenID: l.TokenID})
		}
		if d.Created != "" {
			t.Parties = []string{d.Created}
		}
		t.Detail = d.JSON()
		out = append(out, t)
	}
	return out
}

// pairReceipts returns the receipts of hashes, in their order, from all
// the receipts of block b: the head and the backfill pair them alike.
// Errors: query.ErrNotFound when one is missing (the receipts are of
// another block now: a reorg while reading).
func pairReceipts(b query.SourceBlock, hashes []string, all []query.Receipt) ([]query.Receipt, error) {
	byHash := make(map[string]query.Receipt, len(all))
	for _, r := range all {
		byHash[r.TxHash] = r
	}
	out := make([]query.Receipt, len(hashes))
	for i, h := range hashes {
		r, ok := byHash[h]
		if !ok {
			return nil, fmt.Errorf("block %d %s: no receipt for %s: %w", b.Number, b.Hash, h, query.ErrNotFound)
		}
		out[i] = r
	}
	return out, nil
}
