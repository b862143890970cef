package api

// The wallet filter of the event feed and of webhooks: the events of the
// addresses one descriptor wallet derived (docs/events.md).

import (
	"slices"
	"strings"

	"github.com/wharfhq/wharf/query"
)

// walletFilter is a parsed wallet filter: its chain and the wallet's ID.
type walletFilter struct {
	chain, id string
}

// parseWalletName reads a wallet filter: the wallet's resource name,
// chains/{chain}/wallets/{wallet}, as an event's wallet.name gives it,
// of a chain this server serves whose family derives addresses. The
// wallet need not exist yet: its events match once it does.
func (s *Server) parseWalletName(v string) (walletFilter, error) {
	rule := "wallet must be a wallet's name, chains/{chain}/wallets/{wallet} (as an event's wallet.name gives it)"
	rest, ok := strings.CutPrefix(v, "chains/")
	chainName, id, ok2 := strings.Cut(rest, "/wallets/")
	if !ok || !ok2 || chainName == "" {
		return walletFilter{}, errorf(codeInvalidArgument, "%s, not %s", rule, quote(v))
	}
	if !slices.Contains(s.chains, chainName) {
		return walletFilter{}, errorf(codeInvalidArgument, "wallet %s: unknown chain %s; this server serves %v", quote(v), quote(chainName), s.chains)
	}
	if !walletID.MatchString(id) {
		return walletFilter{}, errorf(codeInvalidArgument, "%s, not %s: a wallet's name is 1 to 63 of a-z, 0-9 and '-', starting with a letter or digit", rule, quote(v))
	}
	if _, _, err := s.wallets(chainName); err != nil {
		return walletFilter{}, err
	}
	return walletFilter{chain: chainName, id: id}, nil
}

// walletChain is the chain of a filter given chainParam (a chain filter,
// "" for none) and w (the zero walletFilter for none): a wallet's chain
// sets the filter's, and a chain filter of another chain contradicts it.
func walletChain(chainParam string, w walletFilter) (string, error) {
	switch {
	case w.id == "":
		return chainParam, nil
	case chainParam != "" && chainParam != w.chain:
		return "", errorf(codeInvalidArgument, "wallet %s is a wallet of chain %s, not of the chain filter %s: give one chain",
			quote(query.Wallet{Chain: w.chain, ID: w.id}.Name()), quote(w.chain), quote(chainParam))
	}
	return w.chain, nil
}
