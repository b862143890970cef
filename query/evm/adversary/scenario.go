package adversary

// The seeded generator of adversarial traffic.

import (
	"context"
	"crypto/ecdsa"
	"encoding/binary"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/wharfhq/wharf/query/evm/devchain"
)

// Config configures a Generator.
type Config struct {
	// Seed chooses the keys, the contracts' salts and every action.
	Seed uint64
	// MaxTxs is the most actions of a round; default 6.
	MaxTxs int
}

// Generator sends a seeded scenario's rounds to a Chain. Its methods
// must not be called concurrently.
type Generator struct {
	cfg   Config
	rng   *rand.Rand
	chain Chain
	rpc   *rpc.Client
	s     *sender

	keys  []*ecdsa.PrivateKey
	eoas  []common.Address // the keys' addresses
	fresh []common.Address // addresses nobody holds a key of: recipients only

	forwarder, destructor, factory, bouncer, creator, reverter, relay common.Address
	token, feeToken, rebaseToken, bareToken, nft, multi               common.Address

	pending     []counterfactual // CREATE2 addresses not created yet
	destructors []common.Address // contracts that self-destruct on input
	creatorN    uint64           // the creator's nonce: its next CREATE's address
	withdrawals uint64
	salt        uint64
	nftID       uint64
	nftOwner    map[uint64]common.Address   // ERC-721 ids given, and to whom
	multiHeld   map[common.Address][]uint64 // ERC-1155 ids given to each holder (maybe spent since)
	// depositNonces are the nonces of the keyless addresses that made
	// OP-stack deposits.
	depositNonces map[common.Address]uint64

	candidates []common.Address // every address worth subscribing, in order of appearance
	kinds      map[common.Address]string
	// Actions counts the actions sent, by name.
	Actions map[string]int
}

// counterfactual is an address a CREATE2 of the factory will make.
type counterfactual struct {
	addr common.Address
	code []byte // the init code
	kind string
}

// New connects to chain and returns a Generator; Setup deploys its
// contracts.
func New(ctx context.Context, chain Chain, cfg Config) (*Generator, error) {
	if cfg.MaxTxs == 0 {
		cfg.MaxTxs = 6
	}
	c, err := rpc.DialContext(ctx, chain.URL())
	if err != nil {
		return nil, err
	}
	s, err := newSender(ctx, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	g := &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)), chain: chain, rpc: c, s: s, Actions: make(map[string]int), kinds: make(map[common.Address]string),
		nftOwner: make(map[uint64]common.Address), multiHeld: make(map[common.Address][]uint64), depositNonces: make(map[common.Address]uint64)}
	for i := range 4 {
		k, err := crypto.ToECDSA(crypto.Keccak256(binary.BigEndian.AppendUint64([]byte("adversary key"), cfg.Seed), []byte{byte(i)}))
		if err != nil {
			return nil, err
		}
		g.keys = append(g.keys, k)
		g.eoas = append(g.eoas, crypto.PubkeyToAddress(k.PublicKey))
	}
	for i := range 3 {
		g.fresh = append(g.fresh, common.BytesToAddress(crypto.Keccak256(binary.BigEndian.AppendUint64([]byte("adversary fresh"), cfg.Seed), []byte{byte(i)})))
	}
	return g, nil
}

// Close closes the connection to the node.
func (g *Generator) Close() { g.rpc.Close() }

// Candidates returns every address worth subscribing so far: the keys,
// recipients, contracts, and addresses contracts will be created at.
func (g *Generator) Candidates() []common.Address { return slices.Clone(g.candidates) }

// Tokens returns the token contracts: the assets a checker reads (the
// ERC-1155 ids it finds in the node's logs).
func (g *Generator) Tokens() []common.Address {
	return []common.Address{g.token, g.feeToken, g.rebaseToken, g.bareToken, g.nft}
}

// Honest returns the token contracts whose logs say every change of
// their balances: the plain ERC-20, the ERC-721 and the ERC-1155.
func (g *Generator) Honest() []common.Address { return []common.Address{g.token, g.nft, g.multi} }

