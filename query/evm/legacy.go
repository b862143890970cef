package evm

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/wharfhq/wharf/query"
)

// LegacyDetail is the EVM family's store.LegacyDetail: it makes the
// detail document of a transaction that addrd stored before chain
// families (every chain then was an EVM chain) from the fields those
// rows held of it, in their order: nonce, type, gas limit, gas used,
// effective gas price, method, created contract, input, cumulative gas
// used and revert reason; a row of an older version holds the first
// seven, or the nonce alone. It returns the document, member for member
// what TxDetail writes, and the created contract.
func LegacyDetail(fields []string) (json.RawMessage, string, error) {
	if n := len(fields); n != 1 && n != 7 && n != 10 {
		return nil, "", fmt.Errorf("evm: %d fields of a legacy transaction detail, want 1, 7 or 10", n)
	}
	var d TxDetail
	var err error
	number := func(s string, bits int) uint64 {
		v, e := strconv.ParseUint(s, 10, bits)
		if e != nil && err == nil {
			err = fmt.Errorf("evm: legacy transaction detail: %w", e)
		}
		return v
	}
	d.Nonce = number(fields[0], 64)
	if len(fields) >= 7 {
		d.Type, d.GasLimit, d.GasUsed = uint8(number(fields[1], 64)), number(fields[2], 64), number(fields[3], 64)
		if d.EffectiveGasPrice, err = query.ParseAmount(fields[4]); err != nil {
			return nil, "", fmt.Errorf("evm: legacy transaction detail: %w", err)
		}
		d.Method, d.Created = fields[5], fields[6]
	}
	if len(fields) == 10 {
		d.Input, d.CumulativeGasUsed, d.RevertReason = fields[7], number(fields[8], 64), fields[9]
	}
	if err != nil {
		return nil, "", err
	}
	// Written as they were stored: the store made them storable then.
	b, err := json.Marshal(d)
	if err != nil {
		return nil, "", fmt.Errorf("evm: legacy transaction detail: %w", err)
	}
	return b, d.Created, nil
}
