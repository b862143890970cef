package api

import (
	"encoding/json"
	"reflect"
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
	"Error":           reflect.TypeFor[errorBody](),
	"Subscription":    reflect.TypeFor[subscriptionName](),
	"AddressPage":     reflect.TypeFor[addressPage](),
	"Balances":        reflect.TypeFor[balancesBody](),
	"Balance":         reflect.TypeFor[balance](),
	"TransactionPage": reflect.TypeFor[transactionPage](),
	"Transaction":     reflect.TypeFor[transaction](),
	"Transfer":        reflect.TypeFor[transfer](),
}

// OpenAPIPattern is the route of the description itself.
const OpenAPIPattern = "GET /v1/openapi.yaml"

// EncodeTransactionPage encodes pages whose every string is s, with n
// transactions of n transfers (and none), by hand and by json.Marshal.
func EncodeTransactionPage(s string, n int) (got, want string) {
	var p transactionPage
	for i := range n + 1 {
		t := transaction{Hash: s, BlockNumber: uint64(i) << 40, BlockHash: s, BlockTime: s, Index: uint(i), Status: s,
			From: s, To: s, Value: s, Fee: s, Nonce: ^uint64(0) - uint64(i), Transfers: []transfer{}}
		for j := range i {
			t.Transfers = append(t.Transfers, transfer{LogIndex: j - 1, Asset: s, Contract: s, From: s, To: s, Amount: s})
		}
		p.Transactions = append(p.Transactions, t)
	}
	p.NextPageToken = s
	b, _ := json.Marshal(&p)
	empty, _ := json.Marshal(transactionPage{})
	return string(appendTransactionPage(nil, &p)) + string(appendTransactionPage(nil, &transactionPage{})),
		string(b) + string(empty)
}
