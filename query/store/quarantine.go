package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// What a block brings is stored whatever its strings hold. bun writes a
// string with a NUL byte as an error marker into the SQL (the statement
// fails, and so does the block, every time it is tried), and invalid
// UTF-8 as U+FFFD (the bytes change, and a document's lengths no longer
// match them); a string from the chain may be of any length. So before a
// write every string field is checked: one that is not query.ChainText
// within its bound (MaxSymbol for a symbol …, none for the others) is
// stored as ChainText makes it, and recorded in the table quarantine,
// in the same transaction, and handed to the WithQuarantine hook after
// the commit. The rest of the block goes on as it came.

// WithQuarantine sets what is told of each field stored changed (see
// query.Quarantined), after the commit that stored it: addrd serve logs
// it and counts it.
func WithQuarantine(fn func(query.Quarantined)) Option {
	return func(db *DB) { db.quarantined = fn }
}

type quarantineRow struct {
	bun.BaseModel `bun:"table:quarantine"`

	Chain       string `bun:"chain"`
	BlockNumber uint64 `bun:"block_number"`
	TxHash      string `bun:"tx_hash"`
	Address     string `bun:"address"`
	Field       string `bun:"field"`
	Reason      string `bun:"reason"`
	Length      int    `bun:"length"`
	At          int64  `bun:"at"` // Unix seconds
}

// quarantine collects the fields of a write that were changed.
type quarantine struct {
	chain    string
	at       time.Time
	list     []query.Quarantined
	recorded int // list[:recorded] are in the table
}

// newQuarantine starts the quarantine of one write.
func (db *DB) newQuarantine() *quarantine {
	return &quarantine{at: db.now().UTC().Truncate(time.Second)}
}

// text checks the field *s of a row at block (tx or address naming it),
// at most max characters (0: any number), and makes it ChainText when it
// is not.
func (q *quarantine) text(s *string, max int, block uint64, tx, address, field string) {
	if query.IsChainText(*s, max) {
		return
	}
	q.list = append(q.list, query.Quarantined{Chain: q.chain, Block: block, TxHash: tx, Address: address, Field: field,
		Reason: whatIsWrong(*s, max), Length: len(*s), At: q.at})
	*s = query.ChainText(*s, max)
}

// whatIsWrong says why s is not ChainText within max.
func whatIsWrong(s string, max int) string {
	var why []string
	if strings.IndexByte(s, 0) >= 0 {
		why = append(why, "NUL byte")
	}
	if !utf8.ValidString(s) {
		why = append(why, "invalid UTF-8")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r != 0 && !query.IsChainText(string(r), 0) }) {
		why = append(why, "control or bidirectional characters")
	}
	if max > 0 && utf8.RuneCountInString(query.ChainText(s, 0)) > max {
		why = append(why, "longer than "+strconv.Itoa(max)+" characters")
	}
	if len(why) == 0 {
		why = append(why, "not text")
	}
	return strings.Join(why, ", ")
}

// scrubTransactions returns txs of chain as they are stored: those with
// a field to change are copied (the caller's are left alone).
func (q *quarantine) scrubTransactions(chain string, txs []query.Transaction) []query.Transaction {
	q.chain = chain
	out := txs
	for i := range txs {
		n := len(q.list)
		t := txs[i]
		t.Transfers = slices.Clone(t.Transfers)
		q.scrubTransaction(&t)
		if len(q.list) == n {
			continue
		}
		if &out[0] == &txs[0] {
			out = slices.Clone(txs)
		}
		out[i] = t
	}
	return out
}

