package api

import (
	"encoding/json"
	"math/big"
	"reflect"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/rowjson"
	"github.com/wharfhq/wharf/query/utxo"
)

// Patterns lists the ServeMux patterns of the /v1 routes, for the
// openapi test.
func Patterns() []string {
	var out []string
	for _, r := range routes {
		out = append(out, r.pattern)
	}
	return out
}

// BodyTypes maps the openapi schema names to the Go types written as JSON.
var BodyTypes = map[string]reflect.Type{
	"Error":                 reflect.TypeFor[errorBody](),
	"Subscription":          reflect.TypeFor[subscriptionBody](),
	"AddressPage":           reflect.TypeFor[addressPage](),
	"Balances":              reflect.TypeFor[balancesBody](),
	"Balance":               reflect.TypeFor[balance](),
	"TransactionPage":       reflect.TypeFor[transactionPage](),
	"TransactionCore":       withDetail(reflect.TypeFor[transaction](), nil),
	"EvmTransactionDetail":  reflect.TypeFor[evm.TxDetail](),
	"UtxoTransactionDetail": reflect.TypeFor[utxo.Detail](),
	"UtxoInput":             reflect.TypeFor[utxo.DetailInput](),
	"UtxoOutput":            reflect.TypeFor[utxo.DetailOutput](),
	"UnreadableTransaction": reflect.TypeFor[struct {
		Unreadable string `json:"unreadable"`
	}](),
	"Transfer":                 reflect.TypeFor[transfer](),
	"BalanceChangePage":        reflect.TypeFor[balanceChangePage](),
	"BalanceChange":            reflect.TypeFor[balanceChange](),
	"Cause":                    reflect.TypeFor[cause](),
	"FeeParts":                 reflect.TypeFor[feeParts](),
	"EventPage":                reflect.TypeFor[eventPage](),
	"Event":                    reflect.TypeFor[eventBody](),
	"EventWallet":              reflect.TypeFor[eventWallet](),
	"EventBalanceChange":       reflect.TypeFor[events.ChangeData](),
	"EventSubscriptionState":   reflect.TypeFor[events.StateData](),
	"EventFinalized":           reflect.TypeFor[events.FinalizedData](),
	"Webhook":                  reflect.TypeFor[webhookBody](),
	"WebhookList":              reflect.TypeFor[webhookList](),
	"WebhookAttempt":           reflect.TypeFor[webhookAttempt](),
	"DeliveryPage":             reflect.TypeFor[deliveryPage](),
	"WalletRequest":            reflect.TypeFor[walletRequest](),
	"AddressRequest":           reflect.TypeFor[addressRequest](),
	"Wallet":                   reflect.TypeFor[walletBody](),
	"WalletAddresses":          reflect.TypeFor[walletAddressesBody](),
	"WalletBalanceChangePage":  reflect.TypeFor[walletChangesBody](),
	"WalletBalanceChange":      reflect.TypeFor[walletChange](),
	"WalletTransactionPage":    reflect.TypeFor[walletTransactionPage](),
	"WalletTransactionAmounts": reflect.TypeFor[walletTxBody](),
}

// CompositeSchemas are the schemas made of others (allOf, oneOf), which
// no one Go type writes: a transaction is TransactionCore and its
// family's detail.
var CompositeSchemas = []string{"Transaction", "WalletTransaction"}

// withDetail is a transaction type t as the API writes it for a family
// whose detail document is a detail (nil: none): t's fields and
// detail's.
func withDetail(t, detail reflect.Type) reflect.Type {
	var fields []reflect.StructField
	for f := range t.Fields() {
		if f.Tag.Get("json") != "-" {
			fields = append(fields, f)
		}
	}
	if detail != nil {
		for f := range detail.Fields() {
			fields = append(fields, f)
		}
	}
	return reflect.StructOf(fields)
}

