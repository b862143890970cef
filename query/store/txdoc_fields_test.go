package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

// TestDocFields: every field of a transaction (its parties and detail
// document; a transfer's name, token id, call type and path, error) and
// of a statement row (a withdrawal's indexes, an ERC-1155 holding key)
// survives its document; documents of the versions before chain
// families read as the same transaction, their EVM fields as the EVM
// family's detail document, and those of the versions before them as
// they did, the fields they lacked empty.
func TestDocFields(t *testing.T) {
	tx := fieldsTx()
	doc := string(appendTxDoc(nil, tx, false))
	got, err := parseTxDoc("ETH", doc, evm.LegacyDetail)
	if err != nil || !reflect.DeepEqual(got, tx) {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, tx)
	}
	if !strings.HasPrefix(doc, "1:61:1") {
		t.Fatalf("document begins %.8q, want version 6, plain (the quote is in the detail, JSON already)", doc)
	}
	// A transaction with a rollup's fee and a deposit's mint keeps them.
	op := tx
	op.Fee, op.FeeParts = query.AmountOf(21015), query.FeeParts{Execution: query.AmountOf(21000), Blob: query.AmountOf(1), L1: query.AmountOf(9), Operator: query.AmountOf(5)}
	op.Mint = query.AmountOf(1e18)
	if got, err := parseTxDoc("ETH", string(appendTxDoc(nil, op, false)), evm.LegacyDetail); err != nil || !reflect.DeepEqual(got, op) {
		t.Fatalf("round trip with fee parts and mint: %v\n got %+v\nwant %+v", err, got, op)
	}
	// Written before chain families (version 5, with the fee's parts),
	// before them (version 4, with plain) and before
	// plain (version 3): read alike, version 3 not plain.
	var old query.Transaction
	v5 := string(appendTxDocV5(nil, op))
	if plain, err := parseTxDocInto(&old, "ETH", v5, evm.LegacyDetail); err != nil || plain || !reflect.DeepEqual(old, op) {
		t.Fatalf("version 5 document: plain %v, %v\n got %+v\nwant %+v", plain, err, old, op)
	}
	v4 := string(appendTxDocV4(nil, tx))
	if plain, err := parseTxDocInto(&old, "ETH", v4, evm.LegacyDetail); err != nil || plain || !reflect.DeepEqual(old, tx) {
		t.Fatalf("version 4 document: plain %v, %v\n got %+v\nwant %+v", plain, err, old, tx)
	}
	if plain, err := parseTxDocInto(&old, "ETH", "1:3"+v4[len("1:41:0"):], evm.LegacyDetail); err != nil || plain || !reflect.DeepEqual(old, tx) {
		t.Fatalf("version 3 document: plain %v, %v\n got %+v\nwant %+v", plain, err, old, tx)
	}
	v2 := "1:2" + "5:0xabc1:74:0xb70:1:36:failed4:0x014:0x022:105:210001:9" + "1:25:900005:500001:710:0xa9059cbb0:" +
		"2:-26:native0:4:0x024:0x031:18:internal3:ETH2:18"
	old, err = parseTxDoc("ETH", v2, evm.LegacyDetail)
	if err != nil {
		t.Fatal(err)
	}
	if d := evm.Detail(old); d.Input != "" || d.CumulativeGasUsed != 0 || d.Method != "0xa9059cbb" || d.Nonce != 9 || d.GasUsed != 50000 ||
		len(old.Transfers) != 1 || old.Transfers[0].Kind != query.KindInternal || old.Transfers[0].CallPath != "" {
		t.Fatalf("version 2 document read as %+v", old)
	}

	row := query.BalanceChange{Chain: "ETH", Address: "0x01", Contract: query.HoldingKey(query.AssetERC1155, "0x0c", "5"), Block: 9,
		Time: time.Unix(1_700_000_000, 0).UTC(), Amount: query.AmountOf(3), BalanceAfter: query.AmountOf(3), Checked: true, Reconciled: true, Internals: true,
		Causes: []query.Cause{
			{Kind: query.KindToken, TxHash: "0xabc", Amount: query.AmountOf(3), Ref: "log:7"},
			{Kind: query.KindWithdrawal, Amount: query.AmountOf(0), Ref: query.WithdrawalRef(1<<50, 0)},
			{Kind: query.KindFee, TxHash: "0xabd", Amount: query.AmountOf(-31), Ref: "fee", Fee: &query.FeeParts{Execution: query.AmountOf(21), L1: query.AmountOf(7), Operator: query.AmountOf(3)}},
			{Kind: query.KindMint, TxHash: "0xabd", Amount: query.AmountOf(50)},
			{Kind: query.KindReceived, TxHash: "ab", Amount: query.AmountOf(50), Ref: "ab:0"},
		}}
	gotRow, err := parseChangeDoc("ETH", "0x01", string(appendChangeDoc(nil, row)))
	if err != nil || !reflect.DeepEqual(gotRow, row) {
		t.Fatalf("statement row round trip: %v\n got %+v\nwant %+v", err, gotRow, row)
	}
	v2 = "1:21:910:17000000000:1:31:31:11:01:1" + "5:token5:0xabc1:30:0:" + "10:withdrawal0:1:01:51:7"
	if oldRow, err := parseChangeDoc("ETH", "0x01", v2); err != nil || len(oldRow.Causes) != 2 || oldRow.Causes[0].Ref != "" ||
		oldRow.Causes[1].Ref != "withdrawal:5:7" || oldRow.Causes[1].Fee != nil {
		t.Fatalf("version 2 row read as %+v, %v", oldRow, err)
	}
	// Version 3: a withdrawal's index and validator, then the fee's parts.
	v3 := "1:31:910:17000000000:1:31:31:11:01:1" + "10:withdrawal0:1:52:411:70:" + "3:fee5:0xabd3:-310:0:8:21,0,7,3"
	oldRow, err := parseChangeDoc("ETH", "0x01", v3)
	if err != nil || len(oldRow.Causes) != 2 || oldRow.Causes[0].Ref != "withdrawal:41:7" || oldRow.Causes[1].Ref != "" ||
		oldRow.Causes[1].Fee == nil || oldRow.Causes[1].Fee.L1 != query.AmountOf(7) {
		t.Fatalf("version 3 row read as %+v, %v", oldRow, err)
	}
	if i, v, ok := oldRow.Causes[0].Withdrawal(); !ok || i != 41 || v != 7 {
		t.Fatalf("version 3 row's withdrawal: %d, %d, %v", i, v, ok)
	}
	v1 := "1:11:910:17000000000:1:31:31:11:01:1" + "5:token5:0xabc1:3"
	oldRow, err = parseChangeDoc("ETH", "0x01", v1)
	if err != nil || len(oldRow.Causes) != 1 || oldRow.Causes[0].Ref != "" || oldRow.Causes[0].Amount != query.AmountOf(3) {
		t.Fatalf("version 1 row read as %+v, %v", oldRow, err)
	}
}