// Names names the addresses the generator knows, lowercase 0x-hex, for
// reading a Violation.
func (g *Generator) Names() map[string]string {
	out := make(map[string]string)
	name := func(a common.Address, n string) { out[strings.ToLower(a.Hex())] = n }
	for i, a := range g.eoas {
		name(a, fmt.Sprintf("key%d", i))
	}
	for i, a := range g.fresh {
		name(a, fmt.Sprintf("fresh%d", i))
	}
	for a, n := range map[common.Address]string{g.forwarder: "forwarder", g.destructor: "destructor", g.factory: "factory",
		g.bouncer: "bouncer", g.creator: "creator", g.reverter: "reverter", g.relay: "relay", g.token: "token", g.feeToken: "feeToken",
		g.rebaseToken: "rebaseToken", g.bareToken: "bareToken", g.nft: "nft", g.multi: "multi"} {
		name(a, n)
	}
	for _, a := range g.candidates {
		if _, ok := out[strings.ToLower(a.Hex())]; !ok {
			name(a, g.kinds[a])
		}
	}
	return out
}

// Rand is the generator's random source, for the caller's seeded choices
// (when to subscribe, when to fetch).
func (g *Generator) Rand() *rand.Rand { return g.rng }

func (g *Generator) candidate(a common.Address) {
	if !slices.Contains(g.candidates, a) {
		g.candidates = append(g.candidates, a)
	}
}

// Setup funds the keys, deploys the contracts, shares the tokens and
// makes a key the fee recipient, in a few blocks.
func (g *Generator) Setup(ctx context.Context) error {
	eth10 := new(big.Int).Mul(big.NewInt(1000), big.NewInt(1e18))
	if err := g.chain.Fund(ctx, g.eoas, eth10); err != nil {
		return fmt.Errorf("fund: %w", err)
	}
	deploy := func(code []byte) (common.Address, error) {
		from := g.eoas[0]
		addr := crypto.CreateAddress(from, g.s.nonces[from])
		init := deployCode(code)
		if len(code) <= 255 {
			init = devchain.InitCode(code)
		}
		_, err := g.s.send(ctx, g.keys[0], nil, nil, init, 3_000_000, 1)
		return addr, err
	}
	var err error
	for _, c := range []struct {
		at   *common.Address
		code []byte
	}{
		{&g.forwarder, devchain.ForwarderCode()}, {&g.destructor, devchain.DestructorCode()}, {&g.factory, devchain.FactoryCode()},
		{&g.bouncer, bouncerCode()}, {&g.creator, creatorCode()}, {&g.reverter, revertCode()}, {&g.relay, relayCode(g.eoas[len(g.eoas)-1])},
		{&g.token, tokenCode(0, true)}, {&g.feeToken, tokenCode(10, true)}, {&g.rebaseToken, tokenCode(0, true)},
		{&g.bareToken, tokenCode(0, false)}, {&g.nft, nftCode()}, {&g.multi, multiCode()},
	} {
		if *c.at, err = deploy(c.code); err != nil {
			return err
		}
	}
	if err := g.seal(ctx); err != nil {
		return err
	}
	g.creatorN = 1
	g.destructors = append(g.destructors, g.destructor)
	million := new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(1e18))
	holders := append(slices.Clone(g.eoas), g.forwarder)
	for _, t := range []common.Address{g.token, g.feeToken, g.rebaseToken, g.bareToken} {
		for _, h := range holders {
			if _, err := g.s.send(ctx, g.keys[0], &t, nil, call2(selMint, h, million), 200_000, 1); err != nil {
				return err
			}
		}
	}
	if err := g.setFeeRecipient(ctx, g.eoas[1]); err != nil {
		return err
	}
	if err := g.seal(ctx); err != nil {
		return err
	}
	for i := range 6 {
		g.salt++
		var code []byte
		kind := "destructor"
		switch i % 3 {
		case 0:
			code = append(devchain.InitCode(devchain.DestructorCode()), binary.BigEndian.AppendUint64(nil, g.cfg.Seed<<16|g.salt)...)
		case 1:
			code, kind = burnInit(g.cfg.Seed<<16|g.salt), "burner"
		case 2:
			code, kind = bequeathInit(g.fresh[0], g.cfg.Seed<<16|g.salt), "bequeather"
		}
		p := counterfactual{addr: crypto.CreateAddress2(g.factory, common.Hash{}, crypto.Keccak256(code)), code: code, kind: kind}
		g.pending = append(g.pending, p)
		g.kinds[p.addr] = fmt.Sprintf("create2 %s %d", kind, i)
	}
	for _, a := range g.eoas {
		g.candidate(a)
	}
	for _, a := range g.fresh {
		g.candidate(a)
	}
	for _, a := range []common.Address{g.forwarder, g.destructor, g.factory, g.bouncer, g.creator, g.relay, g.token, g.rebaseToken} {
		g.candidate(a)
	}
	for _, p := range g.pending {
		g.candidate(p.addr)
	}
	return nil
}