// EncodeBalanceChangePage encodes a page of statement rows whose strings
// are s (amounts of every sign and length), by hand and by json.Marshal of
// toBalanceChange's output.
func EncodeBalanceChangePage(s string, n int) (got, want string) {
	var rows []query.BalanceChange
	for i := range n + 1 {
		a := amountN(i)
		c := query.BalanceChange{Block: uint64(i) << 40, Contract: s, Amount: a, BalanceAfter: a.Neg(), Checked: true, Reconciled: i%2 == 0,
			Difference: a, Internals: i%3 == 0}
		if i%4 == 1 {
			c.Difference = query.Amount{}
		}
		if i > 0 {
			c.Time = time.Unix(int64(i)*1_700_000_000, 0)
		}
		if i%2 == 1 {
			c.Contract = s + "/" + s // an ERC-1155 id's holding key
		}
		for j := range i {
			cs := query.Cause{Kind: s, TxHash: s, Amount: a}
			if j%2 == 1 {
				cs.Kind, cs.Ref = query.KindWithdrawal, query.WithdrawalRef(uint64(j)<<40, ^uint64(0)-uint64(j))
			}
			if j%3 == 2 { // a rollup's fee
				cs.Fee = &query.FeeParts{Execution: a, Blob: amountN(j), L1: amountN(j + 1), Operator: amountN(j + 2)}
			}
			c.Causes = append(c.Causes, cs)
		}
		rows = append(rows, c)
	}
	labels := map[string]query.Label{s: {Asset: s, Symbol: s, Decimals: len(s)}}
	p := balanceChangePage{BalanceChanges: []balanceChange{}, NextPageToken: s}
	for _, c := range rows {
		p.BalanceChanges = append(p.BalanceChanges, toBalanceChange(c, query.LabelOf(labels, c.Contract), testTip.fin))
	}
	b, _ := json.Marshal(p)
	return string(appendBalanceChangePage(nil, rows, labels, s, testTip.fin)), string(b)
}

// testTip is the tip the rows of the test pages are told against: rows
// of each finality.
var testTip = tip{head: 3 << 40, fin: query.Finality{Safe: 2 << 40, Finalized: 1 << 40, Source: query.FinalityByNode}}

// amountN is an amount for the i-th row of a test page: zero, then
// growing by many digits a row, alternating in sign.
func amountN(i int) query.Amount {
	x := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i*7)), nil)
	if i%2 == 1 {
		x.Neg(x)
	}
	if i == 0 {
		x.SetInt64(0)
	}
	return query.AmountFromBig(x)
}

// OpenAPIPattern is the route of the description itself.
const OpenAPIPattern = "GET /v1/openapi.yaml"

// EncodeTransactionPage encodes pages whose every string is s, with n+1
// transactions of 0 to n transfers, by hand and by json.Marshal of
// toTransaction's output, with all transfers and with those touching s.
func EncodeTransactionPage(s string, n int) (got, want string) {
	var txs []query.Transaction
	for i := range n + 1 {
		a := amountN(i)
		t := query.Transaction{Hash: s, BlockNumber: uint64(i) << 40, BlockHash: s, Index: uint(i), Status: s,
			From: s, To: s, Value: a, Fee: a}
		if i%4 != 3 { // and one without a detail
			d, _ := json.Marshal(map[string]any{"nonce": ^uint64(0) - uint64(i), "type": uint8(i), "gas_limit": uint64(i) * 21000,
				"method": s, "input": s, "revert_reason": s, "effective_gas_price": a})
			t.Detail = d
		}
		if i > 0 {
			t.BlockTime = time.Unix(int64(i)*1_700_000_000, 0)
		}
		if i%3 == 2 {
			t.Unreadable = s // a row whose document cannot be read says why
		}
		if i%2 == 1 { // a rollup's fee, a deposit's mint
			t.FeeParts = query.FeeParts{Execution: a, L1: amountN(i + 1), Operator: amountN(i + 2)}
			t.Mint = amountN(i + 3)
		}
		for j := range i {
			from := s
			if j%2 == 1 {
				from = "0xother"
			}
			t.Transfers = append(t.Transfers, query.Transfer{Position: j - 1, Asset: s, Contract: s, From: from, To: "0xto", Amount: a,
				Kind: s, Symbol: s, Decimals: j, Name: s, TokenID: s, CallType: s, CallPath: s, Error: s})
		}
		txs = append(txs, t)
	}
	for _, only := range []string{"", s, "0xother", "0xnobody"} {
		p := transactionPage{Transactions: []transaction{}, NextPageToken: s}
		for _, t := range txs {
			p.Transactions = append(p.Transactions, toTransaction(t, only, testTip))
		}
		b, _ := json.Marshal(p)
		got += string(appendTransactionPage(nil, txs, only, s, testTip))
		want += string(b)
	}
	return got, want
}

// OpenAPIYAML is the served description, for the response validation of
// the tests.
var OpenAPIYAML = openapiYAML

// QuoteJSON is rowjson.AppendString of s, as the API quotes it.
func QuoteJSON(s string) string { return string(rowjson.AppendString(nil, s)) }

// ExportRecord is the CSV record the export writes of c.
func ExportRecord(chain, address string, c query.BalanceChange, l query.Label) string {
	return string(appendExportRecord(nil, chain, address, &c, l))
}
