package adversary

// The invariant checker: what addrd's /v1 API says of each address,
// held to what the node says.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// Checker reads a node and addrd's API. The zero value is not usable:
// set Node, API, Key and Chain.
type Checker struct {
	// Node is the node's JSON-RPC URL: the truth.
	Node string
	// API is addrd's base URL (http://host:port) and Key an API key
	// (ID:SECRET) of the account the addresses are subscribed by.
	API, Key string
	// Chain is the chain's name in the API's paths, such as ETH.
	Chain string
	// Traced says that addrd reads traces: internal movements are then
	// seen, and a change they cause is owed a row at its block.
	Traced bool
	// Tokens are contracts to check besides those addrd lists.
	Tokens []common.Address
	// Honest are token contracts whose logs say every change of their
	// balances (no fee on transfer, no rebase): their rows are never
	// owed a difference.
	Honest []common.Address
	// HTTP is the client of the API; default http.DefaultClient.
	HTTP *http.Client
}

// Violation is one invariant broken.
type Violation struct {
	Rule     string // chain, start, reconciled, change, balances, negative, coverage, causes, unreadable, transactions, state, honest
	Address  string
	Contract string // "" for the native coin
	Block    uint64
	Detail   string
}

func (v Violation) String() string {
	c := v.Contract
	if c == "" {
		c = "native"
	}
	return fmt.Sprintf("%s: %s %s block %d: %s", v.Rule, v.Address, c, v.Block, v.Detail)
}

// Named writes v with the names of its addresses, as names has them.
func (v Violation) Named(names map[string]string) string {
	s := v.String()
	for a, n := range names {
		s = strings.ReplaceAll(s, a, a[:8]+"("+n+")")
	}
	return s
}

// Report is what Check found and covered.
type Report struct {
	Violations []Violation
	// Transactions are the transactions listed, Movements the causes of
	// statement rows, Rows the rows, AddressBlocks the (address, asset,
	// block) balances compared with the node.
	Transactions, Movements, Rows, AddressBlocks int
}

// Row is a statement row as the API writes it; Reconciled and Checked
// are pointers so that a row may leave them out or null.
type Row struct {
	BlockNumber  uint64 `json:"block_number"`
	Contract     string `json:"contract"`
	TokenID      string `json:"token_id"`
	Amount       string `json:"amount"`
	BalanceAfter string `json:"balance_after"`
	Causes       []struct {
		Kind   string `json:"kind"`
		TxHash string `json:"transaction_hash"`
		Amount string `json:"amount"`
	} `json:"causes"`
	Reconciled *bool  `json:"reconciled"`
	Checked    *bool  `json:"checked"`
	Difference string `json:"difference"`
}

// holding is the asset key of a contract and an ERC-1155 token id: the
// contract, or contract/id (as addrd keeps them).
func holding(contract, tokenID string) string {
	if tokenID == "" {
		return contract
	}
	return contract + "/" + tokenID
}

// asserted reports whether the row says its balance_after was compared
// with the node and agreed.
func (r Row) asserted() bool {
	return r.Reconciled != nil && *r.Reconciled && (r.Checked == nil || *r.Checked)
}

// Check checks every address of addresses, whose history addrd has
// stored up to block head.
func (c *Checker) Check(ctx context.Context, addresses []common.Address, head uint64) (*Report, error) {
	node, err := rpc.DialContext(ctx, c.Node)
	if err != nil {
		return nil, err
	}
	defer node.Close()
	n := &nodeView{rpc: node, traced: c.Traced, blocks: make(map[uint64]*blockView), balances: make(map[balKey]*big.Int), unread: make(map[balKey]bool)}
	rep := &Report{}
	for _, a := range addresses {
		if err := c.checkAddress(ctx, n, strings.ToLower(a.Hex()), head, rep); err != nil {
			return nil, fmt.Errorf("%s: %w", a.Hex(), err)
		}
	}
	return rep, nil
}

