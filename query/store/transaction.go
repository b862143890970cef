package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

type transactionRow struct {
	bun.BaseModel `bun:"table:transactions"`

	Chain       string       `bun:"chain"`
	Hash        string       `bun:"hash"`
	BlockNumber uint64       `bun:"block_number"`
	BlockHash   string       `bun:"block_hash"`
	BlockTime   time.Time    `bun:"block_time"`
	Index       uint         `bun:"tx_index"`
	Status      string       `bun:"status"`
	From        string       `bun:"from_address"`
	To          string       `bun:"to_address"`
	Value       query.Amount `bun:"value"`
	Fee         query.Amount `bun:"fee"`
	// Legacy is the one field of the family's detail that a row written
	// before documents holds in a column of its own (txdoc_legacy.go:
	// the EVM's, every chain then being one); 0 since.
	Legacy uint64  `bun:"nonce"`
	Doc    *string `bun:"doc"` // the transaction's document (txdoc.go), from migration 0003
}

// transaction reads r, a row stored without a document (before
// migration 0003), from its columns (txdoc_legacy.go).
func (r transactionRow) transaction(ld LegacyDetail) query.Transaction {
	return legacyTransaction(query.Transaction{Chain: r.Chain, Hash: r.Hash, BlockNumber: r.BlockNumber, BlockHash: r.BlockHash,
		BlockTime: utc(r.BlockTime), Index: r.Index, Status: r.Status, From: r.From, To: r.To, Value: r.Value,
		Fee: r.Fee}, r.Legacy, ld)
}

type transferRow struct {
	bun.BaseModel `bun:"table:transfers"`

	Chain    string       `bun:"chain"`
	Hash     string       `bun:"hash"`
	Position int          `bun:"log_index"`
	Asset    string       `bun:"asset"`
	Contract string       `bun:"contract"`
	From     string       `bun:"from_address"`
	To       string       `bun:"to_address"`
	Amount   query.Amount `bun:"amount"`
}

// txColumns are the transactions columns a read selects, prefixed t.
const txColumns = "t.chain, t.hash, t.block_number, t.block_hash, t.block_time, t.tx_index, t.status, " +
	"t.from_address, t.to_address, t.value, t.fee, t.nonce"

// Transactions returns the transactions touching address after the cursor
// (nil: from the most recent), most recent first, at most limit. It walks
// the (chain, address, block_number, tx_index) key, so a deep page costs
// what the first one costs. The page comes from the documents in that
// key's rows (txpage.go), or by joins when a row predates them.
func (db *DB) Transactions(ctx context.Context, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	if limit <= 0 {
		return nil, nil
	}
	q, args := txPageFirst, []any{chain, address, limit}
	if after != nil {
		q, args = txPageAfter, []any{chain, address, after.BlockNumber, after.Index, limit}
	}
	txs, err := db.transactionPage(ctx, chain, q, args, limit)
	if errors.Is(err, errNoDoc) {
		txs, err = db.transactions(ctx, db.r, chain, address, after, 0, limit, true)
	}
	return txs, wrap("transactions", err)
}

// transactions reads a page by joining transactions and transfers to the
// key: the way for rows written before migration 0002, without documents.
// It reads no transaction of a block below from: a requester's page
// starts at its covered range's first block. With docs, a transaction
// whose row has a document is read from it (see below); without, from
// the columns alone.
func (db *DB) transactions(ctx context.Context, tx bun.IDB, chain, address string, after *query.TxCursor, from uint64, limit int, docs bool) ([]query.Transaction, error) {
	if limit <= 0 {
		return nil, nil
	}
	// One statement: the page of keys, then its transactions and their
	// transfers (one row per transfer, or one with NULLs if none).
	page := tx.NewSelect().Column("a.block_number", "a.tx_index", "a.hash").TableExpr("tx_addresses AS a").
		Where("a.chain = ?", chain).Where("a.address = ?", address).
		OrderExpr("a.block_number DESC, a.tx_index DESC").Limit(int64(limit))
	if after != nil {
		page.Where("(a.block_number, a.tx_index) < (?, ?)", after.BlockNumber, after.Index)
	}
	if from > 0 {
		page.Where("a.block_number >= ?", from)
	}
	var rows []struct {
		transactionRow
		Position *int          `bun:"f_log_index"`
		Asset    *string       `bun:"f_asset"`
		Contract *string       `bun:"f_contract"`
		FFrom    *string       `bun:"f_from"`
		FTo      *string       `bun:"f_to"`
		Amount   *query.Amount `bun:"f_amount"`
	}
	doc := "NULL AS doc"
	if docs {
		doc = "t.doc"
	}
	err := tx.NewSelect().ColumnExpr(txColumns+", "+doc).
		ColumnExpr("f.log_index AS f_log_index, f.asset AS f_asset, f.contract AS f_contract").
		ColumnExpr("f.from_address AS f_from, f.to_address AS f_to, f.amount AS f_amount").
		TableExpr("(?) AS p", page).
		Join("JOIN transactions AS t ON t.chain = ? AND t.hash = p.hash", chain).
		Join("LEFT JOIN transfers AS f ON f.chain = t.chain AND f.hash = t.hash").
		OrderExpr("p.block_number DESC, p.tx_index DESC, f.log_index").
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	var txs []query.Transaction
	for _, r := range rows {
		if n := len(txs); n > 0 && txs[n-1].Hash == r.Hash && r.Doc != nil {
			continue // read whole from its document
		}
		if n := len(txs); n == 0 || txs[n-1].Hash != r.Hash {
			// A transaction with a document (a page mixes rows of an
			// older binary with newer ones) reads as a page of
			// documents would: with the fields only documents hold.
			if r.Doc != nil {
				t := readTxDoc(chain, *r.Doc, db.legacy)
				t.Hash = r.Hash // the same, or the key of a row that cannot be read
				txs = append(txs, t)
				continue
			}
			txs = append(txs, r.transaction(db.legacy))
		}
		if r.Position != nil {
			t := &txs[len(txs)-1]
			t.Transfers = append(t.Transfers, query.Transfer{Position: *r.Position, Asset: deref(r.Asset),
				Contract: deref(r.Contract), From: deref(r.FFrom), To: deref(r.FTo), Amount: derefAmount(r.Amount)})
		}
	}
	return txs, db.fillTokens(ctx, tx, txs)
}

