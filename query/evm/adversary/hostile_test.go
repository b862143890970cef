package adversary_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm/adversary"
)

// hostileTokens is how many hostile tokens a run deploys: one of each
// of adversary.HostileTexts, or ADDRD_HOSTILE_TOKENS (make soak).
func hostileTokens(t *testing.T) int {
	n := len(adversary.HostileTexts)
	if s := os.Getenv("ADDRD_HOSTILE_TOKENS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("ADDRD_HOSTILE_TOKENS=%q: want a positive number", s)
		}
	}
	return n
}

// TestHostileTokens, on the dev chain and a real geth --dev, each on
// SQLite and PostgreSQL: tokens whose symbol(), name(), decimals() and
// revert reasons are NUL, invalid UTF-8, control characters, bidi
// overrides, formula text, a megabyte, lengths that lie and numbers
// beyond 2^256 are minted to one tenant's address, which also sends them
// transfers that revert; another tenant's address receives ether after.
// The chain keeps moving for both; every answer of the API (the
// transactions, each by hash, the balances, the statement's CSV export,
// the events a webhook is sent) is valid UTF-8 and JSON (or CSV),
// bounded, and says no string from the chain with a NUL, a control
// character or a bidi override, nor beyond its bound; no CSV cell starts
// like a formula; every log line is JSON of a bounded length.
func TestHostileTokens(t *testing.T) {
	n := hostileTokens(t)
	for _, geth := range []bool{false, true} {
		for _, db := range testenv.DBs() {
			name := map[bool]string{false: "DevChain", true: "Geth"}[geth] + "/" + db.Name
			t.Run(name, func(t *testing.T) {
				rng := testenv.Rand(t, 34)
				var logs testenv.Buffer
				r := run{seed: rng.Uint64N(1 << 32), geth: geth, postgres: db.Name == "PostgreSQL", traces: true, window: 1000, logs: &logs}
				h := playHostile(t, r, rng, n)
				for _, v := range h.violations {
					t.Errorf("%s", v)
				}
				checkLogs(t, logs.String(), h)
				t.Logf("%s: %d hostile tokens, %d transactions, %d API answers checked (%d bytes), %d violations",
					name, n, h.txs, h.answers, h.bytes, len(h.violations))
			})
		}
	}
}

// hostileRun is what playHostile found.
type hostileRun struct {
	violations           []string
	txs, answers, bytes  int
	tokens               []adversary.HostileToken
	maxLogLine, logLines int
}

func (h *hostileRun) violate(format string, args ...any) {
	h.violations = append(h.violations, fmt.Sprintf(format, args...))
}

func playHostile(t *testing.T, r run, rng *rand.Rand, n int) *hostileRun {
	ctx := context.Background()
	s := newStack(t, r)
	h := &hostileRun{}
	victim := s.gen.Key(2)
	other := s.gen.Candidates()[5] // a recipient without a key
	s.subscribe(victim)
	keyB, secretB, err := s.db.CreateAPIKey(ctx, "tenant b")
	if err != nil {
		t.Fatal(err)
	}
	b := *s
	b.key = keyB.ID + ":" + secretB
	b.subscribe(other)
	s.catchUp()

	tokens, err := s.gen.DeployHostile(ctx, adversary.HostileMetas(rng, n))
	if err != nil {
		t.Fatal(err)
	}
	h.tokens = tokens
	maxAmount := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	var reverts []common.Hash
	for i, tk := range tokens {
		amount := big.NewInt(int64(1 + i))
		if i%3 == 0 {
			amount = maxAmount
		}
		if err := s.gen.HostileMint(ctx, tk.Address, victim, amount); err != nil {
			t.Fatal(err)
		}
		hash, err := s.gen.HostileRevert(ctx, 2, tk.Address)
		if err != nil {
			t.Fatal(err)
		}
		reverts = append(reverts, hash)
	}
	if err := s.gen.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.gen.Act(ctx, adversary.ActTransfer, other); err != nil {
		t.Fatal(err)
	}
	if err := s.gen.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	head := s.head()

	// The chain keeps moving: every step succeeds, and the stored head
	// reaches the node's.
	var stored uint64
	for i := 0; i < 40; i++ {
		if err := s.f.FetchOnce(ctx); err != nil {
			h.violate("chain stopped: FetchOnce: %v", err)
			break
		}
		cp, _, err := s.db.Checkpoint(ctx, chainName)
		if err != nil {
			t.Fatal(err)
		}
		if stored = cp.Number; stored >= head {
			s.fetchOnce() // a last step: refreshes
			break
		}
	}
	if stored < head {
		h.violate("chain stopped: stored head %d, the node's %d", stored, head)
	}
	if txs := b.transactions(other); len(txs) == 0 {
		h.violate("tenant b: no transaction of its address after the hostile tokens' block")
	}

	a := strings.ToLower(victim.Hex())
	base := "/v1/chains/" + chainName
	var page struct {
		Transactions []json.RawMessage `json:"transactions"`
	}
	if body, ok := h.answer(s, base+"/addresses/"+a+"/transactions?page_size=1000", 0); ok {
		if err := json.Unmarshal(body, &page); err != nil {
			h.violate("transactions page: %v", err)
		}
		h.txs = len(page.Transactions)
		h.bounded("transactions page", len(body), 16<<10*max(1, len(page.Transactions)))
	}
	for i, hash := range reverts {
		if body, ok := h.answer(s, base+"/transactions/"+hash.Hex(), 0); ok {
			h.bounded("transaction "+hash.Hex(), len(body), 16<<10)
			var tx struct {
				Status string `json:"status"`
				Revert string `json:"revert_reason"`
			}
			// Error("\x00\x00\x00\x00") says nothing once its NULs are dropped.
			silent := tokens[i].Meta.Revert == "Error(only NUL)"
			if err := json.Unmarshal(body, &tx); err == nil && (tx.Status != query.StatusFailed || tx.Revert == "" && !silent) {
				h.violate("transaction %s (%s): status %q, revert reason %q: want failed, with a reason", hash.Hex(), tokens[i].Meta, tx.Status, tx.Revert)
			}
		}
	}
	if body, ok := h.answer(s, base+"/addresses/"+a+"/balances", 0); ok {
		h.bounded("balances", len(body), 1<<10*(len(tokens)+2))
		if got := strings.Count(string(body), `"contract":"0x`); got < len(tokens) {
			h.violate("balances: %d tokens, want the %d hostile ones", got, len(tokens))
		}
	}
	h.answer(s, base+"/addresses/"+a+"/balance_changes?page_size=1000", 0)
	h.answer(s, "/v1/events?page_size=1000", 0)
	if body, ok := h.answer(s, base+"/addresses/"+a+"/balance_changes:export", 'c'); ok {
		h.csv(body)
	}
	return h
}

