package utxo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Family is the UTXO chain family (CAIP-2 namespace bip122): Bitcoin and
// Litecoin nodes speaking btcd's or Bitcoin Core's JSON-RPC.
type Family struct{}

var _ chain.Family = Family{}

// Name is "utxo".
func (Family) Name() string { return "utxo" }

// Namespace is "bip122".
func (Family) Namespace() string { return "bip122" }

// Dial connects to the node at url (http://USER:PASS@HOST:PORT), finds
// its dialect (btcd answers `version`) and its network by the genesis
// block. Errors: query.ErrUnavailable when the node cannot be reached;
// any other error is a bad url or a network this family does not know.
func (Family) Dial(ctx context.Context, url string) (chain.Reader, error) {
	return Dial(ctx, url)
}

// Dial is Family.Dial with the concrete Reader.
func Dial(ctx context.Context, url string) (*Reader, error) {
	c, err := newRPC(url)
	if err != nil {
		return nil, err
	}
	var genesis string
	if err := c.call(ctx, &genesis, "getblockhash", 0); err != nil {
		return nil, err
	}
	n, err := NetworkByGenesis(genesis)
	if err != nil {
		return nil, err
	}
	r := &Reader{net: n, rpc: c, index: make(map[Outpoint]output)}
	if _, err := r.dialectOf(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Open returns a Reader of the node at url that must serve network n,
// without asking the node anything yet: a node that does not answer at
// start is read once it does. ChainID refuses a node of another network.
// Errors: a bad url.
func Open(url string, n *Network) (*Reader, error) {
	c, err := newRPC(url)
	if err != nil {
		return nil, err
	}
	return &Reader{net: n, rpc: c, index: make(map[Outpoint]output)}, nil
}

// dialectOf is the node's dialect, asked once (btcd answers `version`
// with its API's version; Bitcoin Core and its forks answer no such
// field, or no such method).
func (r *Reader) dialectOf(ctx context.Context) (string, error) {
	r.mu.Lock()
	d := r.dialect
	r.mu.Unlock()
	if d != "" {
		return d, nil
	}
	d = DialectCore
	var v map[string]json.RawMessage
	err := r.rpc.call(ctx, &v, "version")
	var re *rpcError
	switch {
	case err == nil:
		if _, ok := v["btcdjsonrpcapi"]; ok {
			d = DialectBtcd
		}
	case !errors.As(err, &re):
		return "", err // the node did not answer
	}
	r.mu.Lock()
	r.dialect = d
	r.mu.Unlock()
	return d, nil
}

// Headers returns the headers of blocks from to to, fewer when the node
// has not all of them.
func (r *Reader) Headers(ctx context.Context, from, to uint64) ([]query.Block, error) {
	head, err := r.Head(ctx)
	if err != nil {
		return nil, err
	}
	var out []query.Block
	for h := from; h <= to && h <= head; h++ {
		b, err := r.header(ctx, h)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && b.ParentHash != out[len(out)-1].Hash {
			return out, nil // a reorg while reading: the caller reads again
		}
		out = append(out, b)
	}
	return out, nil
}

func (r *Reader) header(ctx context.Context, h uint64) (query.Block, error) {
	var hash string
	if err := r.rpc.call(ctx, &hash, "getblockhash", h); err != nil {
		return query.Block{}, err
	}
	var hd struct {
		Hash     string `json:"hash"`
		Previous string `json:"previousblockhash"`
		Time     int64  `json:"time"`
		Height   uint64 `json:"height"`
	}
	if err := r.rpc.call(ctx, &hd, "getblockheader", hash, true); err != nil {
		return query.Block{}, err
	}
	return query.Block{Number: hd.Height, Hash: hd.Hash, ParentHash: hd.Previous, Time: time.Unix(hd.Time, 0).UTC()}, nil
}

// ChainID is the network's CAIP-2 identity, bip122:<genesis prefix>.
// Errors: one naming both networks when the node serves another network
// than the Reader's (Open's).
func (r *Reader) ChainID(ctx context.Context) (string, error) {
	var genesis string
	if err := r.rpc.call(ctx, &genesis, "getblockhash", 0); err != nil {
		return "", err
	}
	if len(genesis) != 64 {
		return "", fmt.Errorf("getblockhash 0: %q: %w", genesis, query.ErrUnavailable)
	}
	if g := strings.ToLower(genesis); g != r.net.Genesis {
		serves := "bip122:" + g[:32]
		if n, err := NetworkByGenesis(g); err == nil {
			serves = n.Name + " (" + n.ID() + ")"
		}
		return "", fmt.Errorf("the node serves %s, not %s (%s)", serves, r.net.Name, r.net.ID())
	}
	return r.net.ID(), nil
}

// Head is the node's block count (the height of its newest block).
func (r *Reader) Head(ctx context.Context) (uint64, error) {
	var n uint64
	err := r.rpc.call(ctx, &n, "getblockcount")
	return n, err
}