func (g *Generator) seal(ctx context.Context) error { return g.chain.Seal(ctx, g.s.take()) }

// Round sends one round's actions and returns once they are mined.
func (g *Generator) Round(ctx context.Context) error {
	n := 1 + g.rng.IntN(g.cfg.MaxTxs)
	if r, ok := g.chain.(Rollup); ok {
		// No withdrawals on the OP stack: deposits, and now and then
		// new L1 fees, first (deposits lead their block, and bump the
		// nonces of the keys that make them).
		g.rollupRound(r)
	} else if _, plain := g.chain.(Coinbase); !plain && g.rng.IntN(5) == 0 {
		// Withdrawals and the fee recipient first: geth --dev mines a
		// block for a withdrawal on its own.
		if err := g.withdraw(ctx); err != nil {
			return err
		}
	}
	if g.rng.IntN(8) == 0 {
		if err := g.setFeeRecipient(ctx, g.pick(append(slices.Clone(g.eoas), g.fresh...))); err != nil {
			return err
		}
		g.Actions["fee recipient"]++
	}
	for range n {
		if err := g.action(ctx); err != nil {
			return err
		}
	}
	return g.seal(ctx)
}

// Flush sends a plain transfer and waits for it: after it, everything
// sent before is mined (geth mines withdrawals on their own).
func (g *Generator) Flush(ctx context.Context) error {
	if _, err := g.s.send(ctx, g.keys[3], &g.fresh[2], big.NewInt(1), nil, 100_000, 1); err != nil {
		return err
	}
	return g.seal(ctx)
}

func (g *Generator) pick(as []common.Address) common.Address { return as[g.rng.IntN(len(as))] }

// setFeeRecipient makes who the fee recipient of the next blocks.
func (g *Generator) setFeeRecipient(ctx context.Context, who common.Address) error {
	if c, ok := g.chain.(Coinbase); ok {
		return c.SetFeeRecipient(ctx, who)
	}
	if err := g.rpc.CallContext(ctx, nil, "dev_setFeeRecipient", who.Hex()); err != nil {
		return fmt.Errorf("dev_setFeeRecipient: %w", err)
	}
	return nil
}