// answer GETs path as the stack's tenant, and checks that it answers 200
// with valid UTF-8 and, unless kind is 'c' (CSV), JSON whose strings are
// clean (checkJSON). It returns the body.
func (h *hostileRun) answer(s *stack, path string, kind byte) ([]byte, bool) {
	req, _ := http.NewRequest(http.MethodGet, s.api+path, nil)
	id, secret, _ := strings.Cut(s.key, ":")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.violate("GET %s: %v", path, err)
		return nil, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.violate("GET %s: %v", path, err)
		return nil, false
	}
	h.answers++
	h.bytes += len(body)
	if resp.StatusCode != http.StatusOK {
		h.violate("GET %s: %s: %.300s", path, resp.Status, body)
		return nil, false
	}
	if !utf8.Valid(body) {
		h.violate("GET %s: the answer is not UTF-8", path)
	}
	if kind != 'c' {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			h.violate("GET %s: not JSON: %v", path, err)
			return body, true
		}
		h.checkJSON(path, "", v)
	}
	return body, true
}

// bounds are the most characters a field of a chain's string holds in
// an answer.
var bounds = map[string]int{"symbol": query.MaxSymbol, "name": query.MaxName, "revert_reason": query.MaxReason,
	"error": query.MaxReason, "call_type": query.MaxCallType}

// checkJSON walks v: every string is clean chain text (a field named in
// bounds within its bound).
func (h *hostileRun) checkJSON(path, field string, v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			h.checkJSON(path, k, x)
		}
	case []any:
		for _, x := range v {
			h.checkJSON(path, field, x)
		}
	case float64:
		if field == "decimals" && (v < 0 || v > 255) {
			h.violate("GET %s: decimals %v", path, v)
		}
	case string:
		if !query.IsChainText(v, bounds[field]) {
			h.violate("GET %s: %s %.80q (%d bytes): a control or bidi character, or beyond %d characters", path, field, v, len(v), bounds[field])
		}
	}
}

func (h *hostileRun) bounded(what string, n, max int) {
	if n > max {
		h.violate("%s: %d bytes, over %d", what, n, max)
	}
}

// csv checks the export: it parses, every cell is bounded, and none
// starts like a formula (=, +, -, @) unless it is a number.
func (h *hostileRun) csv(body []byte) {
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		h.violate("export: not CSV: %v", err)
		return
	}
	if len(rows) < 2 {
		h.violate("export: %d rows, want the hostile tokens'", len(rows))
	}
	for i, row := range rows {
		for _, cell := range row {
			if len(cell) > 4096 {
				h.violate("export: row %d: a cell of %d bytes", i, len(cell))
			}
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				if _, err := strconv.ParseFloat(cell, 64); err != nil {
					h.violate("export: row %d: cell %.60q starts like a formula", i, cell)
				}
			}
		}
	}
}

// checkLogs: every log line is a JSON object under 16 KB.
func checkLogs(t *testing.T, logs string, h *hostileRun) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
		if line == "" {
			continue
		}
		h.logLines++
		h.maxLogLine = max(h.maxLogLine, len(line))
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil || !utf8.ValidString(line) {
			t.Errorf("log line %d: not JSON: %.200q", i, line)
		}
		if len(line) > 16<<10 {
			t.Errorf("log line %d: %d bytes: %.200q", i, len(line), line)
		}
	}
	t.Logf("%d log lines, the longest %d bytes", h.logLines, h.maxLogLine)
}
