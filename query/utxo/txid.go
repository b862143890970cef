package utxo

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidTxID is wrapped by every error of ParseTxID and ParseOutpoint.
var ErrInvalidTxID = errors.New("invalid transaction id")

// ParseTxID reads a transaction id: 64 hex digits as nodes and explorers
// write them (the hash byte-reversed), without 0x. Its canonical form is
// lower case.
func ParseTxID(s string) (string, error) {
	bad := func(rule string) (string, error) {
		return "", fmt.Errorf("transaction id %q: %s: %w", clip(s), rule, ErrInvalidTxID)
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return bad("written without 0x (64 hex digits)")
	}
	if len(s) != 64 {
		return bad(fmt.Sprintf("%d characters, a transaction id has 64 hex digits", len(s)))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return bad(fmt.Sprintf("character %q at %d is not a hex digit", c, i))
		}
	}
	return strings.ToLower(s), nil
}

// Outpoint names a transaction output: the transaction's id and the
// output's index in it.
type Outpoint struct {
	TxID string
	Vout uint32
}

// String writes the outpoint as txid:vout, the reference of the cause of
// a movement that receives or spends it.
func (o Outpoint) String() string { return o.TxID + ":" + strconv.FormatUint(uint64(o.Vout), 10) }

// ParseOutpoint reads txid:vout.
func ParseOutpoint(s string) (Outpoint, error) {
	txid, vout, ok := strings.Cut(s, ":")
	if !ok {
		return Outpoint{}, fmt.Errorf("outpoint %q: written txid:vout: %w", clip(s), ErrInvalidTxID)
	}
	id, err := ParseTxID(txid)
	if err != nil {
		return Outpoint{}, err
	}
	v, err := strconv.ParseUint(vout, 10, 32)
	if err != nil || (len(vout) > 1 && vout[0] == '0') {
		return Outpoint{}, fmt.Errorf("outpoint %q: output index %q is not a decimal below 2^32: %w", clip(s), clip(vout), ErrInvalidTxID)
	}
	return Outpoint{TxID: id, Vout: uint32(v)}, nil
}