// TestTxDocPlain: a document says plain exactly when every string of its
// transaction is query.PlainText, and reads back to the transaction
// either way (seeded transactions, a string now and then holding a byte
// JSON escapes).
func TestTxDocPlain(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	odd := []string{`"`, `\`, "<", ">", "&", "\x00", "\x1f", "\x7f", "é", "\n"}
	str := func() string {
		s := fmt.Sprintf("0x%x", rng.Uint64())
		if rng.IntN(40) == 0 {
			i := rng.IntN(len(s) + 1)
			s = s[:i] + odd[rng.IntN(len(odd))] + s[i:]
		}
		return s
	}
	var seen [2]int
	for range 2000 {
		tx := query.Transaction{Chain: "ETH", Hash: str(), BlockNumber: rng.Uint64() >> 1, BlockHash: str(), Index: uint(rng.IntN(500)),
			Status: str(), From: str(), To: str(), Value: query.AmountOf(rng.Int64()), Parties: []string{str()},
			Detail: evm.TxDetail{Nonce: rng.Uint64(), Type: uint8(rng.IntN(4)), Method: str(), Input: str(), CumulativeGasUsed: rng.Uint64(), RevertReason: str()}.JSON()}
		// The detail is JSON, escaped already: plain says nothing of it.
		strs := []string{tx.Hash, tx.BlockHash, tx.Status, tx.From, tx.To, tx.Parties[0]}
		for j := range rng.IntN(4) {
			f := query.Transfer{Position: j - 1, Asset: str(), Contract: str(), From: str(), To: str(), Amount: query.AmountOf(-rng.Int64()),
				Kind: str(), Symbol: str(), Decimals: rng.IntN(30), Name: str(), TokenID: str(), CallType: str(), CallPath: str(), Error: str()}
			tx.Transfers = append(tx.Transfers, f)
			strs = append(strs, f.Asset, f.Contract, f.From, f.To, f.Kind, f.Symbol, f.Name, f.TokenID, f.CallType, f.CallPath, f.Error)
		}
		want := true
		for _, s := range strs {
			want = want && query.PlainText(s)
		}
		var got query.Transaction
		plain, err := parseTxDocInto(&got, "ETH", string(appendTxDoc(nil, tx, false)), evm.LegacyDetail)
		if err != nil || plain != want || !reflect.DeepEqual(got, tx) {
			t.Fatalf("seed %d: plain %v, want %v, %v\n got %+v\nwant %+v", seed, plain, want, err, got, tx)
		}
		seen[b2i(plain)]++
	}
	if seen[0] == 0 || seen[1] == 0 {
		t.Fatalf("seed %d: plain and not plain documents %v: both kinds must be tried", seed, seen)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fieldsTx is a transaction with every field set, an internal movement
// that failed and two token transfers.
func fieldsTx() query.Transaction {
	return query.Transaction{Chain: "ETH", Hash: "0xabc", BlockNumber: 7, BlockHash: "0xb7",
		BlockTime: time.Unix(1_700_000_000, 0).UTC(), Index: 3, Status: query.StatusFailed,
		From: "0x01", To: "0x02", Value: query.AmountOf(10), Fee: query.AmountOf(21000), Parties: []string{"0x0e"},
		Detail: evm.TxDetail{Nonce: 9, Type: 2, GasLimit: 90000, GasUsed: 50000, EffectiveGasPrice: query.AmountOf(7), Method: "0xa9059cbb",
			Created: "0x0e", Input: "0xa9059cbb0001", CumulativeGasUsed: 1 << 40, RevertReason: "transfer: 5:4 \"over\""}.JSON(),
		Transfers: []query.Transfer{
			{Position: -2, Asset: query.AssetNative, From: "0x02", To: "0x03", Amount: query.AmountOf(1), Kind: query.KindInternal,
				Symbol: "ETH", Decimals: 18, CallType: "CALL", CallPath: "0.2.1", Error: "execution reverted"},
			{Position: 4, Asset: query.AssetERC1155, Contract: "0x0c", From: "0x02", To: "0x01", Amount: query.AmountOf(3), Kind: query.KindToken,
				Symbol: "ITM", Name: "Items", TokenID: "115792089237316195423570985008687907853269984665640564039457584007913129639935"},
			{Position: 5, Asset: query.AssetERC721, Contract: "0x0d", From: "0x02", To: "0x01", Amount: query.AmountOf(1), Kind: query.KindToken, TokenID: "0"},
		}}
}

// appendTxDocV4 appends the document of t as the release before chain
// families wrote it (version 4), its EVM fields from t's detail.
func appendTxDocV4(b []byte, t query.Transaction) []byte { return appendLegacyTxDoc(b, t, false) }

// appendTxDocV5 is appendTxDocV4 of version 5, with the fee's parts and
// mint.
func appendTxDocV5(b []byte, t query.Transaction) []byte { return appendLegacyTxDoc(b, t, true) }

func appendLegacyTxDoc(b []byte, t query.Transaction, v5 bool) []byte {
	d := evm.Detail(t)
	bt := ""
	if !t.BlockTime.IsZero() {
		bt = strconv.FormatInt(t.BlockTime.UnixNano(), 10)
	}
	v := "4"
	if v5 {
		v = "5"
	}
	b = appendField(b, v)
	b = appendField(b, "1")
	flag, start := len(b)-1, len(b)
	for _, s := range []string{t.Hash, strconv.FormatUint(t.BlockNumber, 10), t.BlockHash, bt,
		strconv.FormatUint(uint64(t.Index), 10), t.Status, t.From, t.To, t.Value.String(), t.Fee.String(), strconv.FormatUint(d.Nonce, 10),
		strconv.FormatUint(uint64(d.Type), 10), strconv.FormatUint(d.GasLimit, 10), strconv.FormatUint(d.GasUsed, 10),
		d.EffectiveGasPrice.String(), d.Method, d.Created, d.Input, strconv.FormatUint(d.CumulativeGasUsed, 10), d.RevertReason} {
		b = appendField(b, s)
	}
	if v5 {
		for _, a := range []query.Amount{t.FeeParts.Execution, t.FeeParts.Blob, t.FeeParts.L1, t.FeeParts.Operator, t.Mint} {
			b = appendField(b, a.String())
		}
	}
	for _, f := range t.Transfers {
		for _, s := range []string{strconv.Itoa(f.Position), f.Asset, f.Contract, f.From, f.To, f.Amount.String(), f.Kind, f.Symbol, strconv.Itoa(f.Decimals),
			f.Name, f.TokenID, f.CallType, f.CallPath, f.Error} {
			b = appendField(b, s)
		}
	}
	if !query.PlainText(string(b[start:])) {
		b[flag] = '0'
	}
	return b
}

// TestLegacyDetailIsTheFamilys: a document written before chain families
// reads as the EVM family's detail document, byte for byte (seeded
// details).
func TestLegacyDetailIsTheFamilys(t *testing.T) {
	rng := testenv.Rand(t, 0)
	str := func() string { return fmt.Sprintf("0x%x<&>\"é", rng.Uint64()) }
	for range 500 {
		d := evm.TxDetail{Nonce: rng.Uint64(), Type: uint8(rng.IntN(256)), GasLimit: rng.Uint64(), GasUsed: rng.Uint64(),
			EffectiveGasPrice: query.AmountOf(rng.Int64()), Method: str(), Created: str(), Input: str(), CumulativeGasUsed: rng.Uint64(), RevertReason: str()}
		want := d.JSON()
		tx := query.Transaction{Hash: "0x01", Status: query.StatusSuccess, Detail: want}
		old, err := parseTxDoc("ETH", string(appendTxDocV4(nil, tx)), evm.LegacyDetail)
		if err != nil || string(old.Detail) != string(want) {
			t.Fatalf("legacy %s (%v)\nfamily %s", old.Detail, err, want)
		}
		if d.Created != "" && !slices.Contains(old.Parties, d.Created) {
			t.Fatalf("legacy document's created contract %q not among its parties %q", d.Created, old.Parties)
		}
	}
}
