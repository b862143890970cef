package fetch

// Checking the chain: the node serves the chain recorded for the name
// (its chain ID and genesis), and its native coin. The identity is read
// again after every failed step (a reconnection: behind the same URL
// another node may answer), at IdentityInterval, and before any rewind.

import (
	"context"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// ErrChainMismatch: the node behind a chain name serves another chain
// than the one recorded for that name (another chain ID, or another
// genesis block).
var ErrChainMismatch = errors.New("chain mismatch")

// networkName names a CAIP-2 chain ID for messages: with the network's
// name when addrd's table knows it.
func networkName(id string) string {
	if n, ok, _ := query.NetworkOf(id); ok {
		return id + " (" + n.Name + ")"
	}
	return id
}

// chainIDText names a CAIP-2 chain ID in a message: an EVM chain's by
// its number, as its users know it ("chain ID 8453"), another's whole
// ("chain bip122:0f9188f13cb7b2c71f2a335e3a4fc328").
func chainIDText(id string) string {
	if ns, ref, err := query.ParseChainID(id); err == nil && ns == "eip155" {
		return "chain ID " + ref
	}
	return "chain " + id
}

// exactness is how far a network's books are proven; a chain ID outside
// the table follows the EVM rules unverified.
func exactness(n query.Network, known bool) string {
	if !known {
		return query.ExactRules
	}
	return n.Exact
}

// CheckChain asks the node its chain ID and genesis block, records them
// for the chain name on first start, and refuses a node of another chain
// than recorded (a mainnet database pointed at a testnet node must never
// mix data). It also settles the native coin: Config.Native, else the
// table's. Steps run it until it succeeds, then again after a failed
// step and every IdentityInterval. Errors: ErrChainMismatch,
// ErrUnavailable, and an unknown chain ID without a native coin given.
func (f *Fetcher) CheckChain(ctx context.Context) error { return f.follow.checkChain(ctx) }

// checkChain is CheckChain: it reads the identity when it is due.
func (f *follower) checkChain(ctx context.Context) error {
	if f.checked && f.cfg.Clock.Now().Before(f.identityDue) {
		return nil
	}
	return f.verifyIdentity(ctx)
}

// verifyIdentity reads the node's identity now and compares it with the
// recorded one; on the first success it settles the native coin.
func (f *follower) verifyIdentity(ctx context.Context) error {
	f.checked = false
	id, err := f.cfg.Reader.ChainID(ctx)
	if err != nil {
		return f.nodeErr(fmt.Errorf("chain %s: asking the node its chain ID: %w", f.cfg.Chain, err))
	}
	if _, _, err := query.ParseChainID(id); err != nil {
		return fmt.Errorf("chain %s: the node's chain ID: %w", f.cfg.Chain, err)
	}
	genesis, err := f.cfg.Reader.Headers(ctx, 0, 0)
	if err != nil {
		return f.nodeErr(fmt.Errorf("chain %s: asking the node its genesis block: %w", f.cfg.Chain, err))
	}
	node := query.ChainIdentity{ID: id}
	if len(genesis) == 1 {
		node.Genesis = genesis[0].Hash
	}
	known, isKnown, _ := query.NetworkOf(id)
	if isKnown && known.Exact == query.ExactRefused {
		return fmt.Errorf("chain %s: the node serves chain ID %s, which addrd refuses: %s", f.cfg.Chain, networkName(node.ID), known.Note)
	}
	native := f.facts.native
	if native.Symbol == "" {
		native = f.cfg.Native
	}
	if native.Symbol == "" {
		if !isKnown {
			return fmt.Errorf("chain %s: the node serves %s, which is not in addrd's table of networks: give its native coin on the flag, --chain %s:SYMBOL:DECIMALS=RPC_URL", f.cfg.Chain, chainIDText(id), f.cfg.Chain)
		}
		native = known.Native
	}
	recorded, err := f.cfg.Store.RecordChainIdentity(ctx, f.cfg.Chain, node)
	if err != nil {
		return err
	}
	if recorded.ID != node.ID {
		return fmt.Errorf("chain %s: the node serves chain %s but this database holds chain %s under that name: refusing to fetch (nothing is deleted); point --chain %s at a node of chain %s, or use another name or database: %w",
			f.cfg.Chain, networkName(node.ID), networkName(recorded.ID), f.cfg.Chain, recorded.ID, ErrChainMismatch)
	}
	if recorded.Genesis != "" && node.Genesis != "" && recorded.Genesis != node.Genesis {
		return fmt.Errorf("chain %s: the node serves another chain of chain ID %s (genesis block %s, this database holds genesis %s under that name): refusing to fetch (nothing is deleted); point --chain %s at a node of the chain recorded: %w",
			f.cfg.Chain, node.ID, node.Genesis, recorded.Genesis, f.cfg.Chain, ErrChainMismatch)
	}
	if f.facts.native.Symbol == "" {
		f.log.Info("fetcher: chain", "chain_id", node.ID, "genesis", node.Genesis, "native", native.Symbol, "decimals", native.Decimals,
			"network", known.Name, "fees", known.Fees, "exact", exactness(known, isKnown), "exact_note", known.Note)
	}
	f.facts.native = native
	f.checked = true
	f.identityDue = f.cfg.Clock.Now().Add(f.cfg.IdentityInterval)
	return nil
}

// finalized is the node's finalized block, below which no reorg is
// applied; 0 when the node says none (the depth bound alone then).
func (f *follower) finalized(ctx context.Context) uint64 {
	fz, ok := f.cfg.Reader.(query.Finalizer)
	if !ok {
		return 0
	}
	n, err := fz.Finalized(ctx)
	if err != nil {
		return 0
	}
	return n
}

// markFinality records how final the stored blocks are, as of the
// node's head: the node's safe and finalized tags or, when it has none,
// the depths the fetcher applies (Confirmations for safe, MaxReorgDepth
// for finalized: a deeper reorg is refused). The store caps the marks at
// the checkpoint and writes the finalized events; nothing is written
// when neither the marks nor the checkpoint moved since the last time.
func (f *follower) markFinality(ctx context.Context, head uint64) error {
	fin, err := f.nodeFinality(ctx, head)
	if err != nil {
		return err
	}
	cp, ok, err := f.cfg.Store.Checkpoint(ctx, f.cfg.Chain)
	if err != nil || !ok {
		return err
	}
	key := finalityMark{fin, cp.Number}
	if f.marked == key {
		return nil
	}
	if err := f.cfg.Store.SetFinality(ctx, f.cfg.Chain, fin); err != nil {
		return err
	}
	f.marked = key
	return nil
}

// finalityMark is what markFinality last recorded: the marks it was
// given and the checkpoint they were capped at.
type finalityMark struct {
	fin        query.Finality
	checkpoint uint64
}

// nodeFinality is the node's safe and finalized blocks, or the depths
// that stand in for them.
func (f *follower) nodeFinality(ctx context.Context, head uint64) (query.Finality, error) {
	if fz, ok := f.cfg.Reader.(query.Finalizer); ok {
		fin, err := fz.Finalized(ctx)
		switch {
		case err == nil:
			safe, err := fz.Safe(ctx)
			if errors.Is(err, query.ErrNotFound) || errors.Is(err, chain.ErrNotImplemented) {
				safe, err = fin, nil
			}
			if err != nil {
				return query.Finality{}, f.nodeErr(err)
			}
			return query.Finality{Safe: max(safe, fin), Finalized: fin, Source: query.FinalityByNode}, nil
		case !errors.Is(err, query.ErrNotFound) && !errors.Is(err, chain.ErrNotImplemented):
			return query.Finality{}, f.nodeErr(err)
		}
	}
	fin := query.Finality{Source: query.FinalityByDepth}
	if head > f.cfg.MaxReorgDepth {
		fin.Finalized = head - f.cfg.MaxReorgDepth
	}
	fin.Safe = fin.Finalized
	if f.cfg.Confirmations > 0 && head >= f.cfg.Confirmations {
		fin.Safe = max(fin.Safe, head-f.cfg.Confirmations)
	}
	return fin, nil
}