func derefAmount(a *query.Amount) query.Amount {
	if a == nil {
		return query.Amount{}
	}
	return *a
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// joinTransactions reads the transactions of txs at missing, which hold
// their hashes alone, from the transactions table, as rows written before
// migration 0002 (without a document in tx_addresses) are read: a
// transaction's own document when it has one, else its columns and its
// transfers' rows. The fetcher of those rows wrote two kinds of transfer,
// which a kind filter needs: the transaction's value (log index -1) and
// the ERC-20 Transfer logs.
func (db *DB) joinTransactions(ctx context.Context, chain string, txs []query.Transaction, missing []int) error {
	byHash := make(map[string]query.Transaction, len(missing))
	for part := range slices.Chunk(missing, batch) {
		hashes := make([]string, len(part))
		for i, j := range part {
			hashes[i] = txs[j].Hash
		}
		var rows []transactionRow
		err := db.r.NewSelect().ColumnExpr(txColumns+", t.doc").TableExpr("transactions AS t").
			Where("t.chain = ?", chain).Where("t.hash IN (?)", bun.List(hashes)).Scan(ctx, &rows)
		if err != nil {
			return err
		}
		var joined []query.Transaction
		for _, r := range rows {
			if r.Doc == nil {
				joined = append(joined, r.transaction(db.legacy))
				continue
			}
			t := readTxDoc(chain, *r.Doc, db.legacy)
			t.Hash = r.Hash // the same, or the key of a row that cannot be read
			byHash[r.Hash] = t
		}
		joinedHashes := make([]string, len(joined))
		for i, t := range joined {
			joinedHashes[i] = t.Hash
		}
		if err := db.attachTransfers(ctx, db.r, chain, joined, joinedHashes); err != nil {
			return err
		}
		for _, t := range joined {
			for i := range t.Transfers {
				if f := &t.Transfers[i]; f.Kind == "" && f.Position < 0 {
					f.Kind = query.KindTransaction
				} else if f.Kind == "" {
					f.Kind = query.KindToken
				}
			}
			byHash[t.Hash] = t
		}
	}
	for _, j := range missing {
		t, ok := byHash[txs[j].Hash]
		if !ok {
			return fmt.Errorf("transaction %s: listed for the address but not stored", txs[j].Hash)
		}
		txs[j] = t
	}
	return db.fillTokens(ctx, db.r, txs)
}

// attachTransfers reads the transfers of txs in one query.
func (db *DB) attachTransfers(ctx context.Context, tx bun.IDB, chain string, txs []query.Transaction, hashes []string) error {
	if len(hashes) == 0 {
		return nil
	}
	var rows []transferRow
	err := tx.NewSelect().Model(&rows).Where("chain = ?", chain).Where("hash IN (?)", bun.List(hashes)).
		OrderExpr("hash, log_index").Scan(ctx)
	if err != nil {
		return err
	}
	byHash := make(map[string][]query.Transfer, len(hashes))
	for _, r := range rows {
		byHash[r.Hash] = append(byHash[r.Hash], query.Transfer{Position: r.Position, Asset: r.Asset,
			Contract: r.Contract, From: r.From, To: r.To, Amount: r.Amount})
	}
	for i := range txs {
		txs[i].Transfers = byHash[txs[i].Hash]
	}
	return nil
}

// Transaction returns one transaction with its transfers. Errors:
// query.ErrNotFound.
func (db *DB) Transaction(ctx context.Context, chain, hash string) (query.Transaction, error) {
	t, err := db.transaction(ctx, db.r, chain, hash)
	return t, wrap("transaction "+hash, err)
}

func (db *DB) transaction(ctx context.Context, tx bun.IDB, chain, hash string) (query.Transaction, error) {
	var row transactionRow
	err := tx.NewSelect().ColumnExpr(txColumns+", t.doc").TableExpr("transactions AS t").
		Where("t.chain = ?", chain).Where("t.hash = ?", hash).Scan(ctx, &row)
	if err != nil {
		return query.Transaction{}, err
	}
	if row.Doc != nil {
		txs := []query.Transaction{readTxDoc(chain, *row.Doc, db.legacy)}
		if txs[0].Unreadable != "" {
			txs[0].Hash = hash // the key the row was found by
		}
		return txs[0], db.fillTokens(ctx, tx, txs)
	}
	txs := []query.Transaction{row.transaction(db.legacy)}
	if err := db.attachTransfers(ctx, tx, chain, txs, []string{hash}); err != nil {
		return query.Transaction{}, err
	}
	return txs[0], nil
}

// PutTransactions stores backfilled transactions without moving the
// checkpoint; transactions stored already are left as they are.
func (db *DB) PutTransactions(ctx context.Context, chain string, txs []query.Transaction) error {
	if err := validate(txs, nil); err != nil {
		return wrap("put transactions", err)
	}
	if err := db.prepareWrites(ctx); err != nil {
		return wrap("put transactions", err)
	}
	q := db.newQuarantine()
	return wrap("put transactions", db.tell(q, db.tx(ctx, func(tx bun.Tx) error { return db.putTransactions(ctx, tx, chain, txs, q) })))
}

// batch bounds the rows of one INSERT statement.
const batch = 500

// putTransactions stores txs, their fields made storable (q collects
// and records those it changed).
func (db *DB) putTransactions(ctx context.Context, tx bun.IDB, chain string, txs []query.Transaction, q *quarantine) error {
	if len(txs) == 0 {
		return nil
	}
	txs = q.scrubTransactions(chain, txs)
	if err := q.record(ctx, tx); err != nil {
		return err
	}
	ids, err := db.putTokens(ctx, tx, chain, txs)
	if err != nil {
		return err
	}
	var trs, tfs, addrs []any
	for _, t := range txs {
		doc := string(appendSharedTxDoc(make([]byte, 0, txDocSize(t)), t, db.postgres, ids))
		trs = append(trs, chain, t.Hash, t.BlockNumber, t.BlockHash, t.BlockTime, t.Index, t.Status, t.From, t.To, t.Value,
			t.Fee, 0, doc)
		for _, f := range t.Transfers {
			tfs = append(tfs, chain, t.Hash, f.Position, f.Asset, f.Contract, f.From, f.To, f.Amount)
		}
		for _, a := range t.Addresses() {
			addrs = append(addrs, chain, a, t.BlockNumber, t.Index, t.Hash, doc, unixTime(t.BlockTime))
		}
	}
	if err := db.insert(ctx, tx, transactionsInsert, trs, nil); err != nil {
		return fmt.Errorf("transactions: %w", err)
	}
	if err := db.insert(ctx, tx, transfersInsert, tfs, nil); err != nil {
		return fmt.Errorf("transfers: %w", err)
	}
	if err := db.insert(ctx, tx, txAddressesInsert, addrs, nil); err != nil {
		return fmt.Errorf("tx_addresses: %w", err)
	}
	return nil
}

// The inserts of a transaction's rows; a row whose key exists is left as
// it is.
var (
	transactionsInsert = &insertSpec{into: "transactions (chain, hash, block_number, block_hash, block_time, tx_index, status, " +
		"from_address, to_address, value, fee, nonce, doc)", width: 13, ignore: true}
	transfersInsert = &insertSpec{into: "transfers (chain, hash, log_index, asset, contract, from_address, to_address, amount)",
		width: 8, ignore: true}
	txAddressesInsert = &insertSpec{into: "tx_addresses (chain, address, block_number, tx_index, hash, doc, block_time)",
		width: 7, ignore: true}
)

// validate refuses what would store differently on the two dialects:
// amounts that are negative or too long for NUMERIC(78, 0).
func validate(txs []query.Transaction, balances []query.Balance) error {
	for _, t := range txs {
		if !decimal(t.Value) || !decimal(t.Fee) {
			return fmt.Errorf("transaction %s: value %s or fee %s is negative or does not fit NUMERIC(78, 0)", t.Hash, t.Value, t.Fee)
		}
		for _, f := range t.Transfers {
			if !decimal(f.Amount) {
				return fmt.Errorf("transaction %s: transfer %d: amount %s is negative or does not fit NUMERIC(78, 0)", t.Hash, f.Position, f.Amount)
			}
		}
	}
	for _, b := range balances {
		if !decimal(b.Amount) {
			return fmt.Errorf("balance of %s: amount %s is negative or does not fit NUMERIC(78, 0)", b.Address, b.Amount)
		}
	}
	return nil
}

// decimal reports whether a is not negative and fits NUMERIC(78, 0) (any
// uint256 does).
func decimal(a query.Amount) bool {
	return a.Sign() >= 0 && len(a.String()) <= 78
}
