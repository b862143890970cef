package api

import (
	"net/http"

	"github.com/wharfhq/wharf/query"
)

// pagedRead is a request for a page of an address's data: its chain and
// address, the page size, and what makes the next page's token.
type pagedRead struct {
	chain, address string
	size           int
	kind           byte
	codec          tokenCodec
	scope          []byte
	digest         []byte // of a books list's range and filters (books.go)
}

// next is the token of the page after the one that ends at cursor.
func (p pagedRead) next(cursor []byte) string {
	return p.codec.encode(p.kind, p.scope, append(cursor, p.digest...))
}

// readPage reads a paged request of kind for a: the chain, address,
// page_size and page_token; the token's cursor goes to decode, which
// reads its fields. A token that does not decode, or does not end where
// decode stops, answers NotSubscribed to a requester not subscribed to the
// address (as a page without a token does) and InvalidArgument to one
// who is.
func (s *Server) readPage(r *http.Request, a query.Account, kind byte, decode func(*reader)) (pagedRead, error) {
	chain, address, err := s.chainAddress(r)
	if err != nil {
		return pagedRead{}, err
	}
	size, tok, err := pageParams(r, defaultTxSize, maxTxSize)
	if err != nil {
		return pagedRead{}, err
	}
	codec, err := s.tokens(r.Context())
	if err != nil {
		return pagedRead{}, err
	}
	p := pagedRead{chain: chain, address: address, size: size, kind: kind, codec: codec, scope: scope(a.ID, chain, address)}
	if tok == "" {
		return p, nil
	}
	cur, err := codec.decode(kind, p.scope, tok)
	if err == nil {
		rd := reader{b: cur}
		decode(&rd)
		if rd.err == nil && len(rd.b) == digestSize {
			// A token of the same list minted under a range or filters.
			return pagedRead{}, errOtherParams
		}
		err = rd.done()
	}
	if err == nil {
		return p, nil
	}
	ok, serr := s.store.Subscribed(r.Context(), a.ID, chain, address)
	switch {
	case serr != nil:
		return pagedRead{}, serr
	case !ok:
		return pagedRead{}, notSubscribed(address)
	}
	return pagedRead{}, badToken()
}