// rollupRound queues a round's deposits on an OP-stack chain: from a key
// or an address nobody holds a key of, minting, moving value to anything
// (a contract may refuse it: the deposit fails, its mint stays), more
// value than the sender holds with its mint (failed), through the
// forwarder (internal movements), or creating a contract; and now and
// then new L1 fee parameters.
func (g *Generator) rollupRound(r Rollup) {
	for range g.rng.IntN(4) {
		from := g.pick(append(slices.Clone(g.eoas), g.fresh...))
		// A deposit uses its sender's nonce, a key's too.
		nonces := g.depositNonces
		if slices.Contains(g.eoas, from) {
			nonces = g.s.nonces
		}
		nonce := nonces[from]
		nonces[from]++
		d := Deposit{From: from, Gas: 300_000}
		if g.rng.IntN(3) > 0 {
			d.Mint = g.amount()
		}
		to := g.pick(g.candidates)
		switch k := g.rng.IntN(6); k {
		case 0, 1:
			d.To, d.Value = &to, g.amount()
			g.Actions["deposit"]++
		case 2:
			d.To, d.Value = &g.reverter, g.amount()
			g.Actions["deposit failed"]++
		case 3:
			d.To, d.Value = &to, new(big.Int).Mul(big.NewInt(1e9), big.NewInt(1e18)) // more than anyone holds
			g.Actions["deposit failed"]++
		case 4:
			d.To, d.Value, d.Data = &g.forwarder, g.amount(), common.LeftPadBytes(to.Bytes(), 32)
			g.Actions["deposit internal"]++
		case 5:
			d.Value, d.Data, d.Gas = g.amount(), devchain.InitCode(devchain.ForwarderCode()), 1_000_000
			created := crypto.CreateAddress(from, nonce)
			g.kinds[created] = "deposit creation"
			g.candidate(created)
			g.Actions["deposit creation"]++
		}
		r.Deposit(d)
	}
	if g.rng.IntN(6) == 0 {
		r.SetL1Fees(L1Fees{L1BaseFee: big.NewInt(int64(1+g.rng.IntN(100)) * 1e9), BlobBaseFee: big.NewInt(int64(1 + g.rng.IntN(10_000_000_000))),
			BaseFeeScalar: uint32(g.rng.IntN(10_000)), BlobBaseFeeScalar: uint32(g.rng.IntN(2_000_000)),
			OperatorFeeScalar: uint32(g.rng.IntN(5_000_000)), OperatorFeeConstant: uint64(g.rng.IntN(1e10))})
		g.Actions["l1 fees"]++
	}
}

// amount is a random amount: mostly round gwei, sometimes odd wei.
func (g *Generator) amount() *big.Int {
	n := big.NewInt(int64(1 + g.rng.IntN(5000)))
	if g.rng.IntN(4) == 0 {
		return n.Mul(n, big.NewInt(1_000_333))
	}
	return n.Mul(n, big.NewInt(1e9))
}

func (g *Generator) withdraw(ctx context.Context) error {
	to := g.pick(g.candidates)
	w := map[string]any{"index": hexutil.EncodeUint64(g.withdrawals), "validatorIndex": "0x0", "address": to.Hex(),
		"amount": hexutil.EncodeUint64(uint64(1 + g.rng.IntN(100_000)))}
	if err := g.rpc.CallContext(ctx, nil, "dev_addWithdrawal", w); err != nil {
		return fmt.Errorf("dev_addWithdrawal: %w", err)
	}
	g.withdrawals++
	g.Actions["withdrawal"]++
	return nil
}

// Action is a kind of movement a round sends.
type Action int

// The actions; a round picks them at random, some twice as often
// (weighted).
const (
	ActTransfer             Action = iota // a plain transfer, to anything (a contract may refuse it: failed)
	ActFailedCall                         // a failed call with value
	ActERC20                              // an ERC-20 transfer; now and then more than held: failed
	ActFeeToken                           // a fee-on-transfer token's transfer
	ActRebase                             // a rebase: a balance changes with no log
	ActBareToken                          // a transfer of a token without balanceOf
	ActERC721                             // an ERC-721 Transfer (four topics): a mint, or a token given before moving on
	ActERC1155                            // an ERC-1155 TransferSingle: a mint, or ids given before moving on (more than held: failed)
	ActERC1155Batch                       // an ERC-1155 TransferBatch of two ids (the same twice, now and then)
	ActInternal                           // nested internal calls, some through a branch that reverts
	ActMulti                              // ether and a token of one address in one transaction
	ActCreate2                            // CREATE2 of a counterfactual address, with value
	ActCounterfactual                     // a send to a counterfactual address before it exists
	ActCreate                             // CREATE, by a contract or by a transaction, with value
	ActSelfdestruct                       // a self-destruct to another address, maybe funded in the same block
	ActSelfdestructToItself               // a self-destruct to itself, later than its creation: the balance stays
	ActRelay                              // a transfer without input to the relay, whose code passes the value on
	// Not among the random ones (tests send them):
	ActRebaseTransfer // a logged transfer of the rebasing token
	ActPoke           // a silent rebase of the target's balance (up)
	ActBounce         // a payout to the target through the bouncer, which reverts: the forwarder keeps the value
)

