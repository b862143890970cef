package query

import (
	"time"
)

// Transaction statuses.
const (
	StatusSuccess = "success"
	StatusFailed  = "failed"
)

// Transaction is a chain transaction that touches at least one tracked
// address, with all the transfers in it.
type Transaction struct {
	Chain       string
	Hash        string // lowercase 0x-hex
	BlockNumber uint64
	BlockHash   string
	BlockTime   time.Time
	Index       uint   // position in the block
	Status      string // StatusSuccess or StatusFailed
	From        string
	To          string // "" for a contract creation
	Value       Amount // wei
	Fee         Amount // wei: what the sender paid, FeeParts added up
	Nonce       uint64
	Transfers   []Transfer

	// FeeParts are the components of Fee (all zero when not known).
	FeeParts FeeParts
	// Mint is the ether an OP-stack deposit (type 0x7e) minted to From
	// before its call, kept also when the call failed; zero otherwise.
	Mint Amount

	// Type is the EIP-2718 transaction type (0 legacy, 2 dynamic fee...).
	Type uint8
	// GasLimit and GasUsed are the transaction's gas; EffectiveGasPrice is
	// the wei it paid a unit of gas.
	GasLimit          uint64
	GasUsed           uint64
	EffectiveGasPrice Amount
	// Method is the input's 4-byte selector, 0x and 8 hex digits; "" when
	// the input is shorter (a plain transfer).
	Method string
	// Created is the contract the transaction created, top-level or
	// inside; "" when none.
	Created string
	// Input is the transaction's input (calldata), 0x-hex.
	Input string
	// CumulativeGasUsed is the gas used in the block up to and with this
	// transaction (the receipt's).
	CumulativeGasUsed uint64
	// RevertReason says why a failed transaction reverted, when the node
	// traced it: the message of an Error(string), "Panic(0x..)" and its
	// meaning for a Panic(uint256), the revert data in 0x-hex when it is
	// neither, or the EVM's error (such as "out of gas") when there is
	// no data; "" for a transaction that succeeded or was not traced.
	RevertReason string

	// Unreadable, when not "", says why the stored transaction could not
	// be read back: the transaction is its key alone (hash, block and
	// index), the rest of a page is read all the same.
	Unreadable string
}

// Addresses returns every address the transaction touches, without
// duplicates: sender, recipient and the parties of its transfers.
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
	add(t.Created)
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
	// LogIndex is the log's index in the block for a token transfer; -1
	// for the transaction's own value; -2, -3... for its internal
	// movements in call order.
	// The entries of one ERC-1155 TransferBatch log share its index.
	LogIndex int
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
