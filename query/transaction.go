package query

import (
	"encoding/json"
	"time"
)

// Transaction statuses.
const (
	StatusSuccess = "success"
	StatusFailed  = "failed"
)

// Transaction is a chain transaction that touches at least one tracked
// address, with all the transfers in it, in the form of every chain
// family: what only its family knows of it (the EVM's nonce, gas, input
// and revert reason) is its Detail, a document the store keeps as it is
// and the API writes out.
type Transaction struct {
	Chain       string
	Hash        string // in the family's canonical form
	BlockNumber uint64
	BlockHash   string
	BlockTime   time.Time
	Index       uint   // position in the block
	Status      string // StatusSuccess or StatusFailed
	// From and To are the transaction's sender and recipient, as its
	// family names them: "" when it has none (a contract creation's To).
	From  string
	To    string
	Value Amount // of the native coin, sent from From to To
	// Fee is what From paid for the transaction, in the native coin; zero
	// when no one address paid it.
	Fee Amount
	// FeeParts are the components of Fee (all zero when not known).
	FeeParts FeeParts
	// Mint is the native coin a transaction minted to From before its
	// call (an OP-stack deposit), kept also when the call failed; zero
	// otherwise.
	Mint Amount
	// Parties are the addresses the transaction touches beside From, To
	// and its transfers' parties (the contract an EVM transaction
	// created), without duplicates.
	Parties   []string
	Transfers []Transfer
	// Detail is the family's document of the transaction: a JSON object
	// whose members the API writes into the transaction's, after the
	// members above, as they are. nil when the family has none.
	Detail json.RawMessage

	// Unreadable, when not "", says why the stored transaction could not
	// be read back: the transaction is its key alone (hash, block and
	// index), the rest of a page is read all the same.
	Unreadable string
}

// Addresses returns every address the transaction touches, without
// duplicates: sender, recipient, its Parties and those of its transfers.
func (t Transaction) Addresses() []string {
	seen := make(map[string]bool)
	var out []string
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	add(t.From)
	add(t.To)
	for _, p := range t.Parties {
		add(p)
	}
	for _, tr := range t.Transfers {
		if tr.Error != "" {
			continue // a reverted call moved nothing
		}
		add(tr.From)
		add(tr.To)
	}
	return out
}

// Transfer is a movement of one asset inside a transaction.
type Transfer struct {
	// Position is the transfer's place in the transaction, numbered by
	// its family; the store keys a transaction's transfers by it and
	// lists them in its order, and the API writes it as log_index. The
	// EVM family's: the log's index in the block for a token transfer
	// (the entries of one ERC-1155 TransferBatch log share it), -1 for
	// the transaction's own value, -2, -3... for its internal movements
	// in call order. The UTXO family's: the output's index (vout) for an
	// output paid to an address, -1 - i for the spend of input i.
	Position int
	Asset    string // AssetNative, AssetERC20, AssetERC721 or AssetERC1155
	Contract string // "" for native
	From     string
	To       string
	Amount   Amount // smallest unit; 1 for an ERC-721 token
	// Kind is how it moved: KindTransaction, KindInternal, KindToken,
	// KindCreation or KindSelfdestruct.
	Kind string
	// Symbol, Name and Decimals are the token's, for a token transfer.
	Symbol   string
	Name     string
	Decimals int
	// TokenID is the id of an ERC-721 or ERC-1155 token, decimal; "".
	TokenID string
	// CallType and CallPath, for an internal movement, are the frame's
	// type (CALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT) and its place
	// in the call tree: the indexes of the frames from the top-level
	// call down, dot-separated ("0.2.1": the second call of the third
	// call of the first call the transaction made).
	CallType string
	CallPath string
	// Error is the EVM's error of a call that reverted (its own, or that
	// of a frame above it, the transaction's included): such a transfer
	// moved nothing and is listed for the record only.
	Error string
}

// Holding is the key of the holding the transfer moves: "" for the
// native coin, else HoldingKey.
func (t Transfer) Holding() string {
	if t.Asset == AssetNative {
		return ""
	}
	return HoldingKey(t.Asset, t.Contract, t.TokenID)
}

// TxCursor is the keyset position after a transaction in the order most
// recent first: (BlockNumber, Index) descending.
type TxCursor struct {
	BlockNumber uint64
	Index       uint
}
