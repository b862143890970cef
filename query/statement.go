package query

import (
	"strconv"
	"strings"
	"time"
)

// Kinds of movement: of a Transfer, and of a Cause in a statement.
const (
	KindTransaction  = "transaction"  // a transaction's own value
	KindInternal     = "internal"     // a CALL or CALLCODE with value inside a transaction
	KindToken        = "token"        // an ERC-20 Transfer log
	KindFee          = "fee"          // the fee the sender pays: execution, blob gas, a rollup's L1 data fee and operator fee (FeeParts)
	KindMint         = "mint"         // the ether an OP-stack deposit mints to its sender (also when the deposit fails)
	KindWithdrawal   = "withdrawal"   // an EIP-4895 withdrawal from the beacon chain
	KindFeeIncome    = "fee_income"   // the priority fees of a block, to its fee recipient
	KindCreation     = "creation"     // value sent with a contract creation (CREATE, CREATE2, or a creating transaction)
	KindSelfdestruct = "selfdestruct" // a SELFDESTRUCT's balance, to its beneficiary
	KindBurn         = "burn"         // the balance of a contract that self-destructed to itself in the transaction that created it: destroyed (EIP-6780)
	KindGenesis      = "genesis"      // the allocation of the genesis block
	KindReceived     = "received"     // a UTXO chain's output paid to the address (its ref: txid:vout)
	KindSpent        = "spent"        // a UTXO chain's output of the address spent (its ref: the input's index and the outpoint)
	KindCoinbase     = "coinbase"     // a UTXO chain's block reward output, spendable after 100 confirmations
)

// BalanceChange is a row of an address's statement: how the balance of
// one asset changed in one block, and why. Rows chain: BalanceAfter −
// Amount of a row is the BalanceAfter of the address's previous row of
// the same asset.
type BalanceChange struct {
	Chain    string
	Address  string
	Contract string // "" for the native coin
	Block    uint64
	Time     time.Time
	// Amount is the signed change (wei or the token's base units): the
	// sum of the causes' amounts, plus Difference.
	Amount       Amount
	BalanceAfter Amount
	Causes       []Cause
	// Checked says that BalanceAfter was compared with the node's balance
	// at this row's block; Reconciled, asserted only then, that they
	// agreed. A row not checked asserts nothing: the movements found may
	// miss one the node saw (a rebase; an internal movement without
	// traces), which the next checked row then takes as its difference.
	Checked    bool
	Reconciled bool
	// Difference (node − found, signed) is what a disagreement added to
	// Amount, on the row of the block where it was found, so that
	// BalanceAfter is the node's there; zero when none.
	Difference Amount
	// Internals says that the movements inside the block's transactions
	// (chain.Internals: the EVM's calls with value, read from a node's
	// trace API) are among the causes; false when the node could not list
	// them. The API writes it as "traced".
	Internals bool
}

// Cause is one movement behind a BalanceChange.
type Cause struct {
	Kind   string // a Kind constant
	TxHash string // "" for a movement of the block itself (a withdrawal, fee income)
	Amount Amount // signed
	// Ref names the movement within its transaction or block in its
	// family's terms (chain.Move.Ref: a log, a call path, a withdrawal,
	// an outpoint); the store keeps it as it is. A KindWithdrawal
	// cause's is WithdrawalRef's. "" on rows stored before it was kept.
	Ref string
	// Fee is the fee's components, for a KindFee cause whose fee has a
	// part beyond execution (FeeParts.Split); nil otherwise.
	Fee *FeeParts
}

// WithdrawalRef is the Ref of a KindWithdrawal cause: the withdrawal's
// index, counted over the chain, and the validator it pays out, as
// "withdrawal:INDEX:VALIDATOR" (the API writes them as the cause's
// withdrawal_index and validator_index).
func WithdrawalRef(index, validator uint64) string {
	return "withdrawal:" + strconv.FormatUint(index, 10) + ":" + strconv.FormatUint(validator, 10)
}

// Outpoint returns the output of a UTXO chain that c moved, txid:vout:
// the output received (KindReceived, KindCoinbase) or spent (KindSpent,
// whose Ref is the spending input's index and the outpoint); ok is false
// for any other cause.
func (c Cause) Outpoint() (string, bool) {
	switch c.Kind {
	case KindReceived, KindCoinbase:
		return c.Ref, c.Ref != ""
	case KindSpent:
		_, op, ok := strings.Cut(c.Ref, ":")
		return op, ok
	}
	return "", false
}

// Withdrawal returns the index and the validator of c, a KindWithdrawal
// cause, from its Ref; ok is false for any other cause, and for one
// whose Ref does not name them (a row stored before they were kept).
func (c Cause) Withdrawal() (index, validator uint64, ok bool) {
	if c.Kind != KindWithdrawal {
		return 0, 0, false
	}
	rest, found := strings.CutPrefix(c.Ref, "withdrawal:")
	i, v, two := strings.Cut(rest, ":")
	if !found || !two {
		return 0, 0, false
	}
	index, err := strconv.ParseUint(i, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	validator, err = strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return index, validator, true
}

// ChangeCursor is the keyset position after a statement row in the order
// newest first: (Block, Contract) descending.
type ChangeCursor struct {
	Block    uint64
	Contract string
}

// StatementHead is where an address's statement of one asset stands: its
// balance after block Block, from which the next row continues.
type StatementHead struct {
	Address  string
	Contract string
	Block    uint64
	Balance  Amount
}

// Holding names one asset of one address: its native coin (Contract "")
// or a token.
type Holding struct {
	Address  string
	Contract string
}

// StatementBound is what the stored statement tells of a holding's
// balance around the blocks lo to hi that a backfill fills.
type StatementBound struct {
	Holding
	// Above is the balance after block hi: the opening balance of the
	// holding's first row above hi, else its head's balance when the head
	// stands at hi or above; nil when the statement does not tell.
	Above *Amount
	// Below is the balance after the holding's last row below lo (an
	// earlier tracking of the address); nil when there is none.
	Below *Amount
}