var weighted = []Action{ActTransfer, ActTransfer, ActFailedCall, ActERC20, ActERC20, ActFeeToken, ActRebase, ActBareToken,
	ActERC721, ActERC1155, ActERC1155Batch, ActInternal, ActInternal, ActMulti, ActCreate2, ActCounterfactual, ActCreate, ActSelfdestruct, ActSelfdestructToItself, ActRelay}

// action sends one random action.
func (g *Generator) action(ctx context.Context) error {
	a := weighted[g.rng.IntN(len(weighted))]
	return g.act(ctx, a, g.pick(g.candidates))
}

// Act sends one action a to target, from a random key; Seal (the next
// Round, or Flush) mines it. For ActCreate2 and ActCounterfactual a
// target among Counterfactuals is the one created or sent to.
func (g *Generator) Act(ctx context.Context, a Action, target common.Address) error {
	return g.act(ctx, a, target)
}

// Counterfactuals returns the addresses CREATE2 will make, not made yet,
// of kind ("destructor", "burner": self-destructs to itself as it is
// created, "bequeather": to a recipient).
func (g *Generator) Counterfactuals(kind string) []common.Address {
	var out []common.Address
	for _, p := range g.pending {
		if p.kind == kind {
			out = append(out, p.addr)
		}
	}
	return out
}

// Token returns the contract of the honest ERC-20 ("token"), the
// fee-on-transfer one ("fee"), the rebasing one ("rebase") and the one
// without balanceOf ("bare").
func (g *Generator) Token(name string) common.Address {
	return map[string]common.Address{"token": g.token, "fee": g.feeToken, "rebase": g.rebaseToken, "bare": g.bareToken}[name]
}

// Contract returns the generator's contracts by name: "forwarder",
// "bouncer", "reverter", "nft" (ERC-721), "multi" (ERC-1155).
func (g *Generator) Contract(name string) common.Address {
	return map[string]common.Address{"forwarder": g.forwarder, "bouncer": g.bouncer, "reverter": g.reverter, "nft": g.nft, "multi": g.multi}[name]
}

// Seal mines what was sent since the last Seal.
func (g *Generator) Seal(ctx context.Context) error { return g.seal(ctx) }

