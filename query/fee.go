package query

// FeeParts are what a transaction's fee paid for, each in wei; Fee is
// their sum. A chain charges the parts its receipts carry: every EVM
// chain the execution fee, Ethereum blob gas (EIP-4844), an OP-stack
// rollup its L1 data fee and, since Isthmus, its operator fee, Scroll its
// L1 data fee. All zero for a transaction stored before the parts were
// kept, and for an OP-stack deposit, which pays nothing.
type FeeParts struct {
	// Execution is gasUsed × effectiveGasPrice.
	Execution Amount
	// Blob is blobGasUsed × blobGasPrice.
	Blob Amount
	// L1 is the rollup's L1 data fee: the receipt's l1Fee.
	L1 Amount
	// Operator is the OP-stack operator fee: gasUsed × operatorFeeScalar
	// / 1e6 + operatorFeeConstant (from Jovian on gasUsed ×
	// operatorFeeScalar × 100 + operatorFeeConstant).
	Operator Amount
}

// Sum is the fee: the parts added up.
func (p FeeParts) Sum() Amount { return p.Execution.Add(p.Blob).Add(p.L1).Add(p.Operator) }

// IsZero reports whether every part is zero (none known, or a free
// transaction).
func (p FeeParts) IsZero() bool { return p == FeeParts{} }

// Split reports whether the fee has a part beyond execution: only then
// does a statement's fee cause list them.
func (p FeeParts) Split() bool { return !p.Blob.IsZero() || !p.L1.IsZero() || !p.Operator.IsZero() }