func (c *Checker) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.API+path, nil)
	if err != nil {
		return err
	}
	id, secret, _ := strings.Cut(c.Key, ":")
	req.SetBasicAuth(id, secret)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// pages reads every page of a list.
func pages[T any](ctx context.Context, c *Checker, path string, items func(*T) []any, next func(*T) string) ([]any, error) {
	var out []any
	token := ""
	for {
		p := path + "?page_size=100"
		if token != "" {
			p += "&page_token=" + url.QueryEscape(token)
		}
		var page T
		if err := c.get(ctx, p, &page); err != nil {
			return nil, err
		}
		out = append(out, items(&page)...)
		if token = next(&page); token == "" {
			return out, nil
		}
	}
}

type txPage struct {
	Transactions []struct {
		Hash        string `json:"hash"`
		BlockNumber uint64 `json:"block_number"`
	} `json:"transactions"`
	Next string `json:"next_page_token"`
}

type rowPage struct {
	Rows []Row  `json:"balance_changes"`
	Next string `json:"next_page_token"`
}

func (c *Checker) checkAddress(ctx context.Context, n *nodeView, a string, head uint64, rep *Report) error {
	base := "/v1/chains/" + c.Chain + "/addresses/" + a
	bad := func(rule, contract string, block uint64, format string, args ...any) {
		rep.Violations = append(rep.Violations, Violation{Rule: rule, Address: a, Contract: contract, Block: block, Detail: fmt.Sprintf(format, args...)})
	}
	var sub struct {
		State string  `json:"state"`
		Start *uint64 `json:"history_start_block"`
	}
	if err := c.get(ctx, base, &sub); err != nil {
		return err
	}
	if sub.State != "ACTIVE" || sub.Start == nil {
		bad("state", "", head, "state %s, history from %v: want ACTIVE once caught up", sub.State, sub.Start)
		return nil
	}
	start := *sub.Start
	var bals struct {
		Balances []struct {
			Contract string `json:"contract"`
			TokenID  string `json:"token_id"`
			Amount   string `json:"amount"`
			Block    uint64 `json:"block_number"`
		} `json:"balances"`
	}
	if err := c.get(ctx, base+"/balances", &bals); err != nil {
		return err
	}
	rowsAny, err := pages(ctx, c, base+"/balance_changes", func(p *rowPage) []any {
		out := make([]any, len(p.Rows))
		for i, r := range p.Rows {
			out[i] = r
		}
		return out
	}, func(p *rowPage) string { return p.Next })
	if err != nil {
		return err
	}
	txsAny, err := pages(ctx, c, base+"/transactions", func(p *txPage) []any {
		out := make([]any, len(p.Transactions))
		for i, t := range p.Transactions {
			out[i] = [2]any{t.Hash, t.BlockNumber}
		}
		return out
	}, func(p *txPage) string { return p.Next })
	if err != nil {
		return err
	}

	// The assets: the native coin, the tokens asked for, every token
	// (an ERC-1155 contract's each id) whose logs name the address in
	// the history, and whatever addrd lists.
	assets := []string{""}
	for _, t := range c.Tokens {
		assets = append(assets, strings.ToLower(t.Hex()))
	}
	for b := start; b <= head; b++ {
		bv, err := n.block(ctx, b)
		if err != nil {
			return err
		}
		for _, key := range slices.Sorted(maps.Keys(bv.tokens)) {
			if bv.tokens[key][a] && !slices.Contains(assets, key) {
				assets = append(assets, key)
			}
		}
	}
	byAsset := make(map[string][]Row)
	for _, x := range rowsAny {
		r := x.(Row)
		key := holding(r.Contract, r.TokenID)
		byAsset[key] = append(byAsset[key], r)
		if !slices.Contains(assets, key) {
			assets = append(assets, key)
		}
	}
	listed := make(map[string]string)
	for _, b := range bals.Balances {
		key := holding(b.Contract, b.TokenID)
		listed[key] = b.Amount
		if !slices.Contains(assets, key) {
			assets = append(assets, key)
		}
		if node, ok, err := n.balance(ctx, a, key, b.Block); err != nil {
			return err
		} else if ok && node.String() != b.Amount {
			bad("balances", key, b.Block, "/balances says %s, the node %s", b.Amount, node)
		}
	}
	from := start
	if from > 0 {
		from--
	}
	for _, asset := range assets {
		rows := byAsset[asset]
		rep.Rows += len(rows)
		readable, err := n.readable(ctx, a, asset, head)
		if err != nil {
			return err
		}
		if !readable {
			if len(rows) > 0 {
				bad("unreadable", asset, rows[0].BlockNumber, "%d statement rows for an asset whose balance the node cannot read", len(rows))
			}
			continue
		}
		at := make(map[uint64]Row, len(rows))
		for i, r := range rows {
			at[r.BlockNumber] = r
			after, ok1 := new(big.Int).SetString(r.BalanceAfter, 10)
			amount, ok2 := new(big.Int).SetString(r.Amount, 10)
			if !ok1 || !ok2 {
				bad("causes", asset, r.BlockNumber, "amount %q or balance_after %q is not a number", r.Amount, r.BalanceAfter)
				continue
			}
			if r.BlockNumber < start || r.BlockNumber > head {
				bad("coverage", asset, r.BlockNumber, "a row outside the history %d..%d", start, head)
			}
			if after.Sign() < 0 {
				bad("negative", asset, r.BlockNumber, "balance_after %s", after)
			}
			sum := new(big.Int)
			for _, cs := range r.Causes {
				rep.Movements++
				if v, ok := new(big.Int).SetString(cs.Amount, 10); ok {
					sum.Add(sum, v)
				} else {
					bad("causes", asset, r.BlockNumber, "cause amount %q", cs.Amount)
				}
			}
			if d, ok := new(big.Int).SetString(orZero(r.Difference), 10); ok {
				sum.Add(sum, d)
			}
			if sum.Cmp(amount) != 0 {
				bad("causes", asset, r.BlockNumber, "causes and difference add up to %s, amount %s", sum, amount)
			}
			if orZero(r.Difference) != "0" && slices.ContainsFunc(c.Honest, func(h common.Address) bool {
				return strings.EqualFold(r.Contract, h.Hex())
			}) {
				bad("honest", asset, r.BlockNumber, "a difference of %s for a token whose logs say every change; rows %s", r.Difference, near(rows, r.BlockNumber))
			}
			before := new(big.Int).Sub(after, amount)
			if i+1 < len(rows) {
				if older := rows[i+1].BalanceAfter; older != before.String() {
					bad("chain", asset, r.BlockNumber, "balance_after − amount = %s, the older row (block %d) ends at %s; rows %s", before, rows[i+1].BlockNumber, older, near(rows, r.BlockNumber))
				}
			} else if r.BlockNumber >= start {
				want := new(big.Int)
				if start > 0 {
					if want, _, err = n.balance(ctx, a, asset, start-1); err != nil {
						return err
					}
				}
				if before.Cmp(want) != 0 {
					bad("start", asset, r.BlockNumber, "the oldest row starts from %s, the node had %s before the history (block %d)", before, want, start)
				}
			}
			if r.asserted() {
				node, _, err := n.balance(ctx, a, asset, r.BlockNumber)
				if err != nil {
					return err
				}
				if node.Cmp(after) != 0 {
					bad("reconciled", asset, r.BlockNumber, "says reconciled with balance_after %s, the node has %s (%s unexplained); rows %s", after, node, new(big.Int).Sub(node, after), near(rows, r.BlockNumber))
				}
			}
		}
		// Every block where the node's balance changed through something
		// addrd can see has a row. A change it cannot see (a rebase; an
		// internal movement without traces) is held by the rules above:
		// no row after it may say it reconciled unless a difference took it.
		for b := from + 1; b <= head; b++ {
			prev, _, err := n.balance(ctx, a, asset, b-1)
			if err != nil {
				return err
			}
			cur, _, err := n.balance(ctx, a, asset, b)
			if err != nil {
				return err
			}
			rep.AddressBlocks++
			if _, ok := at[b]; ok {
				continue
			}
			if cur.Cmp(prev) == 0 {
				continue
			}
			seen, err := n.touches(ctx, b, a, asset)
			if err != nil {
				return err
			}
			if seen {
				bad("change", asset, b, "the node's balance went from %s to %s, no row; rows %s", prev, cur, near(rows, b))
			}
		}
		// The newest row is what /balances says (itself held to the node
		// above); an asset without rows is held by /balances alone.
		if len(rows) > 0 {
			newest := rows[0].BalanceAfter
			if got, ok := listed[asset]; (ok && got != newest) || (!ok && newest != "0") {
				bad("balances", asset, head, "the newest balance_after is %s, /balances says %q", newest, got)
			}
		}
	}

	// The transaction list: exactly those that touched the address.
	got := make(map[string]bool)
	for _, x := range txsAny {
		t := x.([2]any)
		h, b := t[0].(string), t[1].(uint64)
		if got[h] {
			bad("transactions", "", b, "%s listed twice", h)
		}
		got[h] = true
		if b < start || b > head {
			bad("transactions", "", b, "%s listed outside the history %d..%d", h, start, head)
		}
	}
	rep.Transactions += len(got)
	for b := start; b <= head; b++ {
		bv, err := n.block(ctx, b)
		if err != nil {
			return err
		}
		for _, t := range bv.txs {
			if t.parties[a] && !got[t.hash] {
				bad("transactions", "", b, "%s touched the address and is not listed", t.hash)
			}
			delete(got, t.hash)
		}
	}
	for h := range got {
		if !strings.HasPrefix(h, "0x") {
			continue
		}
		bad("transactions", "", 0, "%s is listed and did not touch the address in the history", h)
	}
	return nil
}