func (g *Generator) act(ctx context.Context, a Action, target common.Address) error {
	k := g.rng.IntN(len(g.keys))
	key, from := g.keys[k], g.eoas[k]
	tip := int64(1 + g.rng.IntN(3))
	send := func(name string, to *common.Address, value *big.Int, data []byte) error {
		_, err := g.s.send(ctx, key, to, value, data, 1_500_000, tip)
		if err == nil {
			g.Actions[name]++
		}
		return err
	}
	pending := slices.IndexFunc(g.pending, func(p counterfactual) bool { return p.addr == target })
	switch a {
	case ActTransfer:
		return send("transfer", &target, g.amount(), nil)
	case ActRelay:
		return send("relay", &g.relay, g.amount(), nil)
	case ActFailedCall:
		return send("failed call", &g.reverter, g.amount(), []byte{1})
	case ActERC20:
		amt := g.amount()
		if g.rng.IntN(6) == 0 {
			amt = new(big.Int).Lsh(big.NewInt(1), 200)
		}
		return send("erc20", &g.token, nil, call2(selTransfer, target, amt))
	case ActFeeToken:
		return send("fee token", &g.feeToken, nil, call2(selTransfer, target, g.amount()))
	case ActRebase:
		amt := g.amount()
		if g.rng.IntN(2) == 0 {
			bal, err := g.balanceOf(ctx, g.rebaseToken, target)
			if err != nil {
				return err
			}
			amt = new(big.Int).Neg(new(big.Int).Div(bal, big.NewInt(int64(2+g.rng.IntN(5)))))
		}
		if g.rng.IntN(3) == 0 {
			// A rebase beside a logged transfer of the same holder.
			if err := send("rebase transfer", &g.rebaseToken, nil, call2(selTransfer, target, g.amount())); err != nil {
				return err
			}
			target = from
		}
		return send("rebase", &g.rebaseToken, nil, call2(selPoke, target, amt))
	case ActRebaseTransfer:
		return send("rebase transfer", &g.rebaseToken, nil, call2(selTransfer, target, g.amount()))
	case ActPoke:
		return send("rebase", &g.rebaseToken, nil, call2(selPoke, target, g.amount()))
	case ActBareToken:
		return send("bare token", &g.bareToken, nil, call2(selTransfer, target, g.amount()))
	case ActERC721:
		ids := slices.Sorted(maps.Keys(g.nftOwner))
		id, owner, name := g.nftID+1, common.Address{}, "erc721 mint"
		if len(ids) > 0 && g.rng.IntN(3) > 0 {
			id, name = ids[g.rng.IntN(len(ids))], "erc721"
			owner = g.nftOwner[id]
		} else {
			g.nftID++
		}
		g.nftOwner[id] = target
		data := append(slices.Clone(selTransferFrom), common.LeftPadBytes(owner.Bytes(), 32)...)
		data = append(data, common.LeftPadBytes(target.Bytes(), 32)...)
		data = append(data, common.LeftPadBytes(new(big.Int).Mul(new(big.Int).SetUint64(id), big.NewInt(1_000_000_007)).Bytes(), 32)...)
		return send(name, &g.nft, nil, data)
	case ActERC1155, ActERC1155Batch:
		holder, id1, name := common.Address{}, g.multiID(), "erc1155 mint"
		holders := slices.SortedFunc(maps.Keys(g.multiHeld), func(a, b common.Address) int { return a.Cmp(b) })
		if len(holders) > 0 && g.rng.IntN(3) > 0 {
			holder, name = holders[g.rng.IntN(len(holders))], "erc1155"
			id1 = g.pick2(g.multiHeld[holder])
		}
		amount := func() *big.Int { return big.NewInt(int64(1 + g.rng.IntN(5))) }
		g.multiHeld[target] = append(g.multiHeld[target], id1)
		data := append(slices.Clone(selSafeTransfer), common.LeftPadBytes(holder.Bytes(), 32)...)
		data = append(data, common.LeftPadBytes(target.Bytes(), 32)...)
		data = append(data, common.LeftPadBytes(new(big.Int).SetUint64(id1).Bytes(), 32)...)
		data = append(data, common.LeftPadBytes(amount().Bytes(), 32)...)
		if a == ActERC1155 {
			return send(name, &g.multi, nil, append(data, common.LeftPadBytes(big.NewInt(160).Bytes(), 32)...)) // empty bytes
		}
		id2 := id1
		if g.rng.IntN(4) > 0 {
			id2 = g.multiID()
			if holder != (common.Address{}) {
				id2 = g.pick2(g.multiHeld[holder])
			}
		}
		g.multiHeld[target] = append(g.multiHeld[target], id2)
		data = append(slices.Clone(selBatch2), data[4:]...)
		data = append(data, common.LeftPadBytes(new(big.Int).SetUint64(id2).Bytes(), 32)...)
		data = append(data, common.LeftPadBytes(amount().Bytes(), 32)...)
		return send(name+" batch", &g.multi, nil, data)
	case ActInternal:
		var hops []common.Address
		for range g.rng.IntN(3) {
			hops = append(hops, g.pick([]common.Address{g.forwarder, g.forwarder, g.bouncer}))
		}
		hops = append(hops, target)
		var data []byte
		for _, h := range hops[:] {
			data = append(data, common.LeftPadBytes(h.Bytes(), 32)...)
		}
		return send("internal", &g.forwarder, g.amount(), data)
	case ActBounce:
		data := append(common.LeftPadBytes(g.bouncer.Bytes(), 32), common.LeftPadBytes(target.Bytes(), 32)...)
		return send("bounce", &g.forwarder, g.amount(), data)
	case ActMulti:
		return send("multi", &g.token, g.amount(), call2(selTransfer, target, g.amount()))
	case ActCreate2:
		if len(g.pending) == 0 {
			return send("transfer", &target, g.amount(), nil)
		}
		i := pending
		if i < 0 {
			i = g.rng.IntN(len(g.pending))
		}
		p := g.pending[i]
		g.pending = slices.Delete(g.pending, i, i+1)
		if p.kind == "destructor" {
			g.destructors = append(g.destructors, p.addr)
		}
		return send("create2 "+p.kind, &g.factory, g.amount(), p.code)
	case ActCounterfactual:
		if len(g.pending) == 0 {
			return send("transfer", &target, g.amount(), nil)
		}
		i := pending
		if i < 0 {
			i = g.rng.IntN(len(g.pending))
		}
		return send("counterfactual", &g.pending[i].addr, g.amount(), nil)
	case ActCreate:
		code, kind := g.initCode()
		if g.rng.IntN(2) == 0 {
			addr := crypto.CreateAddress(g.creator, g.creatorN)
			g.creatorN++
			g.created(addr, kind)
			return send("create "+kind, &g.creator, g.amount(), code)
		}
		addr := crypto.CreateAddress(from, g.s.nonces[from])
		g.created(addr, kind)
		return send("deploy "+kind, nil, g.amount(), code)
	case ActSelfdestruct:
		d := g.pick(g.destructors)
		if g.rng.IntN(2) == 0 {
			if err := send("fund destructor", &d, g.amount(), nil); err != nil {
				return err
			}
		}
		return send("selfdestruct", &d, nil, common.LeftPadBytes(target.Bytes(), 32))
	case ActSelfdestructToItself:
		d := g.pick(g.destructors)
		return send("selfdestruct to itself", &d, nil, common.LeftPadBytes(d.Bytes(), 32))
	}
	return nil
}

