package api

// Start heights: a subscriber of a chain whose balances are their
// movements (chain.Ledger: a UTXO chain) may say from which block its
// address or wallet was used (a birth height, as Bitcoin Core's rescans
// take one): its history is read from there, its statement starts at
// zero there.

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"

	"github.com/wharfhq/wharf/query/chain"
)

// blockNumber is how a start height is written: a JSON integer from 0,
// without a sign, fraction or exponent.
var blockNumber = regexp.MustCompile(`^(0|[1-9][0-9]{0,18})$`)

// startBlock checks the start_block of chainName's PUT (raw, nil when
// absent): a block number, on a chain where it means something.
func (s *Server) startBlock(chainName string, raw json.RawMessage) (*uint64, error) {
	if raw == nil {
		return nil, nil
	}
	if l, ok := s.syntax[chainName].(chain.Ledger); !ok || !l.MovementsOnly() {
		return nil, errorf(codeInvalidArgument, "start_block is a birth height, taken on chains whose balances are their outputs (a UTXO chain such as BTC); "+
			"chain %s reads a new subscription's history by the server's --backfill-blocks", chainName)
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if !blockNumber.Match(raw) || err != nil || n > math.MaxInt64 {
		return nil, errorf(codeInvalidArgument, "start_block %s: a start height is a block number, an integer from 0 (the genesis) to %d, "+
			"at or below the block of the first payment to the address", quote(string(raw)), int64(math.MaxInt64))
	}
	return &n, nil
}

// addressRequest is the body of PUT /v1/chains/{chain}/addresses/{address}:
// none, or an object with a start height.
type addressRequest struct {
	StartBlock json.RawMessage `json:"start_block,omitempty"`
}

// readAddressRequest reads the optional body of an address's PUT.
func readAddressRequest(r *http.Request) (addressRequest, error) {
	var req addressRequest
	if r.Body == nil {
		return req, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWalletBody+1))
	if err != nil {
		return req, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	if len(body) > maxWalletBody {
		return req, errorf(codeInvalidArgument, "request body longer than %d bytes", maxWalletBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		return req, errorf(codeInvalidArgument, "the body must be empty or one JSON object with start_block (a block number): %s", quote(errText(err)))
	}
	if string(req.StartBlock) == "null" {
		req.StartBlock = nil
	}
	return req, nil
}
