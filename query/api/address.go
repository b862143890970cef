package api

import (
	"github.com/wharfhq/wharf/query/chain"
)

// parseAddress reads an address written for chain name in the chain's
// canonical form (Config.Syntax). For a chain this server does not serve
// (or none: a filter across chains) it takes the first of its chains'
// syntaxes that accepts it, and says why the first refused when none does.
func (s *Server) parseAddress(name, a string) (string, error) {
	return s.parse(name, a, chain.Syntax.ParseAddress)
}

// parseHash reads a transaction hash written for chain name, as parseAddress
// reads an address.
func (s *Server) parseHash(name, h string) (string, error) {
	return s.parse(name, h, chain.Syntax.ParseTxHash)
}

// parse reads in with the syntax of chain name, or of the first of the
// server's chains that accepts it.
func (s *Server) parse(name, in string, parse func(chain.Syntax, string) (string, error)) (string, error) {
	if syn, ok := s.syntax[name]; ok {
		out, err := parse(syn, in)
		if err != nil {
			return "", errorf(codeInvalidArgument, "%s", err.Error())
		}
		return out, nil
	}
	var first error
	for _, c := range s.chains {
		out, err := parse(s.syntax[c], in)
		if err == nil {
			return out, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return "", errorf(codeInvalidArgument, "this server serves no chain to read %s on", quote(in))
	}
	return "", errorf(codeInvalidArgument, "%s", first.Error())
}

// quote quotes user input for a message, cut to a readable length.
func quote(s string) string { return chain.Quote(s) }