// multiID is an ERC-1155 id to mint: one of a few, or a huge one.
func (g *Generator) multiID() uint64 {
	if g.rng.IntN(5) == 0 {
		return ^uint64(0) - uint64(g.rng.IntN(2))
	}
	return uint64(1 + g.rng.IntN(4))
}

// pick2 picks one of ids.
func (g *Generator) pick2(ids []uint64) uint64 { return ids[g.rng.IntN(len(ids))] }

// initCode returns random init code for a creation: a destructor, a
// contract that burns itself, or one that leaves its value to a
// recipient, all in the creating transaction.
func (g *Generator) initCode() ([]byte, string) {
	g.salt++
	salt := g.cfg.Seed<<16 | g.salt
	switch g.rng.IntN(3) {
	case 0:
		return burnInit(salt), "burner"
	case 1:
		return bequeathInit(g.pick(g.candidates), salt), "bequeather"
	}
	return append(devchain.InitCode(devchain.DestructorCode()), binary.BigEndian.AppendUint64(nil, salt)...), "destructor"
}

func (g *Generator) created(a common.Address, kind string) {
	g.candidate(a)
	g.kinds[a] = fmt.Sprintf("create %s %d", kind, len(g.kinds))
	if kind == "destructor" {
		g.destructors = append(g.destructors, a)
	}
}

// balanceOf reads a token balance at the latest block.
func (g *Generator) balanceOf(ctx context.Context, token, holder common.Address) (*big.Int, error) {
	var out hexutil.Bytes
	data := append(slices.Clone(selBalanceOf), common.LeftPadBytes(holder.Bytes(), 32)...)
	if err := g.rpc.CallContext(ctx, &out, "eth_call", map[string]any{"to": token, "data": hexutil.Bytes(data)}, "latest"); err != nil {
		return nil, fmt.Errorf("balanceOf: %w", err)
	}
	return new(big.Int).SetBytes(out), nil
}

// RPC is the generator's connection to the node.
func (g *Generator) RPC() *rpc.Client { return g.rpc }