// near describes the rows around block b, for a violation's detail.
func near(rows []Row, b uint64) string {
	var out []string
	for _, r := range rows {
		if r.BlockNumber+3 >= b && r.BlockNumber <= b+3 {
			var kinds []string
			for _, c := range r.Causes {
				kinds = append(kinds, c.Kind+" "+c.Amount)
			}
			rec := "?"
			if r.Reconciled != nil {
				rec = fmt.Sprint(*r.Reconciled)
			}
			out = append(out, fmt.Sprintf("[%d: %s → %s reconciled %s difference %s causes %v]", r.BlockNumber, r.Amount, r.BalanceAfter, rec, orZero(r.Difference), kinds))
		}
	}
	return strings.Join(out, " ")
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// nodeView reads the node and remembers what it read.
type nodeView struct {
	rpc      *rpc.Client
	traced   bool
	blocks   map[uint64]*blockView
	balances map[balKey]*big.Int
	unread   map[balKey]bool
}

type balKey struct {
	address, contract string
	block             uint64
}

// blockView is what of a block the checker needs: who each transaction
// touched, and who else a block moves (withdrawals, fee recipient).
type blockView struct {
	txs    []txView
	native map[string]bool            // addresses whose native balance something visible moved
	tokens map[string]map[string]bool // holding key → parties of its token logs
}

type txView struct {
	hash    string
	parties map[string]bool
}

// readable reports whether the node answers asset's balance of a.
func (n *nodeView) readable(ctx context.Context, a, asset string, at uint64) (bool, error) {
	_, ok, err := n.balance(ctx, a, asset, at)
	return ok, err
}

// balance reads a's balance of asset at block (0 and false when the
// token's balanceOf does not answer).
func (n *nodeView) balance(ctx context.Context, a, asset string, block uint64) (*big.Int, bool, error) {
	k := balKey{a, asset, block}
	if v, ok := n.balances[k]; ok {
		return v, true, nil
	}
	if n.unread[k] {
		return new(big.Int), false, nil
	}
	at := hexutil.EncodeUint64(block)
	if asset == "" {
		var v hexutil.Big
		if err := n.rpc.CallContext(ctx, &v, "eth_getBalance", a, at); err != nil {
			return nil, false, fmt.Errorf("eth_getBalance %s at %d: %w", a, block, err)
		}
		n.balances[k] = v.ToInt()
		return v.ToInt(), true, nil
	}
	var out hexutil.Bytes
	contract, id, _ := strings.Cut(asset, "/")
	data := append(slices.Clone(selBalanceOf), common.LeftPadBytes(common.HexToAddress(a).Bytes(), 32)...)
	if id != "" {
		n, ok := new(big.Int).SetString(id, 10)
		if !ok {
			return nil, false, fmt.Errorf("token id %q", id)
		}
		data = append(slices.Clone(selBalanceOfID), data[4:]...)
		data = append(data, common.LeftPadBytes(n.Bytes(), 32)...)
	}
	err := n.rpc.CallContext(ctx, &out, "eth_call", map[string]any{"to": contract, "data": hexutil.Bytes(data)}, at)
	if err != nil {
		if strings.Contains(err.Error(), "revert") {
			n.unread[k] = true
			return new(big.Int), false, nil
		}
		return nil, false, fmt.Errorf("balanceOf %s %s at %d: %w", asset, a, block, err)
	}
	if len(out) < 32 {
		n.unread[k] = true
		return new(big.Int), false, nil
	}
	v := new(big.Int).SetBytes(out[:32])
	n.balances[k] = v
	return v, true, nil
}

// touches reports whether something addrd can see moved a's asset in
// block b: a transaction from or to it, a creation of it, a traced
// movement (with traces), a withdrawal, the block's fee income, a token
// log (ERC-20, ERC-721 Transfer; ERC-1155 TransferSingle, TransferBatch).
func (n *nodeView) touches(ctx context.Context, b uint64, a, asset string) (bool, error) {
	bv, err := n.block(ctx, b)
	if err != nil {
		return false, err
	}
	if asset == "" {
		return bv.native[a], nil
	}
	return bv.tokens[asset][a], nil
}

func (n *nodeView) block(ctx context.Context, b uint64) (*blockView, error) {
	if bv, ok := n.blocks[b]; ok {
		return bv, nil
	}
	at := hexutil.EncodeUint64(b)
	var blk struct {
		Miner        common.Address `json:"miner"`
		Transactions []struct {
			Hash  common.Hash     `json:"hash"`
			From  common.Address  `json:"from"`
			To    *common.Address `json:"to"`
			Value hexutil.Big     `json:"value"`
		} `json:"transactions"`
		Withdrawals []struct {
			Address common.Address `json:"address"`
		} `json:"withdrawals"`
	}
	if err := n.rpc.CallContext(ctx, &blk, "eth_getBlockByNumber", at, true); err != nil {
		return nil, fmt.Errorf("block %d: %w", b, err)
	}
	var receipts []struct {
		Status          hexutil.Uint64  `json:"status"`
		ContractAddress *common.Address `json:"contractAddress"`
		Logs            []struct {
			Address common.Address `json:"address"`
			Topics  []common.Hash  `json:"topics"`
			Data    hexutil.Bytes  `json:"data"`
		} `json:"logs"`
	}
	if err := n.rpc.CallContext(ctx, &receipts, "eth_getBlockReceipts", at); err != nil {
		return nil, fmt.Errorf("receipts of block %d: %w", b, err)
	}
	var traces []struct {
		Result frame `json:"result"`
	}
	if n.traced && len(blk.Transactions) > 0 {
		if err := n.rpc.CallContext(ctx, &traces, "debug_traceBlockByNumber", at, map[string]any{"tracer": "callTracer"}); err != nil {
			return nil, fmt.Errorf("traces of block %d: %w", b, err)
		}
	}
	low := func(a common.Address) string { return strings.ToLower(a.Hex()) }
	bv := &blockView{native: make(map[string]bool), tokens: make(map[string]map[string]bool)}
	if len(blk.Transactions) > 0 {
		bv.native[low(blk.Miner)] = true
	}
	for _, w := range blk.Withdrawals {
		bv.native[low(w.Address)] = true
	}
	for i, t := range blk.Transactions {
		tv := txView{hash: strings.ToLower(t.Hash.Hex()), parties: map[string]bool{low(t.From): true}}
		if t.To != nil {
			tv.parties[low(*t.To)] = true
		}
		r := receipts[i]
		if r.Status == 1 && r.ContractAddress != nil {
			tv.parties[low(*r.ContractAddress)] = true
		}
		for _, l := range r.Logs {
			keys, parties := tokenLog(l.Topics, l.Data, low(l.Address))
			for _, key := range keys {
				if bv.tokens[key] == nil {
					bv.tokens[key] = make(map[string]bool)
				}
				for _, p := range parties {
					bv.tokens[key][p] = true
					tv.parties[p] = true
				}
			}
		}
		if n.traced && r.Status == 1 && i < len(traces) {
			traces[i].Result.walk(tv.parties)
		}
		for p := range tv.parties {
			bv.native[p] = true
		}
		bv.txs = append(bv.txs, tv)
	}
	n.blocks[b] = bv
	return bv, nil
}

// tokenLog reads a token log of contract c, as the standards define
// them (not as addrd reads them): the holdings it moves and its parties.
// An ERC-20 Transfer has three topics and a word of data, an ERC-721
// Transfer four topics and none; an ERC-1155 TransferSingle (operator,
// from, to; id and value in the data) moves its id, a TransferBatch
// (ids and values as two arrays) its ids.
func tokenLog(topics []common.Hash, data []byte, c string) (keys, parties []string) {
	if len(topics) < 3 {
		return nil, nil
	}
	addr := func(h common.Hash) string { return strings.ToLower(common.BytesToAddress(h.Bytes()).Hex()) }
	switch topics[0] {
	case common.BytesToHash(transferTopic):
		if (len(topics) == 3 && len(data) == 32) || (len(topics) == 4 && len(data) == 0) {
			return []string{c}, []string{addr(topics[1]), addr(topics[2])}
		}
	case common.BytesToHash(transferSingleTopic):
		if len(topics) == 4 && len(data) == 64 {
			return []string{holding(c, new(big.Int).SetBytes(data[:32]).String())}, []string{addr(topics[2]), addr(topics[3])}
		}
	case common.BytesToHash(transferBatchTopic):
		// As multiCode writes it: ids at 64, two of them.
		if len(topics) == 4 && len(data) == 256 {
			return []string{holding(c, new(big.Int).SetBytes(data[96:128]).String()), holding(c, new(big.Int).SetBytes(data[128:160]).String())},
				[]string{addr(topics[2]), addr(topics[3])}
		}
	}
	return nil, nil
}

// frame is a frame of geth's callTracer.
type frame struct {
	Type  string          `json:"type"`
	From  common.Address  `json:"from"`
	To    *common.Address `json:"to"`
	Value *hexutil.Big    `json:"value"`
	Error string          `json:"error"`
	Calls []frame         `json:"calls"`
}

// walk adds the parties of the frames under f that moved value (or
// created a contract), leaving out those that failed with all under them.
func (f frame) walk(parties map[string]bool) {
	for _, c := range f.Calls {
		if c.Error != "" {
			continue
		}
		moved := c.Value != nil && c.Value.ToInt().Sign() != 0
		switch strings.ToUpper(c.Type) {
		case "CREATE", "CREATE2":
			moved = true
		case "CALL", "SELFDESTRUCT", "CALLCODE":
		default:
			moved = false
		}
		if moved && c.To != nil {
			parties[strings.ToLower(c.From.Hex())] = true
			parties[strings.ToLower(c.To.Hex())] = true
		}
		c.walk(parties)
	}
}