func (q *quarantine) scrubTransaction(t *query.Transaction) {
	b, h := t.BlockNumber, t.Hash
	q.text(&t.Hash, 0, b, h, "", "hash")
	h = t.Hash
	for _, f := range []struct {
		s     *string
		max   int
		field string
	}{
		{&t.BlockHash, 0, "block_hash"}, {&t.Status, 0, "status"}, {&t.From, 0, "from"}, {&t.To, 0, "to"},
	} {
		q.text(f.s, f.max, b, h, "", f.field)
	}
	if len(t.Parties) > 0 {
		t.Parties = slices.Clone(t.Parties)
	}
	for i := range t.Parties {
		q.text(&t.Parties[i], 0, b, h, "", "parties["+strconv.Itoa(i)+"]")
	}
	q.detail(t, b, h)
	for i := range t.Transfers {
		f := &t.Transfers[i]
		p := "transfers[" + strconv.Itoa(i) + "]."
		for _, x := range []struct {
			s     *string
			max   int
			field string
		}{
			{&f.Asset, 0, "asset"}, {&f.Contract, 0, "contract"}, {&f.From, 0, "from"}, {&f.To, 0, "to"},
			{&f.Kind, 0, "kind"}, {&f.Symbol, query.MaxSymbol, "symbol"}, {&f.Name, query.MaxName, "name"},
			{&f.TokenID, 0, "token_id"}, {&f.CallType, query.MaxCallType, "call_type"}, {&f.CallPath, 0, "call_path"},
			{&f.Error, query.MaxReason, "error"},
		} {
			q.text(x.s, x.max, b, h, "", p+x.field)
		}
	}
}

// detail checks that t's detail document is what the API can write into
// a transaction's JSON as it is: a JSON object, valid UTF-8. One that is
// not is stored as none, and quarantined.
func (q *quarantine) detail(t *query.Transaction, block uint64, tx string) {
	d := t.Detail
	if len(d) == 0 || utf8.Valid(d) && d[0] == '{' && json.Valid(d) {
		return
	}
	reason := "not a JSON object"
	if !utf8.Valid(d) {
		reason = "invalid UTF-8"
	}
	q.list = append(q.list, query.Quarantined{Chain: q.chain, Block: block, TxHash: tx, Field: "detail", Reason: reason, Length: len(d), At: q.at})
	t.Detail = nil
}

// scrubBalances is scrubTransactions for balances.
func (q *quarantine) scrubBalances(balances []query.Balance) []query.Balance {
	out := balances
	for i := range balances {
		n := len(q.list)
		bal := balances[i]
		q.chain = bal.Chain
		for _, x := range []struct {
			s     *string
			max   int
			field string
		}{
			{&bal.Address, 0, "address"}, {&bal.Asset, 0, "asset"}, {&bal.Contract, 0, "contract"},
			{&bal.Symbol, query.MaxSymbol, "symbol"}, {&bal.Name, query.MaxName, "name"},
		} {
			q.text(x.s, x.max, bal.Block, "", balances[i].Address, "balance."+x.field)
		}
		if len(q.list) == n {
			continue
		}
		if &out[0] == &balances[0] {
			out = slices.Clone(balances)
		}
		out[i] = bal
	}
	return out
}

// record stores the quarantined fields not stored yet in tx.
func (q *quarantine) record(ctx context.Context, tx bun.IDB) error {
	if len(q.list) == q.recorded {
		return nil
	}
	rows := make([]quarantineRow, len(q.list)-q.recorded)
	for i, f := range q.list[q.recorded:] {
		rows[i] = quarantineRow{Chain: f.Chain, BlockNumber: f.Block, TxHash: f.TxHash, Address: f.Address, Field: f.Field,
			Reason: f.Reason, Length: f.Length, At: f.At.Unix()}
	}
	for part := range slices.Chunk(rows, batch) {
		if _, err := tx.NewInsert().Model(&part).Exec(ctx); err != nil {
			return fmt.Errorf("quarantine: %w", err)
		}
	}
	q.recorded = len(q.list)
	return nil
}

// tell hands the quarantined fields to the WithQuarantine hook, once
// their write committed (err nil); it returns err.
func (db *DB) tell(q *quarantine, err error) error {
	if err != nil || db.quarantined == nil {
		return err
	}
	for _, f := range q.list {
		db.quarantined(f)
	}
	return nil
}

// Quarantine returns the fields of chain stored changed, newest first, at
// most limit.
func (db *DB) Quarantine(ctx context.Context, chain string, limit int) ([]query.Quarantined, error) {
	var rows []quarantineRow
	err := db.r.NewSelect().Model(&rows).Where("chain = ?", chain).
		OrderExpr("block_number DESC, tx_hash, field").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, wrap("quarantine", err)
	}
	out := make([]query.Quarantined, len(rows))
	for i, r := range rows {
		out[i] = query.Quarantined{Chain: r.Chain, Block: r.BlockNumber, TxHash: r.TxHash, Address: r.Address, Field: r.Field,
			Reason: r.Reason, Length: r.Length, At: time.Unix(r.At, 0).UTC()}
	}
	return out, nil
}
