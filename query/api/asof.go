package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/wharfhq/wharf/query"
)

// asOf is what a balances read as of a block or a time asks:
// ?block_number=N (or finalized, safe: the chain's mark) or ?time=T.
type asOf struct {
	block    uint64
	at       time.Time
	hasBlock bool
	asked    string // "block N" or "time T", for errors
}

// parseAsOf reads the block_number or time of a balances read on chain;
// any other parameter, a parameter given twice or both given is a 400.
func (s *Server) parseAsOf(r *http.Request, chain string) (asOf, error) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return asOf{}, err
	}
	var o asOf
	for k, v := range q {
		if len(v) > 1 {
			return asOf{}, errorf(codeInvalidArgument, "query parameter %s given %d times", quote(k), len(v))
		}
		switch k {
		case "block_number":
			n, err := s.blockNumber(r.Context(), chain, v[0])
			if err != nil {
				return asOf{}, err
			}
			o.block, o.hasBlock, o.asked = n, true, "block "+strconv.FormatUint(n, 10)
		case "time":
			if o.at, err = parseTime("time", v[0]); err != nil {
				return asOf{}, err
			}
			o.asked = "time " + v[0]
		default:
			return asOf{}, errorf(codeInvalidArgument, "unknown query parameter %s (balances take block_number or time)", quote(k))
		}
	}
	if o.hasBlock && !o.at.IsZero() {
		return asOf{}, errorf(codeInvalidArgument, "give block_number or time, not both")
	}
	return o, nil
}

// known fails when o asks for a block or a time after head, the newest
// block stored: its balances are not known yet.
func (o asOf) known(head query.Block) error {
	switch {
	case o.hasBlock && o.block > head.Number:
		return errorf(codeInvalidArgument, "block_number %d is after the newest stored block, %d: its balances are not known yet", o.block, head.Number)
	case !o.at.IsZero() && o.at.After(head.Time):
		return errorf(codeInvalidArgument, "time %s is after the newest stored block, %d at %s: its balances are not known yet",
			o.at.Format(time.RFC3339), head.Number, timestamp(head.Time))
	}
	return nil
}
